"""Delegating to a remote agent over A2A: the spec's `external_agents`, called with the same `task` tool.

The outside world is two local servers speaking the real protocols: the lead's model is reached through the real
OpenAI client against tests/fakes/openai_server.py (or scripted with a FunctionModel where the lead must read a
tool result to decide its next call), and the remote agent is the `a2a-sdk` server of
test_remote_agents_a2a_fake.py, reached through the project's A2A client (capabilities/remote_agents/client.py).
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Message, Run, RunStatus
from agents.runs import start_run
from capabilities.remote_agents import services as remote_services
from capabilities.remote_agents.models import RemoteAgent
from governance.models import SpendEntry
from tests import factories
from tests.capabilities.test_remote_agents_a2a_fake import FakeA2AAgent, Said, fake_a2a  # noqa: F401
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

MODEL_KEY = "sk-live-lead-model-key-4411"
A2A_KEY = "a2a-remote-bearer-key-9e21c"


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]  # the fake has no TLS


def _register(org, user, fake: FakeA2AAgent, *, key: str | None = None) -> RemoteAgent:
    secret = factories.secret(org, value=key) if key else None
    return remote_services.create_remote_agent(actor=actor_of(user, org), card_url=fake.card_url,
                                               secret_id=str(secret.pk) if secret else None)


def _lead(org, owner, profile, row: RemoteAgent, *, config: dict[str, Any] | None = None,
          budget: str | None = None):
    from agents import services

    spec: dict[str, Any] = {
        "name": "Lead", "instructions": "You are the lead.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "subagents", "config": config or {}}],
        "external_agents": [{"name": "weather-desk", "description": "Forecasts the weather",
                             "remote_agent_id": str(row.pk)}],
    }
    if budget is not None:
        spec["budget"] = {"monthly_usd": budget}
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Lead", spec=spec)
    return agent, services.publish_agent(actor=actor, agent=agent)


def _returns(messages) -> list[str]:
    return [str(p.content) for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]


class Lead:
    """The lead's model, scripted: each step a tool call, a callable reading what came back, or the answer."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.seen: list[tuple[list, AgentInfo]] = []

    def respond(self, messages, info: AgentInfo) -> ModelResponse:
        self.seen.append((messages, info))
        step = self.steps.pop(0) if self.steps else "done"
        if callable(step):
            step = step(messages)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=step if isinstance(step, list) else [step])

    async def stream(self, messages, info: AgentInfo):
        """The same answers streamed (the runner streams the lead's model on every surface)."""
        response = self.respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {index: DeltaToolCall(name=part.tool_name, json_args=json.dumps(part.args),
                                            tool_call_id=part.tool_call_id)}

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, stream_function=self.stream)

    @property
    def last_returns(self) -> list[str]:
        return _returns(self.seen[-1][0])


def task(description: str, n: int = 0, **extra: Any) -> ToolCallPart:
    return ToolCallPart(tool_name="task", args={"description": description, "subagent_type": "weather-desk",
                                                **extra}, tool_call_id=f"task-{n}")


def _api_run(org, owner, lead, version, prompt: str = "Weather?") -> Run:
    return start_run(agent=lead, version=version, surface="api", prompt=prompt, user=owner, acting_role="owner",
                     enqueue=False)


# ------------------------------------------------------------------ end to end, real OpenAI client


