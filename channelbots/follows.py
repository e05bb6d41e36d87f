"""The follows loop: one long-lived asyncio event loop per `default` worker process, where every channel-bot
reply that follows its run (`delivery.follow_async`) is a task.

A follow is almost all waiting (on the run's frames, for minutes when the run waits on a tool), so a Celery
thread per follow capped a default worker at DEFAULT_WORKER_CONCURRENCY conversations at once. Now the Celery
task does the short work (who may speak, the conversation, the run started, the placeholder posted), hands the
follow to this loop (`hand_over`) and returns: the thread is free for the next message. It is the runs loop's
pattern (agents/runner/loop.py, whose admission, draining and watchdog this class inherits): at most
CHANNELBOTS_MAX_FOLLOWS follows at once (the Celery thread handing over waits for room, so the worker stops
taking messages and the rest wait in the broker), and nothing blocks the loop: the platform clients (sync
httpx) and the ORM run on this loop's bounded thread pool (CHANNELBOTS_FOLLOW_THREADS), which is also the
loop's default executor, so `asyncio.to_thread` in the delivery lands there.

The Celery task acks at once, so a worker that dies takes its follows' memory with it. Each follow is therefore
written down in Redis before it is handed over (`chbot:follows`, the reply's thread and messages) with a lease
the owning loop renews every few seconds; the loops of every default worker look for follows whose lease
lapsed (the process was killed, or drained past its grace) and adopt them: a new subscription, the row asked
first (`check_first`: the run may have ended meanwhile), and the same messages edited on to the final answer.
So a killed default worker delays an answer by about CHANNELBOTS_FOLLOW_LEASE_SECONDS, it does not lose it.

Shutdown (SIGTERM, the same two Celery signals as the runs loop): no new follow is admitted (a Celery task
waiting for room records its follow for another worker to adopt), live follows get
CHANNELBOTS_FOLLOW_SHUTDOWN_GRACE_SECONDS to finish their last edit, the rest are cancelled and their leases
released at once, so another worker adopts them without waiting for the lease to lapse.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import redis
from celery.signals import worker_ready, worker_shutdown, worker_shutting_down
from django.conf import settings
from django.db import connection

from agenticos import ratelimit
from agents.runner.loop import Draining, RunLoop

if TYPE_CHECKING:
    from channelbots.router import Reply

logger = logging.getLogger(__name__)


def records_key() -> str:
    return ratelimit.redis_name("chbot", "follows")


def lease_key(run_id: str) -> str:
    return ratelimit.redis_name("chbot", "follow-lease", run_id)


def setting(name: str) -> int:
    """This module's settings (config/settings.py), with their defaults where a settings module lacks them."""
    return int(getattr(settings, name, DEFAULTS[name]))


DEFAULTS = {"CHANNELBOTS_MAX_FOLLOWS": 300, "CHANNELBOTS_FOLLOW_THREADS": 16, "CHANNELBOTS_FOLLOW_LEASE_SECONDS": 30,
            "CHANNELBOTS_FOLLOW_SHUTDOWN_GRACE_SECONDS": 10}


def lease_seconds() -> int:
    return setting("CHANNELBOTS_FOLLOW_LEASE_SECONDS")


def _sync(function: Callable[..., Any], *args: Any) -> Any:
    """A sync step of a follow (ORM, platform HTTP) on a pool thread; its database connection is given back
    after, so the pool never keeps more connections than it has threads, and never a stale one."""
    try:
        return function(*args)
    finally:
        connection.close()


