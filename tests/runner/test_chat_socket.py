"""The web chat socket through the full ASGI app, with a real Celery worker executing the run."""

from __future__ import annotations

import asyncio
import json
from importlib import import_module

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as dj_settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from agenticos import metrics
from agenticos.tenancy import SESSION_KEY as ORG_SESSION_KEY
from agents.models import Message, Run
from agents.runner.frames import ending_frames
from config.asgi import application
from embeds.consumers import REFUSED_CODE
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 20


def session_cookie(user, org) -> str:
    engine = import_module(dj_settings.SESSION_ENGINE)
    session = engine.SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = dj_settings.AUTHENTICATION_BACKENDS[0]  # the password backend, as a sign-in stores it
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[ORG_SESSION_KEY] = str(org.pk)
    session.save()
    return f"{dj_settings.SESSION_COOKIE_NAME}={session.session_key}"


async def connect(user, org):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"cookie", cookie.encode())])
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected


async def receive_until(communicator, last_types=("complete", "error")) -> list[dict]:
    frames = []
    while True:
        payload = json.loads(await communicator.receive_from(timeout=TIMEOUT))
        frames.append(payload)
        if payload["type"] in last_types:
            return frames


def finished_executions(surface: str) -> float:
    """Executions of `surface` runs that ended, as the worker counts them (one per ending it writes)."""
    return sum(sample.value for metric in metrics.RUNS_FINISHED.collect() for sample in metric.samples
               if sample.name.endswith("_total") and sample.labels.get("surface") == surface)


async def until_the_worker_is_idle(timeout: float = TIMEOUT) -> None:
    """The worker (threads of this process) holds no task and its runs loop no run: every execution it took
    has returned, with all it writes and sends."""
    from celery.worker import state as worker_state

    from agents.runner.loop import started_loop

    def busy() -> bool:
        loop = started_loop()
        return bool(worker_state.active_requests) or bool(loop and loop.admitted)

    deadline = asyncio.get_running_loop().time() + timeout
    while busy():
        assert asyncio.get_running_loop().time() < deadline, "the worker is still busy"
        await asyncio.sleep(0.05)


@pytest.fixture
def chart_model(scripted_model):
    async def stream(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            for word in ["Your", " chart", " is", " ready."]:
                yield word
            return
        yield "Drawing."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="w1")}

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


async def test_a_chat_turn_streams_frames_in_order_through_celery_and_reopens_identically(
    org, owner, chart_model, celery_worker
):
    agent, _ = await database_sync_to_async(publish)(org, owner, capabilities=[{"id": "charts"}])
    finished_before = finished_executions("web")
    communicator, connected = await connect(owner, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "chart please"})

    frames = await receive_until(communicator)

    types = [f["type"] for f in frames]
    assert types[:3] == ["conversation_created", "run_started", "message_saved"]
    assert types[-1] == "complete"
    assert types.index("model_request_start") < types.index("tool_call") < types.index("tool_result")
    assert frames[-1]["data"]["usage"]["input_tokens"] > 0  # members see what it cost
    assert "cost_usd" in frames[-1]["data"]["usage"]
    streamed = []
    for f in frames:
        if f["type"] == "text_delta":
            if streamed and streamed[-1]["type"] == "text":
                streamed[-1]["text"] += f["data"]["content"]
            else:
                streamed.append({"type": "text", "text": f["data"]["content"]})
        elif f["type"] == "tool_call":
            streamed.append({"type": "tool", "tool_call_id": f["data"]["tool_call_id"]})
    run_id = frames[1]["data"]["run_id"]
    answer = await database_sync_to_async(lambda: Message.objects.get(run_id=run_id, role="assistant"))()
    assert answer.parts == streamed
    # What the server recorded once the run's task has returned (all it would write or send is done): the
    # one message started one run, whose execution ended once — one ending counted, one answer in the
    # conversation — and the ending rebuilt from its row is the one the member saw.
    await until_the_worker_is_idle()
    run = await database_sync_to_async(Run.objects.get)()  # the only run
    assert str(run.pk) == run_id and run.status == "completed"
    assert finished_executions("web") == finished_before + 1
    thread = await database_sync_to_async(
        lambda: list(Message.objects.filter(conversation_id=run.conversation_id).order_by("id")
                     .values_list("role", "run_id")))()
    assert thread == [("user", run.pk), ("assistant", run.pk)]
    recorded = await database_sync_to_async(ending_frames)(run_id)
    assert recorded[-1]["data"] == {k: v for k, v in frames[-1]["data"].items() if k != "run_id"}
    await communicator.disconnect()


async def test_an_unauthenticated_socket_is_refused():
    communicator = WebsocketCommunicator(application, "/ws/chat/")
    connected, code = await communicator.connect(timeout=TIMEOUT)
    assert not connected and code == 4003
    await communicator.disconnect()


