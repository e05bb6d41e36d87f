"""Runs survive their worker: real `runs` worker processes (`celery -A config worker`) against the local
OpenAI-compatible server and a fake REST API that counts its calls, killed with SIGKILL at each kind of moment.
The stale sweep hands the run back, another worker goes on from its last checkpoint, and the run ends
`completed` with one transcript, each side effect once, and its spend counted once."""

from __future__ import annotations

import json
import signal
from datetime import timedelta

import pytest

from agents.models import Message, Run, RunStatus, ToolCall
from agents.runner.finish import sweep_stale_runs
from agents.tasks import execute_run
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.fakes.rest_api import FakeRestAPI
from tests.runner.test_execute import start
from tests.runner.test_worker_faults import openai_agent, status, wait_until, worker_process  # noqa: F401

# The sweeps (hand-back, redelivery) send runs to the `runs` queue, which this process's session worker consumes:
# it would take a run the test gives to its own worker processes.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("runs_queue_to_ourselves")]

WORKER_ENV = {"TOOL_ALLOWED_PRIVATE_HOSTS": "127.0.0.1"}


@pytest.fixture(scope="module")
def rest_api():
    server = FakeRestAPI().start()
    yield server
    server.stop()


def calls_to(server, path: str, method: str) -> int:
    return sum(1 for r in server.requests if r.path == path and r.method == method)


def counter(server, path: str, method: str):
    """The calls made from now on. The server serves the whole module, so its log holds earlier tests' calls too:
    counted from zero, a test that waits for "its" first call would see an earlier test's and go on before its own
    worker had even taken the run."""
    before = calls_to(server, path, method)
    return lambda: calls_to(server, path, method) - before


def rest_agent(org, owner, fake_openai, server, *, alias: str, method: str, path: str):
    tool = factories.custom_tool(org, alias=alias, method=method, url=f"{server.base}{path}")
    return openai_agent(org, owner, fake_openai, custom_tool_ids=[str(tool.pk)],
                        capabilities=[{"id": "custom_tools", "config": {}}])


def handed_to(monkeypatch, *workers) -> None:
    """The sweep's enqueue goes to these workers' queues (the session's own worker consumes `runs`)."""
    def enqueue(run_id) -> None:
        for worker in workers:
            execute_run.apply_async(args=[str(run_id)], queue=worker.queue)

    monkeypatch.setattr("agents.runs.enqueue_run", enqueue)


def lose(worker, run, settings) -> None:
    """SIGKILL the worker, then run the beat's sweep until the run is handed back."""
    worker.signal(signal.SIGKILL)
    worker.process.wait(10)
    settings.RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=3)  # 40 s in production
    assert wait_until(lambda: sweep_stale_runs() >= 0 and status(run) != RunStatus.RUNNING, 30)


def finished(run, worker, timeout: float = 90) -> Run:
    assert wait_until(lambda: status(run) not in (RunStatus.QUEUED, RunStatus.RUNNING), timeout), worker.output()
    return Run.objects.get(pk=run.pk)


def tool_messages(request) -> list[dict]:
    return [m for m in request.json["messages"] if m.get("role") == "tool"]


def assert_one_transcript(run: Run, *, text: str) -> None:
    answers = list(Message.objects.filter(run=run, role="assistant"))
    assert len(answers) == 1, answers
    assert text in answers[0].content
    tool_parts = [p["tool_call_id"] for p in answers[0].parts if p["type"] == "tool"]
    assert len(tool_parts) == len(set(tool_parts)) == ToolCall.objects.filter(run=run).count()


def assert_spent_once(run: Run, answered: int) -> None:
    """One ledger row per answered model response, and the run's totals are their sum."""
    ledger = SpendEntry.objects.filter(run=run)
    assert ledger.count() == answered and run.requests == answered
    assert run.input_tokens == sum(e.input_tokens for e in ledger)


