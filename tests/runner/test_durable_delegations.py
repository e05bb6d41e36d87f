"""Runs survive their worker while a delegate works: a real `runs` worker (`celery -A config worker`) killed with
SIGKILL while a subagent or a remote agent (A2A) is at work inside the parent's `task` call, or while a coding-agent
task runs in sandboxd. The sweep hands the run back, another worker goes on from the checkpoint of the step that
called the tool, and the run ends `completed`: what finished before the death (a REST call of the parent, one of the
delegate) is not done again, the delegation itself is reported interrupted (it is side-effecting: nothing is sent
twice), the transcript is one answer, and the spend is each answered response once.

The delegate's own progress is not resumed (docs/operations.md says so): its `task` call gets the interrupted
result, and the model decides whether to ask again."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from a2a.helpers.proto_helpers import get_message_text

from agenticos import ratelimit
from agents import services
from agents.models import Message, Run, RunStatus, ToolCall
from capabilities.remote_agents import services as remote_services
from governance.models import SpendEntry
from tests import factories
from tests.capabilities.test_remote_agents_a2a_fake import FakeA2AAgent, Said, _Executor
from tests.fakes.anthropic_messages import Turn as ClaudeTurn
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_durable_runs import (  # noqa: F401
    WORKER_ENV,
    counter,
    finished,
    handed_to,
    lose,
    rest_api,
    tool_messages,
)
from tests.runner.test_execute import start
from tests.runner.test_worker_faults import wait_until, worker_process  # noqa: F401
from tests.sandbox.sandboxd_server import needs_bwrap
from tests.sandbox.test_coding_agent import (  # noqa: F401
    ANTHROPIC_KEY,
    coding_sandboxd,
    fakes,
    needs_clis,
    processes_with,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("runs_queue_to_ourselves")]


def _published(org, owner, name: str, spec: dict):
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name=name, spec={"name": name, **spec})
    return agent, services.publish_agent(actor=actor, agent=agent)


def _profile(org, fake_openai):
    return factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-test-key-1234567890",
                                   base_url=fake_openai.base_url)


def _lead(org, owner, profile, rest_api, **delegation):
    """A lead with a REST tool of its own (`add_contact`) and the `task` tool, delegating as `delegation` says."""
    contact = factories.custom_tool(org, alias="add_contact", method="POST", url=f"{rest_api.base}/echo/contacts")
    return _published(org, owner, "Lead", {
        "instructions": "You are the lead.", "model_profile_id": str(profile.pk),
        "custom_tool_ids": [str(contact.pk)],
        "capabilities": [{"id": "custom_tools", "config": {}}, {"id": "subagents", "config": {}}], **delegation})


def _assert_went_on_after_the_delegation(run: Run, fake_openai, *, first_request: int, answer: str) -> Run:
    """The resumed parent's request: the finished REST call's stored result, the `task` call interrupted; one
    answer in the transcript, with the step before the death."""
    resumed = fake_openai.chat_requests[first_request]
    assert "You are the lead." in resumed.text
    told = {m["tool_call_id"]: m["content"] for m in tool_messages(resumed)}
    assert set(told) == {"call-add", "call-task"}, told
    assert "/echo/contacts" in told["call-add"]  # what the API answered the first worker
    assert "interrupted" in told["call-task"]
    calls = {c.tool_call_id: c for c in ToolCall.objects.filter(run=run, tool_call_id__in=["call-add", "call-task"])}
    assert calls["call-add"].status == ToolCall.Status.OK and calls["call-task"].status == ToolCall.Status.ERROR
    done = Run.objects.get(pk=run.pk)
    answers = list(Message.objects.filter(run=run, role="assistant"))
    assert len(answers) == 1, answers
    assert "Adding the contact." in answers[0].content and answer in answers[0].content
    tool_parts = [p["tool_call_id"] for p in answers[0].parts if p["type"] == "tool"]
    assert tool_parts.count("call-add") == 1 and tool_parts.count("call-task") == 1
    assert [e["type"] for e in done.events] == ["run_interrupted", "run_resumed"]
    assert done.events[1]["from_step"] == 2 and done.events[1]["request_cut"] is False
    return done


def _assert_spent_once(run: Run, answered: int) -> None:
    ledger = SpendEntry.objects.filter(run=run)
    assert ledger.count() == answered and run.requests == answered
    assert run.input_tokens == sum(e.input_tokens for e in ledger)


def test_a_worker_killed_while_a_subagent_works_does_not_repeat_the_parents_finished_tool(
        org, owner, fake_openai, rest_api, worker_process, settings, monkeypatch):
    profile = _profile(org, fake_openai)
    researcher, _ = _published(org, owner, "Researcher", {
        "instructions": "You are the researcher.", "model_profile_id": str(profile.pk)})
    lead, version = _lead(org, owner, profile, rest_api, subagents=[
        {"name": "researcher", "description": "Finds facts", "agent_id": str(researcher.pk)}])
    contacts = counter(rest_api, "/echo/contacts", "POST")
    fake_openai.queue(
        Reply.tool_calls([{"name": "add_contact", "arguments": {}, "id": "call-add"}],
                         text="Adding the contact."),
        Reply.tool_calls([{"name": "task", "id": "call-task", "arguments": {
            "description": "Find Ada's company.", "subagent_type": "researcher"}}]),
        Reply.text("The delegate never says this.", delay=120),  # the delegate at work when the worker dies
        Reply.text("The contact is added; the research was cut off."))
    first, second = worker_process.several(2, **WORKER_ENV)
    handed_to(monkeypatch, second)
    run = start(org, owner, lead, version, prompt="Add Ada and research her company")
    first.take(run)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 3, 90), first.output()
    assert "You are the researcher." in fake_openai.chat_requests[2].text  # the delegate is at work
    assert contacts() == 1
    assert ToolCall.objects.get(run=run, tool_call_id="call-task").status == ToolCall.Status.RUNNING

    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert contacts() == 1  # the parent's finished call is not made again
    assert len(fake_openai.chat_requests) == 4  # the delegate is not asked again: the model decides
    done = _assert_went_on_after_the_delegation(run, fake_openai, first_request=3,
                                                answer="the research was cut off")
    assert "The delegate never says this." not in Message.objects.get(run=run, role="assistant").content
    # The lead's three answered responses, each once; the delegate's cut request never answered.
    _assert_spent_once(done, answered=3)


class _SlowExecutor(_Executor):
    """The fake A2A agent answering `delay` seconds after a message arrives (a remote agent at work when the
    worker dies); `arrived` is every message's text, as it arrives."""

    delay = 0.0
    arrived: list[str] = []

    async def execute(self, context, event_queue) -> None:
        type(self).arrived.append(get_message_text(context.message))
        await asyncio.sleep(self.delay)
        await super().execute(context, event_queue)


