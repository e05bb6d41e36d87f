"""Bot replies follow their runs as tasks of the follows loop (channelbots/follows.py), not one Celery thread each.

Messages arrive as Slack sends them (signed events through the route and the claim); the `default` worker that
takes them is two threads (a pool of two calling the real task), the runs execute on the session worker's runs
loop on a scripted model, and the live replies land on the fake Slack Web API through the real slack-sdk client.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from agents.models import Run
from channelbots import delivery, follows, tasks
from channelbots.models import ChannelBot
from tests.channelbots.conftest import bind, wait_until

CONVERSATIONS = 40
SORRY = "Sorry — something went wrong on our side and I couldn't answer that."


@pytest.fixture
def bound(agent, sender, builder, org):
    bot = ChannelBot.objects.get(pk=sender.bot_id)
    return bind(agent, bot, builder, org)


@pytest.fixture
def two_thread_default_worker(monkeypatch):
    """The `default` worker with concurrency 2: every delivery the route hands to Celery runs the real task on
    one of two threads."""
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="default-worker")
    done: list = []
    monkeypatch.setattr("channelbots.tasks.handle_incoming.delay",
                        lambda data, claimed: done.append(pool.submit(tasks.handle_incoming, data, claimed)))
    yield done
    pool.shutdown(wait=True)


def number_in(messages) -> int:
    prompt = " ".join(str(getattr(part, "content", "")) for part in messages[-1].parts)
    return int(re.search(r"q(\d+)", prompt).group(1))


def shown(fake, text: str) -> bool:
    return any(text in edit for post in fake.answers() for edit in post.edits)


BROKEN = 99  # the question whose follow raises (test_a_follow_that_raises…)


def gated_model(fake, *, all_in_flight: int = 0, release: threading.Event | None = None) -> FunctionModel:
    """Answers `Answer <n> begins … ends.` for the question `q<n>`. It waits (without blocking the runs loop)
    until `all_in_flight` runs are streaming at once, or `release` is set; and before its last words it waits
    until the first ones show as a live edit in Slack, so every reply is edited live before it is final."""
    started: list[int] = []
    lock = threading.Lock()

    async def until(predicate, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def respond(messages, info):
        return ModelResponse(parts=[TextPart("unused")])

    async def stream(messages, info):
        n = number_in(messages)
        with lock:
            started.append(n)
        if all_in_flight:
            await until(lambda: len(started) >= all_in_flight)
        if release is not None:
            await until(release.is_set)
        yield f"Answer {n} begins"
        if n != BROKEN:  # a broken follow never edits its reply: its run must not wait for that edit
            await until(lambda: shown(fake, f"Answer {n} begins"))
        yield " and ends."

    model = FunctionModel(respond, stream_function=stream, model_name="scripted")
    model.started = started  # type: ignore[attr-defined]
    return model


def answer(fake, n: int):
    return next((p for p in fake.answers("C1") if p.final == f"Answer {n} begins and ends."), None)


def test_forty_conversations_are_answered_at_once_by_a_default_worker_of_two_threads(
        celery_worker, scripted_model, fake_slack, sender, bound, two_thread_default_worker):
    model = scripted_model(gated_model(fake_slack, all_in_flight=CONVERSATIONS))
    events = [sender.message(f"<@UBOT> q{n}", user=f"U{n}", channel="C1") for n in range(CONVERSATIONS)]
    for event in events:
        assert sender.send(event).status_code == 200
    # Every run waits until all forty stream at once: two threads holding a follow each would stop at two.
    wait_until(lambda: len(model.started) >= CONVERSATIONS, timeout=60)
    posts = {n: wait_until(lambda n=n: answer(fake_slack, n), timeout=60) for n in range(CONVERSATIONS)}
    for n, event in enumerate(events):
        post = posts[n]
        assert post.thread_ts == event["ts"]  # its own thread
        assert post.text == "…" and f"Answer {n} begins" in post.edits[0]  # edited live, then final
    assert len({p.ts for p in posts.values()}) == CONVERSATIONS
    assert [f.result() for f in two_thread_default_worker] == ["following"] * CONVERSATIONS
    assert follows.follows_loop().peak >= CONVERSATIONS
    assert Run.objects.filter(status="completed").count() == CONVERSATIONS
    assert sorted(p.final for p in fake_slack.answers("C1")) == sorted(
        f"Answer {n} begins and ends." for n in range(CONVERSATIONS))  # nothing else was posted
    # A stall of the machine shows the loop idle in its selector; a blocking call shows who made it.
    ours = [b for b in follows.follows_loop().blocked if "channelbots/" in b.stack or "httpx" in b.stack]
    assert not ours, ours[0].stack


def test_a_follow_that_raises_apologizes_in_its_thread_and_the_others_are_answered(
        celery_worker, scripted_model, fake_slack, sender, bound, two_thread_default_worker, monkeypatch):
    scripted_model(gated_model(fake_slack, all_in_flight=4))
    original = delivery.LiveReply.due

    def due(self):
        if self.chat_id == "CBAD":
            raise RuntimeError("a bug in this follow")
        return original(self)

    monkeypatch.setattr(delivery.LiveReply, "due", due)
    failures = follows.follows_loop().failures
    bad = sender.message(f"<@UBOT> q{BROKEN}", user="U99", channel="CBAD")
    sender.send(bad)
    for n in range(3):
        sender.send(sender.message(f"<@UBOT> q{n}", user=f"U{n}", channel="C1"))
    for n in range(3):
        wait_until(lambda n=n: answer(fake_slack, n), timeout=60)
    sorry = wait_until(lambda: next((p for p in fake_slack.answers("CBAD") if p.final == SORRY), None))
    assert sorry.thread_ts == bad["ts"]
    assert [p.final for p in fake_slack.answers("CBAD")] == [SORRY]  # one apology, no answer
    assert follows.follows_loop().failures == failures + 1
    assert sorted(f.result() for f in two_thread_default_worker) == ["following"] * 4
    # Nothing of this test's is left running for the next one: the broken follow's run ends too.
    assert wait_until(lambda: not Run.objects.filter(status__in=["queued", "running"]).exists(), timeout=60)


@pytest.fixture
def own_loop(monkeypatch, settings):
    """A follows loop of this test's own as the process's loop (the session's keeps running beside it, as
    another default worker would, and adopts what this one leaves)."""
    settings.CHANNELBOTS_FOLLOW_LEASE_SECONDS = 3
    other = follows.follows_loop()  # the other worker's loop, started
    mine = follows.FollowLoop(capacity=10, threads=4)
    monkeypatch.setattr(follows, "_loop", mine)
    yield mine, other
    mine.close()
    # celery_worker's teardown (before monkeypatch undoes this) waits while the process's follows loop has a
    # follow going: hand it the live loop back, not this closed one, whose follow a test stopped dead would
    # keep it waiting its whole bound (60 s) for nothing.
    monkeypatch.setattr(follows, "_loop", other)


def test_the_sigterm_drain_lets_a_follow_finish_its_final_edit_and_a_message_arriving_meanwhile_is_answered_elsewhere(
        celery_worker, scripted_model, fake_slack, sender, bound, own_loop):
    own_loop, other = own_loop
    release = threading.Event()
    scripted_model(gated_model(fake_slack, release=release))
    sender.send(sender.message("<@UBOT> q1", user="U1", channel="C1"))
    wait_until(lambda: own_loop.admitted == 1 and Run.objects.filter(status="running").exists())
    drained: list[int] = []
    drain = threading.Thread(target=lambda: drained.append(own_loop.drain(30)))
    drain.start()
    wait_until(lambda: own_loop.draining)
    # Arriving while this worker drains: its follow is left for the other worker's loop.
    late = sender.message("<@UBOT> q2", user="U2", channel="C1")
    sender.send(late)
    late_run = wait_until(lambda: Run.objects.exclude(pk__in=list(own_loop.following)).first())
    wait_until(lambda: str(late_run.pk) in other.following)  # adopted (its lease was never renewed here)
    release.set()
    drain.join(60)
    assert drained == [0]  # nothing was cancelled: the follow finished within its grace
    first = wait_until(lambda: answer(fake_slack, 1))
    assert first.text == "…" and first.edits[-1] == "Answer 1 begins and ends."
    second = wait_until(lambda: answer(fake_slack, 2), timeout=30)
    assert second.thread_ts == late["ts"] and second.text == "…"  # its own placeholder, carried on
    assert len(fake_slack.answers("C1")) == 2


def test_a_follow_past_the_grace_is_carried_on_by_another_worker_in_the_same_message(
        celery_worker, scripted_model, fake_slack, sender, bound, own_loop):
    own_loop, other = own_loop
    release = threading.Event()
    scripted_model(gated_model(fake_slack, release=release))
    event = sender.message("<@UBOT> q7", user="U7", channel="C1")
    sender.send(event)
    wait_until(lambda: own_loop.admitted == 1 and Run.objects.filter(status="running").exists())
    assert own_loop.drain(0.2) == 1  # cancelled, its lease released
    assert own_loop.admitted == 0
    run = Run.objects.get()
    wait_until(lambda: str(run.pk) in other.following)  # adopted at once: the lease was released
    release.set()
    post = wait_until(lambda: answer(fake_slack, 7), timeout=30)
    assert post.thread_ts == event["ts"] and post.text == "…"
    assert len(fake_slack.answers("C1")) == 1  # the same message, not a second reply


def test_a_follow_whose_worker_died_is_carried_on_once_its_lease_lapses(
        celery_worker, scripted_model, fake_slack, sender, bound, own_loop):
    own_loop, other = own_loop
    release = threading.Event()
    scripted_model(gated_model(fake_slack, release=release))
    event = sender.message("<@UBOT> q8", user="U8", channel="C1")
    sender.send(event)
    wait_until(lambda: own_loop.admitted == 1 and Run.objects.filter(status="running").exists())
    run = Run.objects.get()
    # As a SIGKILL leaves it: the loop stops dead, nothing is released, its leases are no longer renewed.
    own_loop.loop.call_soon_threadsafe(own_loop.loop.stop)
    wait_until(lambda: str(run.pk) in other.following, timeout=20)  # the 3 s lease lapsed
    release.set()
    post = wait_until(lambda: answer(fake_slack, 8), timeout=30)
    assert post.thread_ts == event["ts"] and post.text == "…"
    assert len(fake_slack.answers("C1")) == 1