def test_a_side_effecting_tool_in_flight_is_not_called_again_and_exactly_one_of_two_workers_resumes(
        org, owner, fake_openai, rest_api, worker_process, settings, monkeypatch):
    agent, version = rest_agent(org, owner, fake_openai, rest_api, alias="create_contact", method="POST",
                                path="/slow?secs=60")
    posts = counter(rest_api, "/slow", "POST")
    fake_openai.queue(Reply.tool_calls([{"name": "create_contact", "arguments": {}, "id": "call-post"}],
                                       text="Creating it."),
                      Reply.text("It may not have been created; please check."))
    # All up before the run starts: the call must still be open when its worker dies.
    first, second, third = worker_process.several(3, **WORKER_ENV)
    handed_to(monkeypatch, second, third)  # both are sent the run: exactly one takes it
    run = start(org, owner, agent, version, prompt="Create the contact")
    first.take(run)
    assert wait_until(lambda: posts() == 1, 60), first.output()
    # The step before the call is durable: the response that asked for it, and its spend.
    held = Run.objects.get(pk=run.pk)
    assert held.checkpoint["calls"] == [{"id": "call-post", "name": "create_contact", "read_only": False}]
    assert held.requests == 1 and ToolCall.objects.get(run=run).status == ToolCall.Status.RUNNING

    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output(), third.output())
    assert posts() == 1  # never sent twice
    assert len(fake_openai.chat_requests) == 2
    told = tool_messages(fake_openai.chat_requests[1])
    assert len(told) == 1 and "interrupted" in told[0]["content"]
    assert ToolCall.objects.get(run=run).status == ToolCall.Status.ERROR
    assert_one_transcript(done, text="may not have been created")
    assert "Creating it." in Message.objects.get(run=run, role="assistant").content  # the step before, kept
    assert_spent_once(done, answered=2)
    assert [e["type"] for e in done.events] == ["run_interrupted", "run_resumed"]
    resumed = done.events[1]
    assert resumed["from_step"] == 1 and resumed["waited_seconds"] >= 0
    assert resumed["request_cut"] is False and done.cost_is_partial is False  # lost in a tool, not a stream
    assert resumed["worker"].rsplit(":", 1)[1] in (str(second.process.pid), str(third.process.pid)), (
        resumed, second.process.pid, third.process.pid)
    assert done.checkpoint is None


def test_a_read_only_tool_in_flight_is_run_again(org, owner, fake_openai, rest_api, worker_process, settings,
                                                  monkeypatch):
    agent, version = rest_agent(org, owner, fake_openai, rest_api, alias="look_up", method="GET",
                                path="/slow?secs=10&once=1")  # the call asked again answers at once
    gets = counter(rest_api, "/slow", "GET")
    fake_openai.queue(Reply.tool_calls([{"name": "look_up", "arguments": {}, "id": "call-get"}]),
                      Reply.text("Found it."))
    first, second = worker_process.several(2, **WORKER_ENV)
    handed_to(monkeypatch, second)
    run = start(org, owner, agent, version, prompt="Look it up")
    first.take(run)
    assert wait_until(lambda: gets() == 1, 60), first.output()
    assert Run.objects.get(pk=run.pk).checkpoint["calls"][0]["read_only"] is True
    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert gets() == 2  # read-only: asked again
    told = tool_messages(fake_openai.chat_requests[1])
    assert len(told) == 1 and json.loads(told[0]["content"])["body"] == {"slow": True}
    assert ToolCall.objects.get(run=run).status == ToolCall.Status.OK
    assert_one_transcript(done, text="Found it.")
    assert_spent_once(done, answered=2)