@pytest.fixture
def slow_a2a(monkeypatch):
    monkeypatch.setattr("tests.capabilities.test_remote_agents_a2a_fake._Executor", _SlowExecutor)
    monkeypatch.setattr(_SlowExecutor, "delay", 60.0)
    monkeypatch.setattr(_SlowExecutor, "arrived", [])
    agent = FakeA2AAgent().start()
    yield agent
    agent.stop()


def test_a_worker_killed_while_a_remote_agent_works_sends_it_nothing_twice(
        org, owner, fake_openai, rest_api, slow_a2a, worker_process, settings, monkeypatch):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]  # the fake has no TLS
    env = {**WORKER_ENV, "REMOTE_AGENT_PLAIN_HTTP_HOSTS": "127.0.0.1"}
    profile = _profile(org, fake_openai)
    remote = remote_services.create_remote_agent(actor=actor_of(owner, org), card_url=slow_a2a.card_url)
    lead, version = _lead(org, owner, profile, rest_api, external_agents=[
        {"name": "weather-desk", "description": "Forecasts the weather", "remote_agent_id": str(remote.pk)}])
    contacts = counter(rest_api, "/echo/contacts", "POST")
    marker = f"forecast-{uuid.uuid4().hex[:8]}"
    slow_a2a.script(Said(text="Sunny."))
    fake_openai.queue(
        Reply.tool_calls([{"name": "add_contact", "arguments": {}, "id": "call-add"}],
                         text="Adding the contact."),
        Reply.tool_calls([{"name": "task", "id": "call-task", "arguments": {
            "description": f"Weather in Lisbon? {marker}", "subagent_type": "weather-desk"}}]),
        Reply.text("The contact is added; the forecast did not come back."))
    first, second = worker_process.several(2, **env)
    handed_to(monkeypatch, second)
    run = start(org, owner, lead, version, prompt="Add Ada and get the forecast")
    first.take(run)
    assert wait_until(lambda: any(marker in text for text in _SlowExecutor.arrived), 90), first.output()
    assert contacts() == 1 and len(fake_openai.chat_requests) == 2

    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert len(_SlowExecutor.arrived) == 1  # the remote agent was sent the task once, by the first worker
    assert contacts() == 1
    assert len(fake_openai.chat_requests) == 3
    done = _assert_went_on_after_the_delegation(run, fake_openai, first_request=2,
                                                answer="the forecast did not come back")
    _assert_spent_once(done, answered=3)  # a remote agent's own spend is its owner's, not in this ledger