def test_a_lead_delegates_to_a_remote_agent_end_to_end_through_the_real_openai_client(org, owner, fake_openai,
                                                                                    caplog):
    remote = FakeA2AAgent(key=A2A_KEY).start()
    try:
        row = _register(org, owner, remote, key=A2A_KEY)
        profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=MODEL_KEY,
                                          base_url=fake_openai.base_url)
        lead, version = _lead(org, owner, profile, row)
        fake_openai.queue(
            Reply.tool_call("task", {"description": "Weather in Lisbon tomorrow?", "subagent_type": "weather-desk"}),
            Reply.text("The weather desk says: sunny, 24 degrees."),
        )
        remote.script(Said(text="Sunny in Lisbon tomorrow, 24 degrees."))
        run = start(org, owner, lead, version, prompt="Will it be sunny in Lisbon tomorrow?")
        with caplog.at_level(logging.DEBUG):
            frames = run_now(run)
    finally:
        remote.stop()

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "The weather desk says: sunny, 24 degrees."
    # One A2A message/send: the task as the lead wrote it (not the library's framing), with the vault's key.
    [received] = remote.received
    assert received.text == "Weather in Lisbon tomorrow?"
    assert received.authorization == f"Bearer {A2A_KEY}"
    assert [s.path for s in remote.seen] == ["/.well-known/agent-card.json", "/rpc"]  # registration, then the call
    # The lead offered `task`, named the remote agent, and read its answer.
    first, last = fake_openai.chat_requests
    assert {t["function"]["name"] for t in json.loads(first.text)["tools"]} == {"task"}
    assert "weather-desk" in first.text and "Forecasts the weather" in first.text
    assert "Sunny in Lisbon tomorrow, 24 degrees." in last.text
    # The call is in the run's ledger at no price, and the run's cost says it is partial.
    entries = list(SpendEntry.objects.filter(run=run).order_by("id"))
    assert [e.kind for e in entries] == ["model_request", "remote_agent", "model_request"]
    assert entries[1].cost_usd == Decimal("0") and entries[1].is_partial and entries[1].model == "a2a:weather-desk"
    assert run.cost_is_partial and Run.objects.count() == 1
    # Web chat draws it as a delegation panel like any delegate's.
    started = next(f["data"] for f in frames if f["type"] == "subagent_started")
    finished = next(f["data"] for f in frames if f["type"] == "subagent_finished")
    assert started["name"] == "weather-desk" and finished["status"] == "completed"
    assert "".join(f["data"]["content"] for f in frames if f["type"] == "subagent_delta") == \
        "Sunny in Lisbon tomorrow, 24 degrees."
    # The remote agent's key is in no frame, transcript, model request or log line.
    message = Message.objects.get(run=run, role=Message.Role.ASSISTANT)
    # (The fake remote server's own loggers print the headers it received, as a remote server may: not ours.)
    ours = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("a2a.server", "uvicorn")))
    for text in (json.dumps(frames), json.dumps(message.parts), first.text, last.text, ours, json.dumps(run.error)):
        assert A2A_KEY not in text


def test_on_the_api_the_remote_answer_arrives_without_delegation_frames(org, owner, fake_openai, fake_a2a):
    row = _register(org, owner, fake_a2a)
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=MODEL_KEY,
                                      base_url=fake_openai.base_url)
    lead, version = _lead(org, owner, profile, row)
    fake_openai.queue(
        Reply.tool_call("task", {"description": "Rain in Oslo?", "subagent_type": "weather-desk"}),
        Reply.text("Yes, rain."),
    )
    fake_a2a.script(Said(text="Rain all day in Oslo.", state="message"))  # a direct message, not a task
    run = _api_run(org, owner, lead, version)
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "Yes, rain."
    assert not [f for f in frames if f["type"].startswith("subagent")]
    assert "Rain all day in Oslo." in fake_openai.chat_requests[1].text
    assert fake_a2a.received[0].authorization is None  # an unkeyed registration sends no credential


# ------------------------------------------------------------------ the A2A conversation


