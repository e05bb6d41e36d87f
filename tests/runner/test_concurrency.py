"""Runs of one worker process interleave as tasks on its runs loop: fifty at once, each waiting on the others;
stop, park and resume still work while many run; admission waits for room at RUN_MAX_CONCURRENT; a blocking
call on the loop is caught by its watchdog."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Message, Run, RunStatus
from agents.runner.loop import Draining, RunLoop, runs_loop
from agents.runs import request_stop
from governance import services as governance
from governance.models import Approval
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import CHART_ARGS, start

pytestmark = pytest.mark.django_db(transaction=True)

MANY = 50


class Rendezvous:
    """A model whose every stream waits until `expected` streams are open at once, then answers. If they never
    all are (runs executing one after another, or a few at a time), each gives up after two minutes and says so."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.open = 0
        self.peak = 0
        self._everyone: asyncio.Event | None = None

    def model(self) -> FunctionModel:
        async def stream(messages, info: AgentInfo):
            if self._everyone is None:  # created on the runs loop, where every stream runs
                self._everyone = asyncio.Event()
            self.open += 1
            self.peak = max(self.peak, self.open)
            if self.open >= self.expected:
                self._everyone.set()
            yield "Waiting"
            try:
                await asyncio.wait_for(self._everyone.wait(), timeout=120)
                yield " with everyone."
            except TimeoutError:
                yield " alone."
            finally:
                self.open -= 1

        return FunctionModel(stream_function=stream, model_name="scripted")


def wait_until(condition, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def enqueue(run) -> None:
    from agents.runs import enqueue_run

    enqueue_run(run.pk)


def test_fifty_runs_are_in_flight_at_once_in_one_worker_process(org, owner, scripted_model, celery_worker):
    rendezvous = Rendezvous(MANY)
    scripted_model(rendezvous.model())
    agent, version = publish(org, owner)
    runs = [start(org, owner, agent, version, prompt=f"question {n}") for n in range(MANY)]
    for run in runs:
        enqueue(run)  # through the broker to the worker's small thread pool, which hands each to the loop

    assert wait_until(lambda: Run.objects.filter(pk__in=[r.pk for r in runs], status=RunStatus.COMPLETED).count()
                      == MANY)
    assert rendezvous.peak == MANY
    answers = set(Message.objects.filter(run__in=runs, role="assistant").values_list("content", flat=True))
    assert answers == {"Waiting with everyone."}
    # A run's row says completed a moment before its task leaves the loop (the ending is written first), so
    # wait for the loop to let go of all fifty; then nothing of theirs is left on it, only its pulse.
    assert wait_until(lambda: runs_loop().live == {}), sorted(runs_loop().live)
    assert wait_until(lambda: asyncio.run_coroutine_threadsafe(tasks_left(), runs_loop().loop).result(10)
                      == ["RunLoop._pulse"])


async def tasks_left() -> list[str]:
    return sorted(task.get_coro().__qualname__ for task in asyncio.all_tasks()  # type: ignore[union-attr]
                  if task is not asyncio.current_task())


def test_a_stop_reaches_one_run_among_many_and_only_that_one(org, owner, scripted_model, celery_worker):
    rendezvous = Rendezvous(MANY)  # ten runs never make fifty: they wait until stopped or their two minutes are up
    scripted_model(rendezvous.model())
    agent, version = publish(org, owner)
    runs = [start(org, owner, agent, version, prompt=f"question {n}") for n in range(10)]
    for run in runs:
        enqueue(run)
    assert wait_until(lambda: rendezvous.open == 10)

    request_stop(Run.objects.get(pk=runs[3].pk))
    assert wait_until(lambda: Run.objects.get(pk=runs[3].pk).status == RunStatus.CANCELLED)
    assert Run.objects.filter(pk__in=[r.pk for r in runs], status=RunStatus.RUNNING).count() == 9
    assert rendezvous.open == 9
    for run in runs:  # end the rest, or each would wait its two minutes
        request_stop(Run.objects.get(pk=run.pk))
    assert wait_until(lambda: not Run.objects.filter(status=RunStatus.RUNNING).exists())
    assert set(Run.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True)) == {"cancelled"}
    assert Message.objects.get(run=runs[3], role="assistant").content == "Waiting"  # what it streamed is kept