def test_a_worker_killed_between_steps_never_runs_a_finished_tool_again_and_resends_the_open_request(
        org, owner, fake_openai, rest_api, worker_process, settings, monkeypatch):
    agent, version = rest_agent(org, owner, fake_openai, rest_api, alias="add_contact", method="POST",
                                path="/contacts")
    fake_openai.queue(Reply.tool_calls([{"name": "add_contact", "arguments": {}, "id": "call-add"}],
                                       text="Adding."),
                      Reply.text("You will never read this.", delay=120),
                      Reply.text("Added."))
    first, second = worker_process(**WORKER_ENV), worker_process.spawn(**WORKER_ENV)  # second: its own queue
    run = start(org, owner, agent, version, prompt="Add the contact")
    first.take(run)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 2, 60), first.output()  # the tool ran; step 2 open
    added = calls_to(rest_api, "/contacts", "POST")
    second.wait_ready()
    handed_to(monkeypatch, second)
    lose(first, run, settings)
    done = finished(run, second)

    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert calls_to(rest_api, "/contacts", "POST") == added  # its stored result was used
    assert len(fake_openai.chat_requests) == 3  # the request cut off was sent again
    assert fake_openai.chat_requests[2].json["messages"] == fake_openai.chat_requests[1].json["messages"]
    assert_one_transcript(done, text="Added.")
    assert "You will never read this." not in Message.objects.get(run=run, role="assistant").content
    assert_spent_once(done, answered=2)  # one ledger row per answered response
    assert done.events[-1]["request_cut"] is True and done.cost_is_partial is True  # the lost one: partial


def test_an_approved_call_lost_in_flight_goes_back_to_a_person_and_is_not_sent_again_unasked(
        org, owner, fake_openai, rest_api, worker_process, settings, monkeypatch):
    from governance.models import Approval
    from governance.services import decide_approval
    from tests.runner.conftest import actor_of

    tool = factories.custom_tool(org, alias="send_invoice", method="POST", url=f"{rest_api.base}/slow?secs=60")
    posts = counter(rest_api, "/slow", "POST")
    agent, version = openai_agent(org, owner, fake_openai, custom_tool_ids=[str(tool.pk)], capabilities=[
        {"id": "custom_tools", "config": {"tool_approval": {"send_invoice": "required"}}}])
    fake_openai.queue(Reply.tool_calls([{"name": "send_invoice", "arguments": {}, "id": "call-inv"}],
                                       text="Sending it."),
                      Reply.text("It was not sent again."))
    first, second = worker_process.several(2, **WORKER_ENV)
    handed_to(monkeypatch, first)  # the run the first decision resumes
    run = start(org, owner, agent, version, prompt="Send the invoice")
    first.take(run)
    assert wait_until(lambda: status(run) == RunStatus.AWAITING_APPROVAL, 60), first.output()
    decide_approval(actor=actor_of(owner, org), approval=Approval.objects.get(run=run), decision="approve")
    # Its own call, sent by the worker that took the decided run (not an earlier test's: see `counter`).
    assert wait_until(lambda: posts() == 1, 60), first.output()
    assert status(run) == RunStatus.RUNNING

    handed_to(monkeypatch, second)
    lose(first, run, settings)
    # The worker that takes it over does not send it again: the same approval waits for a person again.
    assert wait_until(lambda: status(run) == RunStatus.AWAITING_APPROVAL, 90), (
        Run.objects.filter(pk=run.pk).values("status", "error", "events").first(), second.output())
    approval = Approval.objects.get(run=run)
    assert approval.status == Approval.Status.PENDING and approval.decided_by is None
    assert ToolCall.objects.get(run=run).status == ToolCall.Status.PARKED
    assert posts() == 1 and len(fake_openai.chat_requests) == 1
    assert [e["type"] for e in Run.objects.get(pk=run.pk).events] == ["run_interrupted", "run_resumed"]

    decide_approval(actor=actor_of(owner, org), approval=approval, decision="reject", note="It went out already")
    done = finished(run, second)
    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert posts() == 1  # sent once, by the person's first approval
    told = tool_messages(fake_openai.chat_requests[1])
    assert len(told) == 1 and "rejected" in told[0]["content"] and "It went out already" in told[0]["content"]
    # Each park writes what the run said so far, as any parked run does; nothing of it is written twice.
    answers = Message.objects.filter(run=run, role="assistant").order_by("id")
    assert "".join(m.content for m in answers) == "Sending it.It was not sent again."
    assert_spent_once(done, answered=2)