def test_a_follow_up_continues_the_remote_context_and_a_new_task_starts_its_own(org, owner, fake_a2a,
                                                                              scripted_model):
    row = _register(org, owner, fake_a2a)
    lead_model = Lead()

    def trace_of(messages) -> str:
        text = next(r for r in _returns(messages) if "Chat Trace ID:" in r)
        return text.split("Chat Trace ID: ")[1].split()[0]

    lead_model.steps = [
        task("Forecast for Lisbon?"),
        lambda m: task("And the day after?", 1, chat_trace_id=trace_of(m)),
        task("Forecast for Porto?", 2),
        "Lisbon: sunny, then cloudy. Porto: rain.",
    ]
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    fake_a2a.script(Said(text="Sunny."), Said(text="Cloudy."), Said(text="Rain."))
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    lisbon, after, porto = fake_a2a.received
    # Each call sends only the latest request; the follow-up carries the remote contextId of its delegation.
    assert [r.text for r in fake_a2a.received] == ["Forecast for Lisbon?", "And the day after?", "Forecast for Porto?"]
    assert after.context_id == lisbon.context_id
    assert porto.context_id != lisbon.context_id
    assert SpendEntry.objects.filter(run=run, kind="remote_agent").count() == 3


def test_two_tasks_sent_at_once_each_have_their_own_remote_context(org, owner, fake_a2a, scripted_model):
    row = _register(org, owner, fake_a2a)
    lead_model = Lead([task("Forecast for Lisbon?"), task("Forecast for Porto?", 1)], "Both answered.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert sorted(r.text for r in fake_a2a.received) == ["Forecast for Lisbon?", "Forecast for Porto?"]
    assert len({r.context_id for r in fake_a2a.received}) == 2
    # Each task's answer came back to its own call.
    assert sorted(r.split("\n")[0] for r in lead_model.last_returns) == [
        "remote: Forecast for Lisbon?", "remote: Forecast for Porto?"]


def test_a_background_delegation_to_a_remote_agent_is_followed_with_wait_tasks(org, owner, fake_a2a,
                                                                              scripted_model):
    row = _register(org, owner, fake_a2a)

    def wait(messages) -> ToolCallPart:
        text = next(r for r in _returns(messages) if "Task ID:" in r)
        task_id = text.split("Task ID: ")[1].split()[0]
        return ToolCallPart(tool_name="wait_tasks", args={"task_ids": [task_id], "timeout": 30},
                            tool_call_id="wait-0")

    lead_model = Lead(task("Forecast for Lisbon?"), wait, "Sunny, it says.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row, config={"mode": "async"})
    fake_a2a.script(Said(text="Sunny in Lisbon."))
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert [r.text for r in fake_a2a.received] == ["Forecast for Lisbon?"]
    assert "Sunny in Lisbon." in lead_model.last_returns[-1]
    assert SpendEntry.objects.filter(run=run, kind="remote_agent", is_partial=True).count() == 1


@pytest.mark.parametrize(("said", "expected"), [
    (Said(text="Which city do you mean?", state="input-required"),
     ["needs more input", "input-required", "Which city do you mean?"]),
    (Said(text="Sign in at the partner portal first.", state="auth-required"),
     ["needs authorization", "auth-required", "Sign in at the partner portal first."]),
    (Said(text="The forecast service is down.", state="failed"),
     ["did not complete the task (failed)", "The forecast service is down."]),
    (Said(chunks=["Sun", "ny in Lis", "bon, 24 de", "grees."]), ["Sunny in Lisbon, 24 degrees.\n\nChat Trace ID"]),
    (Said(text="Forecast attached.", data={"temp_c": 24}, file_url="https://files.partner.test/r.pdf"),
     ["Forecast attached.", "sent a data part, not read here", "sent a file (report.pdf), not read here"]),
])
def test_what_the_remote_agent_answers_comes_back_to_the_lead_as_text(org, owner, fake_a2a, scripted_model, said,
                                                                     expected):
    row = _register(org, owner, fake_a2a)
    lead_model = Lead(task("Forecast, please."), "I passed that on.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    fake_a2a.script(said)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    [result] = lead_model.last_returns
    for piece in expected:
        assert piece in result
    assert "temp_c" not in result and "files.partner.test" not in result  # a data or file part is not read


# ------------------------------------------------------------------ failures the run survives, and those it does not


def test_an_unreachable_remote_agent_says_so_and_the_run_goes_on(org, owner, scripted_model):
    remote = FakeA2AAgent().start()
    row = _register(org, owner, remote)
    remote.stop()  # gone after it was registered
    lead_model = Lead(task("Forecast, please."), "The weather desk is not answering; no forecast today.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "The weather desk is not answering; no forecast today."
    [result] = lead_model.last_returns
    assert "weather-desk could not be reached" in result and "Carry on without it" in result
    assert not SpendEntry.objects.filter(run=run, kind="remote_agent").exists()  # nothing answered, nothing recorded


def test_each_call_goes_through_the_address_checks_at_call_time(org, owner, fake_a2a, scripted_model, settings):
    row = _register(org, owner, fake_a2a)
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []  # the operator withdrew the allowance since the registration
    lead_model = Lead(task("Forecast, please."), "No forecast.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    before = len(fake_a2a.seen)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    [result] = lead_model.last_returns
    assert "could not be reached" in result and "TOOL_ALLOWED_PRIVATE_HOSTS" in result
    assert len(fake_a2a.seen) == before and fake_a2a.received == []


def test_a_used_up_budget_refuses_the_call_before_anything_is_sent(org, owner, fake_openai, fake_a2a):
    row = _register(org, owner, fake_a2a)
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=MODEL_KEY,
                                      base_url=fake_openai.base_url)
    lead, version = _lead(org, owner, profile, row, budget="0.0001")
    # The lead's first answer costs more than its whole cap (gpt-4o-mini is priced by genai-prices).
    fake_openai.queue(Reply(calls=[{"name": "task", "arguments": {"description": "Forecast.",
                                                                  "subagent_type": "weather-desk"}, "id": None}],
                            usage={"prompt_tokens": 100_000, "completion_tokens": 10}))
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_EXCEEDED, (run.status, run.error)
    assert fake_a2a.received == [] and [s.path for s in fake_a2a.seen] == ["/.well-known/agent-card.json"]
    entries = SpendEntry.objects.filter(run=run)
    assert [e.kind for e in entries] == ["model_request"] and run.cost_usd == entries.get().cost_usd > 0


def test_a_run_whose_registration_was_deleted_since_publish_fails_naming_it(org, owner, fake_a2a, scripted_model):
    row = _register(org, owner, fake_a2a)
    lead_model = Lead(task("Forecast, please."))
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    remote_services.delete_remote_agent(actor=actor_of(owner, org), row=row)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "AssemblyError"
    assert "weather-desk" in run.error["message"] and "was deleted" in run.error["message"]
    assert lead_model.seen == [] and fake_a2a.received == []  # the model was never asked, nothing was sent


def test_calls_go_to_the_registered_endpoint_whatever_else_the_stored_card_names(org, owner, fake_a2a, dns,
                                                                                 scripted_model):
    dns["elsewhere.partner.test"] = ["127.0.0.1"]
    row = _register(org, owner, fake_a2a, key=A2A_KEY)
    # The card as stored names another host first: the key still goes only where the registration was checked.
    elsewhere = f"http://elsewhere.partner.test:{fake_a2a.port}/rpc"
    row.card["supportedInterfaces"] = [{"url": elsewhere, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                       *row.card["supportedInterfaces"]]
    row.save(update_fields=["card"])
    lead_model = Lead(task("Forecast, please."), "Done.")
    scripted_model(lead_model.model())
    lead, version = _lead(org, owner, factories.model_profile(org, label="Scripted"), row)
    run = _api_run(org, owner, lead, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    [call] = [s for s in fake_a2a.seen if s.path == "/rpc"]
    assert call.headers["host"] == f"127.0.0.1:{fake_a2a.port}"
    assert call.headers["authorization"] == f"Bearer {A2A_KEY}"
