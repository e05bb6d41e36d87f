"""A voice call is a run (calls.service.start_call_run): written when the call connects, its turns, tool calls and
spend on it, ended with the call; tools that need their run work inside a call; the run is listed and shown where
runs are, marked a voice call, to whom may read it; a text model that is gone is a readable refusal."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from agenticos import services as kernel_services
from agenticos.models import AuditEvent
from agents.models import Conversation, Message, ModelProfile, Run, RunStatus, ToolCall
from agents.runner import finish
from agents.runs import request_stop
from calls import tools as call_tools
from capabilities import registry
from capabilities.image_generation import CAPABILITY as IMAGES
from governance.models import SpendEntry
from media.models import GeneratedMedia
from tests import factories
from tests.api.conftest import actor_of
from tests.calls.test_call_socket import CHUNK, TIMEOUT, dial, frames_until, realtime_profile, refused
from tests.fakes.openai_responses import fake_responses  # noqa: F401  (fixture)
from tests.fakes.realtime_server import Reply, realtime_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)
IMAGE_KEY = "sk-image-call-key-00000000000000"


@pytest.fixture
def fake(realtime_server, settings):  # noqa: F811
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    realtime_server.reset()
    return realtime_server


async def voice_agent(org, owner, fake, **spec):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, name="Concierge", **spec)
    await database_sync_to_async(realtime_profile)(org, fake)
    return agent


def call_run(run_id) -> Run:
    return Run.objects.select_related("version").get(pk=run_id)


async def a_call_that_talked(owner, org, agent, fake) -> tuple[str, str]:
    """Dial, say one thing, hear one answer, hang up: (run id, conversation id)."""
    fake.heard.append("What time do you open?")
    fake.replies.append(Reply.say("We open at nine."))
    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    await frames_until(communicator, "usage")
    await communicator.send_json_to({"type": "hang_up"})
    await frames_until(communicator, "call_ended")
    await communicator.disconnect()
    return started["data"]["run_id"], started["data"]["conversation_id"]


async def test_a_call_is_a_run_from_connect_to_hang_up_with_its_turns_and_its_spend(org, owner, fake):
    agent = await voice_agent(org, owner, fake)

    run_id, conversation_id = await a_call_that_talked(owner, org, agent, fake)

    run = await database_sync_to_async(call_run)(run_id)
    assert run.is_voice_call and run.get_surface_display() == "Web chat (voice call)"
    assert (run.status, run.user_id, run.agent_id, str(run.conversation_id)) == (
        RunStatus.COMPLETED, owner.pk, agent.pk, conversation_id)
    assert run.started_at is not None and run.finished_at is not None and run.output == "We open at nine."
    turns = await database_sync_to_async(lambda: list(
        Message.objects.filter(conversation_id=conversation_id).values_list("run_id", "content")))()
    assert [content for _, content in turns] == ["What time do you open?", "We open at nine."]
    assert {str(rid) for rid, _ in turns} == {run_id}
    # Its spend is on its ledger: the entry names the run, and the run's totals are the realtime model's.
    entry = await database_sync_to_async(SpendEntry.objects.get)(organization=org, kind="voice_call")
    assert str(entry.run_id) == run_id and entry.cost_usd > 0
    assert (run.cost_usd, run.input_tokens, run.requests) == (entry.cost_usd, entry.input_tokens, 1)


async def test_a_call_the_provider_drops_fails_and_keeps_its_transcript_and_spend(org, owner, fake):
    agent = await voice_agent(org, owner, fake)
    fake.heard.extend(["Hi.", "And tomorrow?"])
    fake.replies.extend([Reply.say("Hello."), Reply.fail("server_error")])

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    await frames_until(communicator, "usage")
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    ended = (await frames_until(communicator, "call_ended"))[-1]
    await communicator.disconnect()

    assert ended["data"]["reason"] == "provider_error"
    run = await database_sync_to_async(call_run)(started["data"]["run_id"])
    assert run.status == RunStatus.FAILED and run.error["type"] == "ProviderError"
    assert "server_error" in run.error["message"]
    kept = await database_sync_to_async(lambda: list(Message.objects.filter(run=run).values_list("content", flat=True)))()
    assert kept[:2] == ["Hi.", "Hello."]
    spent = await database_sync_to_async(lambda: sum(e.cost_usd for e in SpendEntry.objects.filter(run=run)))()
    assert run.cost_usd == spent > 0


async def test_a_page_that_closes_without_hanging_up_cancels_the_calls_run(org, owner, fake):
    agent = await voice_agent(org, owner, fake)
    fake.heard.append("Hi.")
    fake.replies.append(Reply.say("Hello."))

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    await frames_until(communicator, "usage")
    await communicator.disconnect()

    run = await database_sync_to_async(call_run)(started["data"]["run_id"])
    assert run.status == RunStatus.CANCELLED and run.error["type"] == "CallerLeft"
    assert await database_sync_to_async(Message.objects.filter(run=run).count)() == 2


async def test_stopping_the_calls_run_ends_the_call(org, owner, fake, settings):
    settings.RUN_HEARTBEAT_SECONDS = 1
    agent = await voice_agent(org, owner, fake)
    fake.default_heard = None

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    run = await database_sync_to_async(call_run)(started["data"]["run_id"])
    assert run.status == RunStatus.RUNNING and run.heartbeat_at is not None
    await database_sync_to_async(request_stop)(run)
    ended = (await frames_until(communicator, "call_ended"))[-1]
    await communicator.disconnect()

    assert ended["data"]["reason"] == "stopped"
    run = await database_sync_to_async(call_run)(run.pk)
    assert run.status == RunStatus.CANCELLED and run.error["type"] == "Cancelled"


def test_a_stale_calls_run_is_ended_by_the_sweep_never_queued_for_a_worker(org, owner):
    agent = factories.published_agent(org, owner)
    old = timezone.now() - timedelta(hours=1)
    run = Run.objects.create(organization=org, agent=agent, version=agent.versions.get(), surface="web", user=owner,
                             status=RunStatus.RUNNING, started_at=old, heartbeat_at=old,
                             options={"voice_call": True})

    finish.sweep_stale_runs()

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["type"] == "CallLost" and run.finished_at is not None


@pytest.fixture
def images(settings, tmp_path, fake_responses):  # noqa: F811
    settings.MEDIA_ROOT = str(tmp_path / "media")
    added = registry.find(IMAGES.id) is None
    if added:
        registry.register(IMAGES)
    yield fake_responses
    if added:
        registry.unregister(IMAGES.id)


async def test_a_tool_that_needs_its_run_works_inside_a_call_and_is_a_tool_call_of_it(org, owner, fake, images):
    secret = await database_sync_to_async(factories.secret)(org, value=IMAGE_KEY)
    agent = await voice_agent(org, owner, fake, capabilities=[{"id": "image_generation", "secret_id": str(secret.pk)}])
    fake.replies.extend([Reply.call("generate_image", prompt="a fox in the snow"), Reply.say("Here is your fox.")])

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "turn", count=2)
    await communicator.send_json_to({"type": "hang_up"})
    await frames_until(communicator, "call_ended")
    await communicator.disconnect()

    run_id = started["data"]["run_id"]
    assert "generate_image" in started["data"]["tools"]
    done = next(f["data"] for f in frames if f["type"] == "tool_done")
    assert done["status"] == "done"
    media = await database_sync_to_async(GeneratedMedia.objects.get)()
    assert (str(media.run_id), str(media.conversation_id)) == (run_id, started["data"]["conversation_id"])
    call = await database_sync_to_async(ToolCall.objects.get)(run_id=run_id)
    assert (call.tool_name, call.capability_id, call.status) == ("generate_image", "image_generation", "ok")
    assert call.args == {"prompt": "a fox in the snow"} and call.result["url"].endswith(media.filename)
    assert call.finished_at is not None
    image_spend = await database_sync_to_async(SpendEntry.objects.get)(kind="image_generation")
    assert str(image_spend.run_id) == run_id
    run = await database_sync_to_async(call_run)(run_id)
    voice = await database_sync_to_async(lambda: sum(e.cost_usd for e in SpendEntry.objects.filter(
        run=run, kind="voice_call")))()
    assert run.cost_usd == voice + image_spend.cost_usd
    assert images.requests[0].bearer == IMAGE_KEY
    # The secrets the call opened — the realtime key to connect, the image key in the tool — are the run's uses,
    # its person the actor, as a text run's are.
    voice_secret = await database_sync_to_async(
        lambda: ModelProfile.objects.get(organization=org, kind=ModelProfile.Kind.REALTIME).secret_id)()
    uses = await database_sync_to_async(lambda: list(AuditEvent.objects.filter(organization=org,
                                                                                action="secret.used")))()
    assert {(e.target_id, e.actor_id, e.details.get("run")) for e in uses} == {
        (str(voice_secret), owner.pk, run_id), (str(secret.pk), owner.pk, run_id)}
    assert IMAGE_KEY not in json.dumps(frames) + json.dumps(fake.received)


async def test_a_call_whose_text_model_is_gone_is_refused_readably_before_the_provider(org, owner, fake):
    text = await database_sync_to_async(factories.model_profile)(org, "openai", "gpt-4o", label="Text",
                                                                  api_key="sk-text-0000")
    agent = await voice_agent(org, owner, fake, model_profile_id=str(text.pk), capabilities=[{"id": "charts"}])
    await database_sync_to_async(ModelProfile.objects.filter(pk=text.pk).delete)()

    error = await refused(await dial(owner, org, agent.pk))

    assert error["data"]["code"] == "no_text_model"
    assert "no longer exists" in error["data"]["message"]
    assert fake.connections == 0
    assert not await database_sync_to_async(Run.objects.exists)()
    assert not await database_sync_to_async(Conversation.objects.exists)()


async def test_a_call_the_provider_refuses_has_no_run_and_its_keys_use_is_still_audited(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    profile = await database_sync_to_async(factories.model_profile)(
        org, "openai", "gpt-realtime", api_key="sk-wrong-key-0000", base_url=fake.base_url,
        kind=ModelProfile.Kind.REALTIME)

    error = await refused(await dial(owner, org, agent.pk))

    assert error["data"]["code"] == "provider_unavailable"
    assert not await database_sync_to_async(Run.objects.exists)()

    def used() -> list[AuditEvent]:
        return list(AuditEvent.objects.filter(organization=org, action="secret.used"))

    for _ in range(200):  # written from a worker thread of the loop: waited for, with a bound
        if await database_sync_to_async(used)():
            break
        await asyncio.sleep(0.1)
    [use] = await database_sync_to_async(used)()
    assert use.target_id == str(profile.secret_id) and use.actor_label == "system" and "run" not in use.details


def test_the_text_profile_of_another_organization_or_kind_is_the_same_refusal(org, owner, outsider_org):
    from agenticos.errors import Invalid
    from agents.spec import AgentSpec

    theirs = factories.model_profile(outsider_org, "openai", "gpt-4o", label="Theirs", api_key="sk-theirs-0000")
    voice = ModelProfile.objects.create(organization=org, label="Voice", provider="openai", model="gpt-realtime",
                                        kind=ModelProfile.Kind.REALTIME)
    for profile_id in (str(theirs.pk), str(voice.pk), "not-a-uuid"):
        spec = AgentSpec.model_construct(model_profile_id=profile_id)
        with pytest.raises(Invalid) as caught:
            call_tools.text_profile(actor_of(owner, org), spec)
        assert caught.value.code == "no_text_model"


# ---- where runs are: the runs API, Activity, the run's page


@pytest.fixture
def a_call(org, owner, fake):
    from asgiref.sync import async_to_sync

    agent = factories.published_agent(org, owner, name="Concierge")
    realtime_profile(org, fake)
    run_id, _ = async_to_sync(a_call_that_talked)(owner, org, agent, fake)
    return Run.objects.get(pk=run_id)


def _bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_the_runs_api_lists_and_shows_the_call_marked_a_voice_call(org, owner, a_call, api_as):
    listed = api_as(owner, org).get("/api/v1/runs")
    detail = api_as(owner, org).get(f"/api/v1/runs/{a_call.pk}")

    assert listed.status_code == 200 and detail.status_code == 200
    [row] = [r for r in listed.json()["results"] if r["run_id"] == str(a_call.pk)]
    assert row["voice_call"] is True and row["surface"] == "web" and row["status"] == "completed"
    assert Decimal(row["cost_usd"]) == a_call.cost_usd > 0
    assert detail.json()["voice_call"] is True and detail.json()["output"] == "We open at nine."


def test_an_outsider_and_roles_without_runs_view_do_not_see_the_call_an_admin_does(
        org, owner, admin_user, builder, member, viewer, outsider, outsider_org, a_call, api_as):
    assert api_as(outsider, outsider_org).get(f"/api/v1/runs/{a_call.pk}").status_code == 404
    assert not [r for r in api_as(outsider, outsider_org).get("/api/v1/runs").json()["results"]]
    assert api_as(outsider, org).get(f"/api/v1/runs/{a_call.pk}").status_code == 404
    for weaker in (builder, member, viewer):
        assert api_as(weaker, org).get(f"/api/v1/runs/{a_call.pk}").status_code == 404
        assert not api_as(weaker, org).get("/api/v1/runs").json()["results"]
        # Stopping needs agents:run (a viewer has not: 403 before any lookup); past it, a run not theirs is not found.
        stop = api_as(weaker, org).post(f"/api/v1/runs/{a_call.pk}/stop").status_code
        assert stop == (403 if weaker is viewer else 404)
    assert not Run.objects.get(pk=a_call.pk).cancel_requested
    seen = api_as(admin_user, org).get(f"/api/v1/runs/{a_call.pk}")
    assert seen.status_code == 200 and seen.json()["voice_call"] is True


def test_api_key_scopes_read_the_call_and_only_a_run_key_may_stop_it(org, owner, a_call):
    _row, read = kernel_services.create_api_key(actor=actor_of(owner, org), name="ci", scope="read")
    assert _bearer(read).get(f"/api/v1/runs/{a_call.pk}").json()["voice_call"] is True
    refused_stop = _bearer(read).post(f"/api/v1/runs/{a_call.pk}/stop")
    assert refused_stop.status_code == 403 and refused_stop.json()["error"]["code"] == "insufficient_scope"
    assert not Run.objects.get(pk=a_call.pk).cancel_requested
    _row, run_key = kernel_services.create_api_key(actor=actor_of(owner, org), name="ops", scope="run")
    assert _bearer(run_key).post(f"/api/v1/runs/{a_call.pk}/stop").status_code == 200


def test_activity_and_the_runs_page_show_the_call_with_its_transcript(org, owner, member, outsider, outsider_org,
                                                                      a_call):
    from tests.runner.test_chat_socket import session_cookie

    def browser(user, organization) -> Client:
        client = Client()
        name, _, value = session_cookie(user, organization).partition("=")
        client.cookies[name] = value
        return client

    activity = browser(owner, org).get("/activity/")
    page = browser(owner, org).get(f"/activity/runs/{a_call.pk}/")

    assert activity.status_code == 200 and "Web chat (voice call)" in activity.content.decode()
    body = page.content.decode()
    assert page.status_code == 200 and "Web chat (voice call)" in body
    assert "What time do you open?" in body and "We open at nine." in body
    assert browser(member, org).get(f"/activity/runs/{a_call.pk}/").status_code == 404
    assert browser(outsider, outsider_org).get(f"/activity/runs/{a_call.pk}/").status_code == 404
    assert "voice call" not in browser(member, org).get("/activity/").content.decode()