def test_a_worker_killed_while_its_run_is_parked_loses_nothing_and_the_decision_resumes_it_elsewhere(
        org, owner, fake_openai, rest_api, worker_process, monkeypatch):
    from governance.models import Approval
    from governance.services import decide_approval
    from tests.runner.conftest import actor_of

    tool = factories.custom_tool(org, alias="book_room", method="POST", url=f"{rest_api.base}/echo/rooms")
    posts = counter(rest_api, "/echo/rooms", "POST")
    agent, version = openai_agent(org, owner, fake_openai, custom_tool_ids=[str(tool.pk)], capabilities=[
        {"id": "custom_tools", "config": {"tool_approval": {"book_room": "required"}}}])
    fake_openai.queue(Reply.tool_calls([{"name": "book_room", "arguments": {}, "id": "call-room"}],
                                       text="Booking it."),
                      Reply.text("Booked."))
    first, second = worker_process.several(2, **WORKER_ENV)
    run = start(org, owner, agent, version, prompt="Book the room")
    first.take(run)
    assert wait_until(lambda: status(run) == RunStatus.AWAITING_APPROVAL, 60), first.output()
    first.signal(signal.SIGKILL)  # a parked run is held by no worker: nothing to hand back
    first.process.wait(10)
    assert status(run) == RunStatus.AWAITING_APPROVAL

    handed_to(monkeypatch, second)
    decide_approval(actor=actor_of(owner, org), approval=Approval.objects.get(run=run), decision="approve")
    done = finished(run, second)
    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert posts() == 1
    assert done.events == []  # never lost: the decision resumed it on a live worker
    answers = Message.objects.filter(run=run, role="assistant").order_by("id")
    assert "".join(m.content for m in answers) == "Booking it.Booked."
    assert_spent_once(done, answered=2)


def test_a_worker_started_in_place_of_a_killed_one_hands_its_runs_back_as_it_starts(
        org, owner, fake_openai, rest_api, worker_process, settings):
    """`make run`'s launcher restarts a worker it saw die and names the dead one (config.supervision): the new
    worker hands that worker's runs back as it starts — no sweep here, and the heartbeat's bound (40 s) is far off —
    and whoever takes the run goes on from its checkpoint."""
    import socket

    from agents.runner.recovery import PREDECESSOR_ENV

    agent, version = rest_agent(org, owner, fake_openai, rest_api, alias="add_note", method="POST", path="/notes")
    fake_openai.queue(Reply.tool_calls([{"name": "add_note", "arguments": {}, "id": "call-note"}], text="Adding."),
                      Reply.text("You will never read this.", delay=120),
                      Reply.text("Noted."))
    first = worker_process(**WORKER_ENV)
    run = start(org, owner, agent, version, prompt="Add the note")
    first.take(run)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 2, 60), first.output()  # step 2 open
    added = calls_to(rest_api, "/notes", "POST")
    first.signal(signal.SIGKILL)
    first.process.wait(10)
    assert settings.RUN_HEARTBEAT_STALE_AFTER == timedelta(seconds=40)
    assert status(run) == RunStatus.RUNNING

    second = worker_process(**WORKER_ENV, **{PREDECESSOR_ENV: f"{socket.gethostname()}:{first.process.pid}"})
    assert wait_until(lambda: status(run) == RunStatus.QUEUED, 30), second.output()
    handed = Run.objects.get(pk=run.pk)
    assert handed.events[-1]["type"] == "run_interrupted"
    assert handed.events[-1]["worker"] == f"{socket.gethostname()}:{first.process.pid}"
    # Its message went to `runs` (nobody consumes it in this test): give the run to the new worker.
    second.take(run)
    done = finished(run, second)
    assert done.status == RunStatus.COMPLETED, (done.error, second.output())
    assert calls_to(rest_api, "/notes", "POST") == added  # the finished step's result was used
    assert_one_transcript(done, text="Noted.")
    assert [e["type"] for e in done.events] == ["run_interrupted", "run_resumed"]