class FollowLoop(RunLoop):
    def __init__(self, capacity: int, threads: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="follows-io")
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.following: dict[str, asyncio.Task] = {}  # run id → its task; touched on the loop thread only
        self.failures = 0
        self.waiting: set[str] = set()  # recorded, waiting for room in a Celery thread (under self._room)
        super().__init__(capacity)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.set_default_executor(self.pool)
        self.loop.create_task(self._leases())
        self.loop.run_forever()

    def close(self) -> None:
        super().close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ handing over

    def hand_over(self, reply: Reply, *, check_first: bool = False) -> None:
        """Record `reply`'s follow, then wait for room and start it here. Raises Draining when this process
        is shutting down: the record stays, without a lease, for another worker to adopt. `check_first`: the
        subscription was made after the run started (a resumed run), ask its row first."""
        run_id = str(reply.run_id)
        record(reply, self.owner)
        with self._room:
            self.waiting.add(run_id)  # its lease is renewed while it waits for room
        try:
            self.admit(lambda: self._follow(reply, check_first=check_first))
        except Draining:
            release_lease(run_id)
            raise
        finally:
            with self._room:
                self.waiting.discard(run_id)

    async def _follow(self, reply: Reply, *, check_first: bool = False) -> str:
        from channelbots import delivery, router

        run_id = str(reply.run_id)
        task = asyncio.current_task()
        assert task is not None
        self.following[run_id] = task
        try:
            try:
                outcome = await delivery.follow_async(reply.subscription, reply.live, run_id, check_first=check_first)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("bot %s: the follow of run %s failed", reply.turn.bot.pk, run_id)
                self.failures += 1
                result = await asyncio.get_running_loop().run_in_executor(self.pool, _sync, router.apologize, reply)
            else:
                result = await asyncio.get_running_loop().run_in_executor(self.pool, _sync, router.conclude, reply,
                                                                          outcome)
            await asyncio.get_running_loop().run_in_executor(self.pool, forget, run_id)
            return result
        finally:
            self.following.pop(run_id, None)

    # ------------------------------------------------------------------ leases and adoption

    async def _leases(self) -> None:
        while True:
            await asyncio.sleep(max(0.2, lease_seconds() / 3))
            try:
                with self._room:
                    held = [*self.following, *self.waiting]
                await self.loop.run_in_executor(self.pool, renew, held, self.owner)
                if not self.draining:
                    for run_id, data in await self.loop.run_in_executor(self.pool, orphans, self.owner):
                        self._adopt(run_id, data)
            except RuntimeError:  # the pool was shut down: the process is exiting
                if self._closed.is_set() or not threading.main_thread().is_alive():
                    return
                logger.warning("the follows loop could not renew or adopt", exc_info=True)
            except Exception:  # a Redis outage must not end the renewal of every follow
                logger.warning("the follows loop could not renew or adopt", exc_info=True)

    def _adopt(self, run_id: str, data: dict) -> None:
        with self._room:
            if self._admitted >= self.capacity or self.draining:
                self.loop.run_in_executor(self.pool, release_lease, run_id)  # someone with room may have it
                return
            self._admitted += 1
            self.peak = max(self.peak, self._admitted)

        async def go() -> None:
            try:
                reply = await self.loop.run_in_executor(self.pool, _sync, rebuild, data)
                if reply is None:
                    await self.loop.run_in_executor(self.pool, forget, run_id)
                    return
                logger.info("run %s: its follow was adopted from a lost or drained worker", run_id)
                await self._follow(reply, check_first=True)
            finally:
                self._release()

        self.loop.create_task(go())

    # ------------------------------------------------------------------ shutdown

    def drain(self, grace: float, reason: str = "") -> int:
        """Let live follows finish for `grace` seconds, then cancel the rest and release their leases (another
        worker adopts them). Returns how many were cancelled."""
        self.stop_admitting()
        deadline = time.monotonic() + grace
        while self.admitted and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self.admitted:
            return 0
        cancelled = asyncio.run_coroutine_threadsafe(self._cancel_all(), self.loop).result(timeout=10)
        ending = time.monotonic() + 10
        while self.admitted and time.monotonic() < ending:
            time.sleep(0.05)
        return cancelled

    async def _cancel_all(self) -> int:
        tasks = dict(self.following)
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        for run_id in tasks:
            await self.loop.run_in_executor(self.pool, release_lease, run_id)
        return len(tasks)


# ------------------------------------------------------------------ the records (sync: Redis, ORM)


def record(reply: Reply, owner: str) -> None:
    """Write the follow down before it is handed over; a Redis outage costs the recovery, not the answer."""
    data = {
        "run_id": str(reply.run_id), "incoming": reply.turn.incoming.to_json(), "claimed": reply.claimed,
        "session_id": str(reply.session.pk) if reply.session is not None else "",
        "refs": list(reply.live.refs), "shown": list(reply.live.shown_parts), "notes": list(reply.person_notes),
    }
    try:
        pipe = ratelimit.client().pipeline()
        pipe.hset(records_key(), str(reply.run_id), json.dumps(data))
        pipe.set(lease_key(str(reply.run_id)), owner, ex=lease_seconds())
        pipe.execute()
    except redis.RedisError:
        logger.warning("run %s: its follow could not be recorded (Redis); a lost worker would lose its answer",
                       reply.run_id)


def forget(run_id: str) -> None:
    try:
        pipe = ratelimit.client().pipeline()
        pipe.hdel(records_key(), run_id)
        pipe.delete(lease_key(run_id))
        pipe.execute()
    except redis.RedisError:
        logger.warning("run %s: its finished follow could not be forgotten (Redis)", run_id)


def release_lease(run_id: str) -> None:
    try:
        ratelimit.client().delete(lease_key(run_id))
    except redis.RedisError:
        logger.info("run %s: its lease could not be released; it lapses", run_id)