def gated_then_waiting_model(rendezvous: Rendezvous) -> FunctionModel:
    """The gated chart first; after the decision, wait with everyone else on the loop, then answer."""
    waiting = rendezvous.model()

    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="g1")}
            return
        async for piece in waiting.stream_function(messages, info):  # type: ignore[misc]
            yield piece

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_runs_park_and_resume_while_others_run_on_the_same_loop(org, owner, scripted_model, celery_worker):
    # Five gated runs park; once approved and resumed, they and five plain runs must all be open at once.
    rendezvous = Rendezvous(10)
    scripted_model(gated_then_waiting_model(rendezvous))
    gated, gated_version = publish(org, owner, name="Gated",
                                   capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    parked = [start(org, owner, gated, gated_version, prompt=f"chart {n}") for n in range(5)]
    for run in parked:
        enqueue(run)
    assert wait_until(lambda: Run.objects.filter(pk__in=[r.pk for r in parked],
                                                 status=RunStatus.AWAITING_APPROVAL).count() == 5)

    scripted_model(rendezvous.model())  # assembled per run: the plain runs get the waiting model only
    plain, plain_version = publish(org, owner, name="Plain")
    others = [start(org, owner, plain, plain_version, prompt=f"question {n}") for n in range(5)]
    for run in others:
        enqueue(run)
    assert wait_until(lambda: rendezvous.open == 5)
    scripted_model(gated_then_waiting_model(rendezvous))
    actor = actor_of(owner, org)
    for run in parked:
        approval = Approval.objects.get(run=run)
        governance.decide_approval(actor=actor, approval=approval, decision="approve")
        governance.resume_run(actor=actor, run=Run.objects.get(pk=run.pk))

    everyone = [r.pk for r in parked + others]
    assert wait_until(lambda: Run.objects.filter(pk__in=everyone, status=RunStatus.COMPLETED).count() == 10)
    assert rendezvous.peak == 10
    assert set(Run.objects.filter(pk__in=everyone).values_list("output", flat=True)) == {"Waiting with everyone."}


# ------------------------------------------------------------------ admission and the watchdog (a loop of their own)


def test_admission_waits_for_room_and_a_draining_loop_admits_nothing():
    runs = RunLoop(capacity=2)
    release = threading.Event()

    async def hold():
        while not release.is_set():
            await asyncio.sleep(0.01)

    first, second = runs.admit(hold), runs.admit(hold)
    third: list = []
    waiter = threading.Thread(target=lambda: third.append(runs.admit(hold)))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and runs.admitted == 2  # the third waits for room: its Celery thread is held

    release.set()
    waiter.join(10)
    assert not waiter.is_alive()
    third[0].result(10)
    first.result(10), second.result(10)
    assert runs.admitted == 0 and runs.peak == 2

    runs.stop_admitting()
    with pytest.raises(Draining):
        runs.admit(hold)
    assert runs.admitted == 0
    runs.close()


def test_a_blocking_call_on_the_loop_is_caught_with_where_it_blocked(settings):
    settings.RUN_LOOP_BLOCKED_SECONDS = 0.2
    runs = RunLoop(capacity=5)

    async def polite():
        await asyncio.sleep(0.3)

    async def rude_blocking_call():
        time.sleep(1.5)  # what a sync HTTP client or an ORM call would do on the loop

    try:
        runs.admit(polite).result(10)
        assert not [b for b in runs.blocked if "polite" in b.stack]  # awaiting is not blocking
        runs.admit(rude_blocking_call).result(10)
        assert wait_until(lambda: any("rude_blocking_call" in b.stack for b in runs.blocked), timeout=10)
        blocked = next(b for b in runs.blocked if "rude_blocking_call" in b.stack)
        assert "time.sleep(1.5)" in blocked.stack and blocked.seconds >= 0.2
    finally:
        runs.close()
