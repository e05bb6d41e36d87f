"""The runs loop: one long-lived asyncio event loop per process, in a thread of its own, where every run the
process executes is a task.

A run is almost all waiting (on the model, on tools that take minutes), so a thread per run capped a worker
at its thread count; tasks on one loop cost a few kilobytes each. `admit` is the only way in: it waits while
RUN_MAX_CONCURRENT runs are live (the Celery thread calling it blocks, so the worker stops taking messages and
the rest wait in the broker for any worker with room), then hands the run to the loop and returns.

What must never happen on the loop is blocking: the ORM runs on the runner's bounded thread pool
(`run_handle.db_pool`), Redis calls go there too, and a watchdog thread reports where the loop was stuck when it
did not turn for RUN_LOOP_BLOCKED_SECONDS (`blocked`: tests assert on it).

One pulse task serves every live run of the process: every CANCEL_POLL_SECONDS one Redis read of all their
stop signals, every RUN_HEARTBEAT_SECONDS one UPDATE that beats all their rows and returns which were asked to
stop (the backstop for a lost signal). With a thousand runs that is two statements a second, not two thousand.

Shutdown (`stop_admitting` on SIGTERM, then `drain` as the worker exits): no new run is admitted (a waiting
Celery task gives its message back to the broker), live runs get RUN_SHUTDOWN_GRACE_SECONDS to finish, the rest
are stopped and handed back to the queue from their last checkpoint (agents/runner/recovery.py): the next worker
goes on with them.

The heartbeat is also a lease: it beats only the rows this process still holds (`worker`). A run whose row it
no longer holds was taken over by another worker while this one stalled past the stale limit; it is stopped
here without writing anything, so a run never goes on in two places.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.models import Run, RunStatus

if TYPE_CHECKING:
    from agents.runner.execute import RunExecution

logger = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 0.5


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed and not turned off (RUN_LOOP_UVLOOP), else asyncio's. The loop's own work —
    callbacks, sockets, timers of hundreds of runs — was ~8 % of a runs worker's CPU on asyncio's pure-Python
    loop (py-spy, bench/concurrency.py); libuv does the same in C. Nothing here depends on which it is: the
    watchdog reads the loop thread's Python stack, executors and call_soon_threadsafe behave the same."""
    if settings.RUN_LOOP_UVLOOP:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class Draining(Exception):
    """This process is shutting down and takes no new run."""


@dataclass(frozen=True)
class Blocked:
    """The loop did not turn for `seconds` (at least); `stack` is where its thread was meanwhile."""

    seconds: float
    stack: str


