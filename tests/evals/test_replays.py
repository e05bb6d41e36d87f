"""Replays through the real runner and the scripted OpenAI-compatible fake: a recorded run's custom REST tool is
answered from the recording (the fake REST API counts no new call), a draft that changes the tool's arguments
shows "different arguments" without calling the tool, and the replay's spend is the replay run's in the ledger."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from agents import services as agent_services
from agents.models import Conversation, Run
from agents.runner import execute
from agents.runs import start_run
from evals import replays
from evals.models import ReplayResult, ReplaySet
from evals.replay_tools import NOT_IN_REPLAY
from governance.models import SpendEntry
from tests import factories
from tests.evals.conftest import make_agent
from tests.fakes.openai_server import Reply
from tests.fakes.rest_api import FakeRestAPI
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db(transaction=True)

ARGS = {"name": "Ada"}
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}


@pytest.fixture
def rest_api(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake provider listens there
    server = FakeRestAPI().start()
    yield server
    server.stop()


def _lookup_tool(org, rest_api):
    return factories.custom_tool(org, alias="lookup_contact", method="POST", url=f"{rest_api.base}/echo",
                                 parameters=[{"name": "name", "location": "body", "type": "string", "required": True}])


def _agent(org, owner, server, rest_api, instructions: str):
    tool = _lookup_tool(org, rest_api)
    return make_agent(org, owner, server, instructions=instructions, custom_tool_ids=[str(tool.pk)],
                      capabilities=[{"id": "custom_tools", "config": {}}])


def _recorded_run(org, owner, agent, version, prompt: str = "Who is Ada?") -> Run:
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False)
    execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed", run.error
    return run


def _edit_draft(org, owner, agent, instructions: str) -> None:
    agent.refresh_from_db()
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent,
                                spec={**agent.draft_spec, "instructions": instructions})


def _wait(replay_set: ReplaySet, timeout: float = 90.0) -> ReplaySet:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replay_set.refresh_from_db()
        if replay_set.is_finished:
            return replay_set
        time.sleep(0.2)
    raise AssertionError(f"replay still {replay_set.status} after {timeout} s")


def _replay(org, owner, agent, run, **data) -> ReplaySet:
    replay_set = replays.start_replay(actor=actor_of(owner, org), agent=agent,
                                      data={"selection": {"run_ids": [str(run.pk)]}, **data})
    return _wait(replay_set)


def test_a_recorded_tool_call_is_answered_from_the_recording_ten_times_and_the_tool_is_never_called_again(
        org, owner, scripted_openai, rest_api, celery_worker):
    agent, version, _profile = _agent(org, owner, scripted_openai, rest_api, "[case:orig] Look people up.")
    scripted_openai.script("orig", Reply.tool_call("lookup_contact", ARGS), Reply.text("Ada is a customer.",
                                                                                       usage=USAGE))
    original = _recorded_run(org, owner, agent, version)
    assert len(rest_api.requests) == 1  # the recorded run really called the tool
    original_spend = list(SpendEntry.objects.filter(run=original).values_list("pk", flat=True))
    _edit_draft(org, owner, agent, "[case:draft] Look people up, then answer in one line.")
    for _ in range(10):
        scripted_openai.script("draft", Reply.tool_call("lookup_contact", ARGS),
                               Reply.text("Ada is a customer.", usage=USAGE))

    sets = [_replay(org, owner, agent, original, target="draft", cap_usd="5") for _ in range(10)]

    assert len(rest_api.requests) == 1  # ten replays, no new call at the fake
    for replay_set in sets:
        assert replay_set.status == ReplaySet.Status.COMPLETED, replay_set.error
        result = replay_set.results.get()
        assert result.status == ReplayResult.Status.DONE, result.reason
        assert result.tool_calls == [{"tool_name": "lookup_contact", "verdict": "same", "recorded_args": ARGS,
                                      "replayed_args": ARGS, "answered_by": "recording"}]
        assert not result.tools_changed and not result.answer_changed
        replay_run = Run.objects.get(pk=result.replay_run_id)
        assert replay_run.version.number == 0 and replay_run.surface == "eval"
        # The tool's recorded result is what the replay's model read.
        assert replay_run.tool_calls.get().result == original.tool_calls.get().result
        # The replay's spend is the replay run's, in the ledger; the original's rows are untouched.
        spend = SpendEntry.objects.filter(run=replay_run)
        assert spend.count() == 2 and replay_run.cost_usd > 0
        assert sum(e.cost_usd for e in spend) == replay_run.cost_usd == result.replayed_cost_usd
        assert replay_set.replayed_cost_usd == replay_run.cost_usd
    assert list(SpendEntry.objects.filter(run=original).values_list("pk", flat=True)) == original_spend
    # The draft's instructions were the ones the replay ran.
    assert "then answer in one line" in str(scripted_openai.requests_for("draft")[0]["messages"])


def test_a_draft_that_changes_the_arguments_shows_different_arguments_and_does_not_call_the_tool(
        org, owner, scripted_openai, rest_api, celery_worker):
    agent, version, _profile = _agent(org, owner, scripted_openai, rest_api, "[case:orig] Look people up.")
    scripted_openai.script("orig", Reply.tool_call("lookup_contact", ARGS), Reply.text("Ada is a customer."))
    original = _recorded_run(org, owner, agent, version)
    _edit_draft(org, owner, agent, "[case:surname] Look people up by their surname.")
    scripted_openai.script("surname", Reply.tool_call("lookup_contact", {"name": "Lovelace"}),
                           Reply.text("I could not look her up."))

    replay_set = _replay(org, owner, agent, original, target="draft")

    assert len(rest_api.requests) == 1
    result = replay_set.results.get()
    assert result.tool_calls == [{"tool_name": "lookup_contact", "verdict": "different_arguments",
                                  "recorded_args": ARGS, "replayed_args": {"name": "Lovelace"},
                                  "answered_by": "refused"}]
    assert result.tools_changed and result.answer_changed
    assert result.recorded_output == "Ada is a customer." and result.replayed_output == "I could not look her up."
    assert replay_set.changed_tools == 1 and replay_set.changed_answers == 1
    # The model read the refusal instead of a result.
    tool_messages = [m for body in scripted_openai.requests_for("surname") for m in body["messages"]
                     if m.get("role") == "tool"]
    assert tool_messages and NOT_IN_REPLAY in str(tool_messages[0]["content"])


def test_a_call_not_in_the_recording_is_stopped_for_a_person_and_the_run_is_ended(
        org, owner, scripted_openai, rest_api, celery_worker):
    agent, version, _profile = _agent(org, owner, scripted_openai, rest_api, "[case:orig] Look people up.")
    scripted_openai.script("orig", Reply.text("Hello."))
    original = _recorded_run(org, owner, agent, version)
    _edit_draft(org, owner, agent, "[case:eager] Always look people up.")
    scripted_openai.script("eager", Reply.tool_call("lookup_contact", ARGS))

    replay_set = _replay(org, owner, agent, original, target="draft", on_mismatch="stop")

    result = replay_set.results.get()
    assert result.status == ReplayResult.Status.STOPPED
    assert result.tool_calls[0]["verdict"] == "new" and result.tool_calls[0]["answered_by"] == "stopped"
    assert Run.objects.get(pk=result.replay_run_id).status == "cancelled"
    assert rest_api.requests == []


def test_the_replays_cap_stops_it_before_the_model_is_asked(org, owner, scripted_openai, rest_api, celery_worker,
                                                           settings):
    # One run at a time: runs in flight together may overshoot a cap by what they are spending (as BudgetGuard's).
    settings.EVAL_MAX_CONCURRENT = 1
    agent, version, _profile = _agent(org, owner, scripted_openai, rest_api, "[case:orig] Look people up.")
    scripted_openai.script("orig", Reply.text("One.", usage=USAGE), Reply.text("Two.", usage=USAGE))
    first = _recorded_run(org, owner, agent, version, prompt="first")
    second = _recorded_run(org, owner, agent, version, prompt="second")
    scripted_openai.script("orig", Reply.text("One again.", usage=USAGE))
    before = len(scripted_openai.chat_requests)
    replay_set = replays.start_replay(actor=actor_of(owner, org), agent=agent, data={
        "target": "v1", "cap_usd": "0.00000001", "selection": {"run_ids": [str(first.pk), str(second.pk)]}})
    replay_set = _wait(replay_set)

    assert replay_set.status == ReplaySet.Status.BUDGET_STOPPED
    assert len(scripted_openai.chat_requests) - before == 1  # the second replay never reached the model
    spent = SpendEntry.objects.filter(run__in=Run.objects.filter(surface="eval")).values_list("cost_usd", flat=True)
    assert sum(spent, Decimal("0")) > replay_set.cap_usd


def test_a_replayed_run_becomes_an_evaluation_case_in_one_call(org, owner, scripted_openai, rest_api, celery_worker):
    from evals import services as eval_services

    agent, version, _profile = _agent(org, owner, scripted_openai, rest_api, "[case:orig] Look people up.")
    scripted_openai.script("orig", Reply.tool_call("lookup_contact", ARGS), Reply.text("Ada is a customer."),
                           Reply.tool_call("lookup_contact", ARGS), Reply.text("Ada is a customer."))
    original = _recorded_run(org, owner, agent, version)
    replay_set = _replay(org, owner, agent, original, target="v1")
    suite = eval_services.create_suite(actor=actor_of(owner, org), agent=agent, data={"name": "From traffic"})

    case = replays.make_case(actor=actor_of(owner, org), result=replay_set.results.get(), suite_id=suite.pk)

    assert case.prompt == "Who is Ada?"
    assert {"label": "", "kind": "tool_called", "tool": "lookup_contact", "args": ARGS} in case.checks
    assert {"label": "", "kind": "contains", "value": "Ada is a customer.", "case_sensitive": False} in case.checks


def test_read_only_mode_runs_a_mismatched_read_for_real_and_refuses_a_mismatched_write(
        org, owner, scripted_openai, rest_api, celery_worker):
    """`on_mismatch=read_only` uses the runner's one rule for "read-only" (agents.runner.checkpoint): a custom
    REST tool using GET is run for real; one using POST is refused, never sent."""
    reader = factories.custom_tool(org, alias="find_contact", method="GET", url=f"{rest_api.base}/echo",
                                   parameters=[{"name": "name", "location": "query", "type": "string",
                                                "required": True}])
    writer = _lookup_tool(org, rest_api)  # POST
    agent, version, _profile = make_agent(org, owner, scripted_openai, instructions="[case:orig] Look people up.",
                                          custom_tool_ids=[str(reader.pk), str(writer.pk)],
                                          capabilities=[{"id": "custom_tools", "config": {}}])
    scripted_openai.script("orig", Reply.tool_call("find_contact", ARGS), Reply.text("Ada is a customer."))
    original = _recorded_run(org, owner, agent, version)
    assert [r.method for r in rest_api.requests] == ["GET"]
    _edit_draft(org, owner, agent, "[case:other] Look people up by surname and write it down.")
    scripted_openai.script("other", Reply.tool_call("find_contact", {"name": "Lovelace"}),
                           Reply.tool_call("lookup_contact", {"name": "Lovelace"}), Reply.text("Done."))

    replay_set = _replay(org, owner, agent, original, target="draft", on_mismatch="read_only")

    assert [r.method for r in rest_api.requests] == ["GET", "GET"]  # the new read ran; the write never went
    assert rest_api.requests[-1].query == {"name": ["Lovelace"]}
    answered = {c["tool_name"]: c["answered_by"] for c in replay_set.results.get().tool_calls}
    assert answered == {"find_contact": "executed", "lookup_contact": "refused"}