@pytest.fixture
def coding_worker_env(fakes, coding_sandboxd, settings):
    """The coding-agent fakes and sandboxd of tests/sandbox/test_coding_agent.py, for this process and for the
    worker processes (their settings come from their environment)."""
    anthropic, _ = fakes
    for fake in fakes:
        fake.script.clear()
        fake.requests.clear()
        fake.hold.set()
    settings.SANDBOXD_URL = coding_sandboxd.url
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOXD_TOKEN_FILE = str(coding_sandboxd.token_file)
    settings.CODING_AGENT_ANTHROPIC_BASE_URL = anthropic.url
    yield anthropic, {**WORKER_ENV, "SANDBOXD_URL": coding_sandboxd.url, "SANDBOXD_TOKEN": "",
                      "SANDBOXD_TOKEN_FILE": str(coding_sandboxd.token_file),
                      "CODING_AGENT_ANTHROPIC_BASE_URL": anthropic.url}
    anthropic.hold.set()  # a harness still waiting on its model ends


@needs_bwrap
@needs_clis
def test_a_worker_killed_during_a_coding_agent_task_starts_no_second_task(
        org, owner, fake_openai, rest_api, coding_worker_env, worker_process, settings, monkeypatch):
    anthropic, env = coding_worker_env
    anthropic.hold.clear()  # the harness waits on its model while the worker dies
    anthropic.queue(ClaudeTurn.says("Refactored."))
    profile = _profile(org, fake_openai)
    secret = factories.secret(org, value=ANTHROPIC_KEY)
    contact = factories.custom_tool(org, alias="add_contact", method="POST", url=f"{rest_api.base}/echo/contacts")
    lead, version = _published(org, owner, "Lead", {
        "instructions": "You are the lead.", "model_profile_id": str(profile.pk), "custom_tool_ids": [str(contact.pk)],
        "capabilities": [{"id": "custom_tools", "config": {}}, {"id": "sandbox", "config": {"backend": "service"}},
                         {"id": "coding_agent", "config": {}, "secret_id": str(secret.pk)}]})
    contacts = counter(rest_api, "/echo/contacts", "POST")
    marker = f"marker-{uuid.uuid4().hex}"
    fake_openai.queue(
        Reply.tool_calls([{"name": "add_contact", "arguments": {}, "id": "call-add"}],
                         text="Adding the contact."),
        Reply.tool_calls([{"name": "run_coding_agent", "id": "call-task", "arguments": {
            "task": f"Refactor the app. {marker}"}}]),
        Reply.text("The contact is added; the refactoring was cut off."))
    first, second = worker_process.several(2, **env)
    handed_to(monkeypatch, second)
    run = start(org, owner, lead, version, prompt="Add Ada and refactor the app")
    first.take(run)
    assert wait_until(lambda: bool(anthropic.scripted()) and bool(processes_with(marker)), 120), first.output()
    assert contacts() == 1 and len(fake_openai.chat_requests) == 2

    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    # One harness was started, by the first worker: the task was not handed to a second one.
    assert len([r for r in anthropic.scripted() if marker in json.dumps(r.json)]) == 1
    assert contacts() == 1
    assert len(fake_openai.chat_requests) == 3
    done = _assert_went_on_after_the_delegation(run, fake_openai, first_request=2,
                                                answer="the refactoring was cut off")
    _assert_spent_once(done, answered=3)  # the cut task never said what it spent: no ledger row of it
    # The resumption stopped the task the lost worker left in sandboxd (it was still waiting on its model): nothing
    # of it goes on working, spending the key or holding the workspace, and no entry of it is left behind.
    assert wait_until(lambda: not processes_with(marker), 30), processes_with(marker)
    assert not ratelimit.client().exists(ratelimit.redis_name("coding-agent", "tasks", str(run.pk)))