async def test_an_outsider_cannot_run_another_organizations_agent(org, owner, outsider, outsider_org):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, connected = await connect(outsider, outsider_org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hi"})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == "not_found"
    assert await database_sync_to_async(Run.objects.count)() == 0
    await communicator.disconnect()


async def test_a_viewer_gets_an_error_frame_and_nothing_runs(org, owner, viewer):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(viewer, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hi"})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == "forbidden"
    assert await database_sync_to_async(Run.objects.count)() == 0
    await communicator.disconnect()


async def test_a_too_long_message_gets_an_error_frame(org, owner, settings):
    settings.MAX_MESSAGE_CHARS = 100
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "x" * 101})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and "too long" in frame["data"]["message"]
    await communicator.send_json_to({"type": "bogus"})
    assert (await communicator.receive_json_from(timeout=TIMEOUT))["data"]["code"] == "bad_frame"
    await communicator.disconnect()


async def test_stop_cancels_the_running_turn(org, owner, scripted_model, celery_worker):
    async def stream(messages, info):
        yield "Thinking"
        for _ in range(200):
            await asyncio.sleep(0.05)
            yield "."

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "go"})
    while True:
        frame = await communicator.receive_json_from(timeout=TIMEOUT)
        if frame["type"] == "text_delta":
            break
    await communicator.send_json_to({"type": "stop"})
    frames = await receive_until(communicator)
    assert frames[-1]["type"] == "error" and frames[-1]["data"]["code"] == "cancelled"
    run = await database_sync_to_async(Run.objects.get)()
    assert run.status == "cancelled"
    kept = await database_sync_to_async(lambda: Message.objects.get(run=run, role="assistant").content)()
    assert kept.startswith("Thinking")
    await communicator.disconnect()


# ------------------------------------------------------------------ the page's origin (cross-site hijacking)

FRONTEND = "https://agents.example.com"


async def connect_from(user, org, origin: str | None, host: str | None = None, scheme: str = "wss"):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    headers = [(b"cookie", cookie.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    communicator.scope["scheme"] = scheme  # the communicator builds no scheme; the app has not read the scope yet
    connected, code = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected, code


@pytest.fixture
def deployment(settings):
    settings.FRONTEND_URL = FRONTEND
    settings.ALLOWED_HOSTS = ["agents.example.com", "chat.internal"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.partner-console.example"]
    return settings


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "https://agents.example.com.evil.example",  # the deployment's host as a prefix of another's
        "http://agents.example.com",  # the right host over another scheme (the socket is wss)
        "https://agents.example.com:8443",  # the right host on another port
        "null",  # a sandboxed frame or a file:// page
        "https://partner-console.example",  # the wildcard names subdomains, not the bare domain
    ],
)
async def test_a_page_on_a_foreign_origin_cannot_open_the_members_chat(org, owner, deployment, origin):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, connected, code = await connect_from(owner, org, origin, host="agents.example.com")
    assert not connected and code == 4003
    await communicator.disconnect()
    # Nothing behind the refusal acted: the socket never reached the consumer, so no run exists.
    assert await database_sync_to_async(Run.objects.count)() == 0


@pytest.mark.parametrize(
    ("origin", "host"),
    [
        (FRONTEND, None),  # FRONTEND_URL, however the socket's Host reads
        ("https://AGENTS.example.com:443/", None),  # the same origin in another spelling
        ("https://app.partner-console.example", None),  # CSRF_TRUSTED_ORIGINS, wildcard
        ("https://chat.internal:8443", "chat.internal:8443"),  # the host it was opened on, in ALLOWED_HOSTS
        ("https://chat.internal", "chat.internal"),
    ],
)
async def test_a_page_on_the_deployments_own_origin_chats(org, owner, deployment, origin, host):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, connected, _ = await connect_from(owner, org, origin, host=host)
    assert connected
    await communicator.send_json_to({"type": "bogus"})
    assert (await communicator.receive_json_from(timeout=TIMEOUT))["data"]["code"] == "bad_frame"
    await communicator.disconnect()


async def test_the_host_a_socket_names_counts_only_when_allowed_hosts_lists_it(org, owner, deployment):
    # A page and a Host header that agree prove nothing by themselves (DNS rebinding gives an attacker both).
    communicator, connected, code = await connect_from(owner, org, "https://rebound.example", host="rebound.example")
    assert not connected and code == 4003
    await communicator.disconnect()


async def test_behind_a_tls_proxy_the_forwarded_scheme_is_the_pages(org, owner, deployment):
    deployment.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    cookie = await database_sync_to_async(session_cookie)(owner, org)
    for proto, admitted in ((b"https", True), (b"http", False)):
        communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[
            (b"cookie", cookie.encode()), (b"origin", b"https://chat.internal"), (b"host", b"chat.internal"),
            (b"x-forwarded-proto", proto),
        ])
        connected, _ = await communicator.connect(timeout=TIMEOUT)  # plain ws between the proxy and daphne
        assert connected is admitted
        await communicator.disconnect()