class RunLoop:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.loop = new_event_loop()
        self.live: dict[str, RunExecution] = {}  # touched on the loop thread only
        self.draining = False
        self.blocked: deque[Blocked] = deque(maxlen=50)
        self.peak = 0
        self._admitted = 0
        self._room = threading.Condition()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="runs-loop", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="runs-loop-watchdog", daemon=True)
        self._watchdog.start()

    # ------------------------------------------------------------------ admission

    @property
    def admitted(self) -> int:
        with self._room:
            return self._admitted

    def admit(self, coroutine: Callable[[], Coroutine[Any, Any, Any]]) -> Future:
        """Wait for room, then start `coroutine()` on the loop; its future is returned at once.

        Raises Draining when the process is shutting down (before or while waiting)."""
        with self._room:
            while self._admitted >= self.capacity and not self.draining:
                self._room.wait(timeout=1.0)
            if self.draining:
                raise Draining
            self._admitted += 1
            self.peak = max(self.peak, self._admitted)
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine(), self.loop)
        except BaseException:
            self._release()
            raise
        future.add_done_callback(lambda _: self._release())
        return future

    def _release(self) -> None:
        with self._room:
            self._admitted -= 1
            self._room.notify()

    def stop_admitting(self) -> None:
        """SIGTERM: take no new run; a task waiting for room gives up (its message goes back to the broker)."""
        with self._room:
            self.draining = True
            self._room.notify_all()

    def drain(self, grace: float, reason: str) -> int:
        """Let live runs finish for `grace` seconds, then stop the rest with `reason` and wait for their endings
        to be written. Returns how many were stopped."""
        self.stop_admitting()
        deadline = time.monotonic() + grace
        while self.admitted and time.monotonic() < deadline:
            time.sleep(0.1)
        if not self.admitted:
            return 0
        stopped = asyncio.run_coroutine_threadsafe(self._stop_all(reason), self.loop).result(timeout=10)
        ending = time.monotonic() + 30  # the endings' writes: a statement each
        while self.admitted and time.monotonic() < ending:
            time.sleep(0.1)
        return stopped

    async def _stop_all(self, reason: str) -> int:
        executions = list(self.live.values())
        for execution in executions:
            execution.shut_down(reason)
        return len(executions)

    # ------------------------------------------------------------------ live runs and their pulse

    def register(self, execution: RunExecution) -> None:
        self.live[str(execution.run.pk)] = execution

    def unregister(self, execution: RunExecution) -> None:
        self.live.pop(str(execution.run.pk), None)

    def close(self) -> None:
        """Stop the loop and its threads (tests that build a loop of their own). What is left on the loop is
        cancelled first and given a moment to end, as asyncio.run does: a task that owns something outside the
        process (a capability's shared browser connection and its driver process) ends it in its `finally`."""
        self._closed.set()
        if self._thread.is_alive() and not self.loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(self._cancel_rest(), self.loop).result(timeout=15)
            except Exception:  # the loop is stuck or gone: stop it anyway
                logger.warning("the runs loop's tasks did not end when it closed", exc_info=True)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self._watchdog.join(10)

    async def _cancel_rest(self) -> None:
        this = asyncio.current_task()
        rest = [task for task in asyncio.all_tasks() if task is not this]
        for task in rest:
            task.cancel()
        await asyncio.wait(rest, timeout=10) if rest else None

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.create_task(self._pulse())
        self.loop.run_forever()

    async def _pulse(self) -> None:
        from agents.run_handle import on_db_thread

        last_beat = time.monotonic()
        while True:
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            if not self.live:
                continue
            ids = list(self.live)
            # Read per pass: tests shorten it on a running loop.
            beat = time.monotonic() - last_beat >= settings.RUN_HEARTBEAT_SECONDS
            try:
                if beat:
                    last_beat = time.monotonic()
                    stop, held = await on_db_thread(beat_rows, ids)
                    for run_id in set(ids) - set(held):
                        execution = self.live.get(run_id)
                        if execution is not None and execution.holds_row():
                            execution.lose_row()
                else:
                    stop = await on_db_thread(stops_signalled, ids)
            except Exception:  # a database or Redis outage must not end the pulse of every run
                logger.warning("the runs pulse could not %s", "beat" if beat else "read stop signals", exc_info=True)
                continue
            for run_id in stop:
                execution = self.live.get(run_id)
                if execution is not None:
                    execution.token.cancel()

    # ------------------------------------------------------------------ the watchdog

    def _watch(self) -> None:
        """Post a no-op to the loop every tick; when it has not run within RUN_LOOP_BLOCKED_SECONDS, record the
        loop thread's stack (what holds it) and, once it turned again, for how long."""
        while not self._closed.is_set():
            threshold = settings.RUN_LOOP_BLOCKED_SECONDS
            turned = threading.Event()
            started = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(turned.set)
            except RuntimeError:  # the loop was closed
                return
            if not turned.wait(threshold):
                frame = sys._current_frames().get(self._thread.ident or 0)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
                while not turned.wait(0.1):
                    if self._closed.is_set():
                        return
                held = time.monotonic() - started
                self.blocked.append(Blocked(held, stack))
                logger.warning("the runs loop did not turn for %.2f s; it was at:\n%s", held, stack[-2000:])
            time.sleep(min(0.1, threshold))


def beat_rows(run_ids: list[str]) -> tuple[list[str], list[str]]:
    """Beat every live run's row this process still holds, in one statement; return those asked to stop, and
    those it beat. Sync (ORM thread)."""
    from agents.runner.checkpoint import worker_name

    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Run._meta.db_table} SET heartbeat_at = %s WHERE id = ANY(%s::uuid[]) AND status = %s"  # noqa: S608
            " AND worker = %s RETURNING id, cancel_requested",
            [timezone.now(), run_ids, RunStatus.RUNNING, worker_name()],
        )
        rows = cursor.fetchall()
    return [str(run_id) for run_id, cancel in rows if cancel], [str(run_id) for run_id, _cancel in rows]


_loop: RunLoop | None = None
_loop_lock = threading.Lock()


def runs_loop() -> RunLoop:
    """This process's runs loop, started on first use (a `runs` worker starts it when it is ready)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = RunLoop(settings.RUN_MAX_CONCURRENT)
        return _loop


def stops_signalled(run_ids: list[str]) -> list[str]:
    """Those of these runs whose stop was signalled in Redis (`agents.runs.request_stop`), in one read; none when
    Redis cannot answer (the heartbeat asks the rows). Sync (Redis)."""
    import redis

    from agenticos import ratelimit
    from agents.runs import _stop_key

    try:
        signals = ratelimit.client().mget([_stop_key(run_id) for run_id in run_ids])
    except redis.RedisError:
        return []
    return [run_id for run_id, signal in zip(run_ids, signals, strict=True) if signal is not None]


def started_loop() -> RunLoop | None:
    """The runs loop if this process started one (shutdown has nothing to drain otherwise)."""
    with _loop_lock:
        return _loop
