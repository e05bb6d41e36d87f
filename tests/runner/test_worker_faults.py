"""A real `runs` worker process (`celery -A config worker`, on this test worker's broker and database) against
the local OpenAI-compatible server: killed with SIGKILL while its model request is open, its run is found by its
heartbeat and goes on on another worker (the request sent again); sent SIGTERM, it takes no new run, lets a run
finish within its grace and hands the one that did not back to the queue, which the next worker finishes from its
checkpoint. More kinds of moment: tests/runner/test_durable_runs.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from agents import services
from agents.models import Message, Run, RunStatus, ToolCall
from agents.tasks import execute_run, sweep_stale_runs
from config.celery import app
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """This test database, for another process."""
    db = connection.settings_dict
    query = f"?host={quote(db['HOST'])}&port={db['PORT']}" if db["HOST"].startswith("/") else ""
    netloc = db["USER"] + "@" + ("" if query else f"{db['HOST']}:{db['PORT']}")
    return f"postgres://{netloc}/{db['NAME']}{query}"


class WorkerProcess:
    """`celery worker` in a process group of its own, consuming a queue only this test sends to (the session
    worker of this process consumes `runs`)."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.queue = f"faults-{uuid.uuid4().hex[:8]}"
        self.log = tmp_path / f"{self.queue}.log"  # one per worker: a test starts several
        environment = dict(os.environ, DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="config.settings",
                           PYTHONUNBUFFERED="1", RUN_HEARTBEAT_SECONDS="1", MODEL_ALLOWED_PRIVATE_HOSTS="127.0.0.1",
                           **env)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queue,
                 "-n", f"{self.queue}@%h", "-P", "threads", "-c", "4", "-l", "INFO"],
                cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self) -> WorkerProcess:
        if not wait_until(lambda: b"ready." in self.log.read_bytes() or self.process.poll() is not None, 90):
            self.stop()
            pytest.fail(f"the worker did not start:\n{self.output()}")
        assert self.process.poll() is None, self.output()
        return self

    def hostname(self) -> str:
        """Its node name, as remote control addresses it."""
        return f"{self.queue}@{socket.gethostname()}"

    def control(self, command: str) -> None:
        """Remote control of its queue (`cancel_consumer`, `add_consumer`), asked until it answers: the worker logs
        "ready." before its loop has subscribed to the broadcast channel, and Redis pub/sub keeps nothing for a
        subscriber not there yet — on a loaded machine a first request went unheard (a fresh clone's run). Both
        commands answer when repeated."""
        send = getattr(app.control, command)
        answered = wait_until(lambda: send(self.queue, destination=[self.hostname()], reply=True, timeout=2), 60)
        assert answered, f"the worker did not answer {command}:\n{self.output()}"

    def take(self, run) -> None:
        execute_run.apply_async(args=[str(run.pk)], queue=self.queue)

    def signal(self, signum: int) -> None:
        os.killpg(self.process.pid, signum)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class _Workers:
    """`worker_process(**env)` starts one worker and returns it once it is ready; `worker_process.several(n,
    **env)` starts n at once and waits for them together (a worker takes seconds to import the project, and a
    test that needs three need not pay that three times over)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[WorkerProcess] = []

    def __call__(self, **env: str) -> WorkerProcess:
        return self.several(1, **env)[0]

    def several(self, count: int, **env: str) -> list[WorkerProcess]:
        workers = [self.spawn(**env) for _ in range(count)]
        return [worker.wait_ready() for worker in workers]

    def spawn(self, **env: str) -> WorkerProcess:
        """Started, not waited for: a worker the test needs later boots while the test does the rest
        (`wait_ready()` before using it)."""
        self.started.append(WorkerProcess(self.tmp_path, **env))
        return self.started[-1]


@pytest.fixture
def worker_process(tmp_path):
    workers = _Workers(tmp_path)
    yield workers
    for worker in workers.started:  # before the database is flushed
        worker.stop()


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def openai_agent(org, owner, fake_openai, **spec):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-test-key-1234567890",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Real", spec={
        "name": "Real", "instructions": "Be brief.", "model_profile_id": str(profile.pk), **spec})
    return agent, services.publish_agent(actor=actor, agent=agent)


def status(run) -> str:
    return Run.objects.get(pk=run.pk).status


def test_a_worker_killed_mid_request_has_its_run_found_by_heartbeat_and_sent_again_elsewhere(
        org, owner, fake_openai, worker_process, settings, monkeypatch):
    agent, version = openai_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("You will never read this.", delay=120), Reply.text("Here it is."))
    worker, other = worker_process.several(2)
    run = start(org, owner, agent, version, prompt="Take your time")
    worker.take(run)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 1), worker.output()
    first_beat = Run.objects.get(pk=run.pk).heartbeat_at
    assert wait_until(lambda: Run.objects.get(pk=run.pk).heartbeat_at > first_beat), worker.output()  # it beats

    worker.signal(signal.SIGKILL)
    worker.process.wait(10)
    assert status(run) == RunStatus.RUNNING  # nobody has said otherwise yet

    settings.RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=3)  # 40 s in production
    monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: execute_run.apply_async(
        args=[str(run_id)], queue=other.queue))
    # The beat's sweep, as often as it takes for the heartbeat to go stale.
    assert wait_until(lambda: sweep_stale_runs() >= 0 and status(run) != RunStatus.RUNNING, 20)
    assert wait_until(lambda: status(run) == RunStatus.COMPLETED, 60), other.output()

    done = Run.objects.get(pk=run.pk)
    # No step had been taken: the run starts again from its prompt, and the request cut off is sent again.
    assert len(fake_openai.chat_requests) == 2
    assert fake_openai.chat_requests[1].json["messages"] == fake_openai.chat_requests[0].json["messages"]
    assert done.output == "Here it is." and Message.objects.filter(run=run, role="assistant").count() == 1
    assert SpendEntry.objects.filter(run=run).count() == 1 and done.requests == 1
    assert [e["type"] for e in done.events] == ["run_interrupted", "run_resumed"]
    assert done.events[1]["from_step"] == 0
    # The request cut off may have been billed in part: never reported, so the run's cost says it is partial.
    assert done.events[1]["request_cut"] is True and done.cost_is_partial is True
    assert run_now(done) == []  # never twice


def test_sigterm_lets_a_run_finish_within_the_grace_and_hands_back_the_one_that_does_not(
        org, owner, fake_openai, runs_queue_to_ourselves, worker_process):
    agent, version = openai_agent(org, owner, fake_openai, capabilities=[{"id": "charts"}])
    worker = worker_process(RUN_SHUTDOWN_GRACE_SECONDS="10")
    successor = worker_process.spawn()  # for the end; it consumes a queue of its own
    # The long run: a chart (its response recorded in the ledger at once), then an answer that takes minutes.
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS, text="Drawing it."),
                      Reply.text("Too late.", delay=300))
    long = start(org, owner, agent, version, prompt="Chart then think")
    worker.take(long)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 2), worker.output()
    # The short run: its answer comes two seconds after the worker is told to stop.
    fake_openai.queue(Reply.text("Just in time.", delay=2))
    short = start(org, owner, agent, version, prompt="Quick one")
    worker.take(short)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 3), worker.output()

    worker.signal(signal.SIGTERM)
    late = start(org, owner, agent, version, prompt="After the stop")
    worker.take(late)
    worker.process.wait(60)

    assert worker.process.returncode == 0, worker.output()
    assert status(short) == RunStatus.COMPLETED
    assert Run.objects.get(pk=short.pk).output == "Just in time."
    handed = Run.objects.get(pk=long.pk)
    assert handed.status == RunStatus.QUEUED, handed.error
    assert handed.events[-1]["type"] == "run_interrupted" and handed.events[-1]["reason"] == "shutdown"
    assert "grace" in handed.events[-1]["detail"]
    # What it did and spent is kept: the chart's call and result, the response that asked for it.
    assert ToolCall.objects.get(run=long).status == "ok"
    assert SpendEntry.objects.filter(run=long).count() == 1 and handed.requests == 1
    assert handed.checkpoint["steps"] == 1
    # The run sent after SIGTERM was not taken: it waits for another worker.
    assert status(late) == RunStatus.QUEUED
    assert len(fake_openai.chat_requests) == 3

    # The next worker goes on from the checkpoint: the chart is not drawn again, the open request is resent.
    fake_openai.queue(Reply.text("Here is the chart."))
    successor.wait_ready().take(handed)
    assert wait_until(lambda: status(long) == RunStatus.COMPLETED, 60), successor.output()
    done = Run.objects.get(pk=long.pk)
    assert ToolCall.objects.filter(run=long).count() == 1
    assert SpendEntry.objects.filter(run=long).count() == 2 and done.requests == 2
    answer = Message.objects.get(run=long, role="assistant")
    assert "Drawing it." in answer.content and "Here is the chart." in answer.content
    assert [p["type"] for p in answer.parts].count("tool") == 1