async def test_a_client_that_sends_no_origin_is_not_a_browser_and_is_admitted_on_its_cookie(org, owner, deployment):
    # Browsers always send Origin on a WebSocket handshake; a script that holds the cookie itself is no
    # cross-site risk (README, "Web chat socket").
    communicator, connected, _ = await connect_from(owner, org, None)
    assert connected
    await communicator.disconnect()


async def test_the_embed_socket_keeps_its_own_origin_rules(org, owner, deployment):
    from tests import factories

    agent, _ = await database_sync_to_async(publish)(org, owner)
    embed = await database_sync_to_async(factories.embed)(
        agent, kind="socket", allowed_origins=["https://shop.example"]
    )
    # A partner's page is a foreign origin to the deployment, yet its embed admits it...
    partner = WebsocketCommunicator(
        application, f"/api/v1/embed/{embed.public_key}/ws", headers=[(b"origin", b"https://shop.example")]
    )
    connected, _ = await partner.connect(timeout=TIMEOUT)
    assert connected and (await partner.receive_json_from(timeout=TIMEOUT))["type"] == "ready"
    await partner.disconnect()
    # ...and the embed refuses (accept, then close with its own code) an origin it does not list.
    stranger = WebsocketCommunicator(
        application, f"/api/v1/embed/{embed.public_key}/ws", headers=[(b"origin", FRONTEND.encode())]
    )
    await stranger.connect(timeout=TIMEOUT)
    closed = await stranger.receive_output(timeout=TIMEOUT)
    assert closed["type"] == "websocket.close" and closed["code"] == REFUSED_CODE
    await stranger.disconnect()


# ------------------------------------------------------------------ frames naming someone else's run


def someone_elses_run(org, user, agent, *, status):
    from agents.models import Environment
    from agents.runs import start_run
    from governance.models import Question

    version = Environment.objects.get(agent=agent, name="production").version
    run = start_run(agent=agent, version=version, surface="web", prompt="mine", user=user, acting_role="member",
                    enqueue=False)
    Run.objects.filter(pk=run.pk).update(status=status)
    if status == "awaiting_answer":
        Question.objects.create(organization=org, run=run, asked_user=user, tool_call_id="q1",
                                questions=[{"header": "Drink", "question": "Tea or coffee?",
                                            "options": [{"label": "Tea"}, {"label": "Coffee"}]}])
    return run


def run_state(run_id):
    from agents.runs import stop_signalled
    from governance.models import Question

    run = Run.objects.get(pk=run_id)
    questions = list(Question.objects.filter(run=run).values_list("status", "answers"))
    return run.status, run.cancel_requested, stop_signalled(run.pk), questions


@pytest.fixture
def colleague(org):
    from tests import factories

    return factories.member(org, "member")


@pytest.mark.parametrize("who", ["colleague", "outsider"])
async def test_a_stop_naming_someone_elses_run_leaves_that_run_alone(
    org, owner, member, colleague, outsider, outsider_org, who
):
    attacker, attacker_org = {"colleague": (colleague, org), "outsider": (outsider, outsider_org)}[who]
    agent, _ = await database_sync_to_async(publish)(org, owner)
    victims = await database_sync_to_async(someone_elses_run)(org, member, agent, status="running")
    before = await database_sync_to_async(run_state)(victims.pk)
    communicator, connected = await connect(attacker, attacker_org)
    assert connected
    await communicator.send_json_to({"type": "stop", "run_id": str(victims.pk)})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == "not_found"
    await communicator.disconnect()
    assert before == ("running", False, False, [])
    assert await database_sync_to_async(run_state)(victims.pk) == before


@pytest.mark.parametrize(("who", "code"), [("colleague", "not_found"), ("outsider", "not_found"),
                                           ("admin_user", "forbidden")])
async def test_an_answer_naming_someone_elses_question_leaves_it_open(
    org, owner, member, colleague, admin_user, outsider, outsider_org, who, code
):
    attacker, attacker_org = {
        "colleague": (colleague, org), "outsider": (outsider, outsider_org), "admin_user": (admin_user, org)
    }[who]
    agent, _ = await database_sync_to_async(publish)(org, owner)
    victims = await database_sync_to_async(someone_elses_run)(org, member, agent, status="awaiting_answer")
    communicator, connected = await connect(attacker, attacker_org)
    assert connected
    await communicator.send_json_to(
        {"type": "ask_user_response", "run_id": str(victims.pk), "answers": [{"answer": "Coffee"}]}
    )
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == code
    await communicator.disconnect()
    # Still parked on the member's question, unanswered, never resumed nor stopped.
    assert await database_sync_to_async(run_state)(victims.pk) == ("awaiting_answer", False, False,
                                                                    [("pending", None)])