def renew(run_ids: list[str], owner: str) -> None:
    if not run_ids:
        return
    pipe = ratelimit.client().pipeline()
    for run_id in run_ids:
        pipe.set(lease_key(run_id), owner, ex=lease_seconds())
    pipe.execute()


def orphans(owner: str) -> list[tuple[str, dict]]:
    """Recorded follows nobody holds a lease on, each now leased to `owner` (SET NX: one adopter)."""
    client = ratelimit.client()
    found = {(key.decode() if isinstance(key, bytes) else str(key)): raw
             for key, raw in client.hgetall(records_key()).items()}
    if not found:
        return []
    leases = client.mget([lease_key(run_id) for run_id in found])
    taken: list[tuple[str, dict]] = []
    for (run_id, raw), lease in zip(found.items(), leases, strict=True):
        if lease is None and client.set(lease_key(run_id), owner, nx=True, ex=lease_seconds()):
            try:
                taken.append((run_id, json.loads(raw)))
            except ValueError:
                forget(run_id)
    return taken


def rebuild(data: dict) -> Reply | None:
    """A recorded follow as a reply to carry on: the same thread, the same messages. None when its bot, its
    binding or its run is gone (nothing left to answer)."""
    from agents.models import Run
    from channelbots import delivery, router
    from channelbots.incoming import Incoming
    from channelbots.models import Binding, ChannelBot, ChannelSession
    from channelbots.platforms import client_for

    incoming = Incoming.from_json(data["incoming"])
    bot = ChannelBot.objects.select_related("organization").filter(pk=incoming.bot_id).first()
    binding = Binding.objects.select_related("agent", "created_by", "bot").filter(bot=bot).first() if bot else None
    run = Run.objects.filter(pk=data["run_id"]).only("pk", "agent_id", "organization_id").first()
    if bot is None or binding is None or run is None or run.organization_id != bot.organization_id:
        return None
    session = ChannelSession.objects.filter(pk=data["session_id"], bot=bot).first() if data.get("session_id") else None
    client = client_for(bot)
    live = delivery.LiveReply(client, incoming.chat_id, incoming.reply_to)
    live.refs, live.shown_parts = list(data.get("refs") or []), list(data.get("shown") or [])
    subscription = delivery.Subscription(run.pk)
    subscription.open()
    return router.Reply(turn=router.Turn(incoming, bot, binding, client), session=session, live=live,
                        subscription=subscription, run_id=str(run.pk), person_notes=list(data.get("notes") or []),
                        claimed=bool(data.get("claimed")))


# ------------------------------------------------------------------ this process's loop


_loop: FollowLoop | None = None
_loop_lock = threading.Lock()


def follows_loop() -> FollowLoop:
    """This process's follows loop, started on first use (a worker starts it when it is ready, so follows a
    killed worker left are adopted even before a message arrives)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = FollowLoop(setting("CHANNELBOTS_MAX_FOLLOWS"), setting("CHANNELBOTS_FOLLOW_THREADS"))
        return _loop


def started_loop() -> FollowLoop | None:
    with _loop_lock:
        return _loop


def hand_over(reply: Reply, *, check_first: bool = False) -> str:
    """From the Celery task: the follow goes to this process's loop; the thread returns at once."""
    try:
        follows_loop().hand_over(reply, check_first=check_first)
    except Draining:
        logger.info("run %s: this worker is shutting down; its follow is left for another worker", reply.run_id)
        return "handed_over"
    return "following"


def _consumes_default(sender: Any) -> bool:
    """Whether the worker that sent a signal takes the `default` queue (where bot deliveries are)."""
    try:
        queues = sender.app.amqp.queues.consume_from or {}
        return not queues or settings.CELERY_TASK_DEFAULT_QUEUE in queues or "default" in queues
    except AttributeError:
        return True


@worker_ready.connect
def _start_the_follows(sender: Any = None, **_kwargs: Any) -> None:
    if _consumes_default(sender):
        follows_loop()


@worker_shutting_down.connect
def _take_no_new_follows(**_kwargs: Any) -> None:
    """SIGTERM: only a flag and a notify (this runs in the signal handler)."""
    follows = started_loop()
    if follows is not None:
        follows.stop_admitting()


@worker_shutdown.connect
def _drain_the_follows(**_kwargs: Any) -> None:
    follows = started_loop()
    if follows is None:
        return
    grace = setting("CHANNELBOTS_FOLLOW_SHUTDOWN_GRACE_SECONDS")
    cancelled = follows.drain(grace)
    if cancelled:
        logger.warning("left %d follow(s) still going after the %d s shutdown grace to another worker", cancelled,
                       grace)
