"""A real `runs` worker process (`celery -A config worker`, on this test worker's broker and database) against
the local OpenAI-compatible server: killed with SIGKILL while its model request is open, its run is found by its
heartbeat and ended `failed` (one that never reached the model goes back to the queue); sent SIGTERM, it takes no
new run, lets a run finish within its grace and ends the one that did not `failed`, transcript and spend kept.
Neither is ever executed twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from agents import services
from agents.models import Message, Run, RunStatus, ToolCall
from agents.runner import recovery
from agents.tasks import execute_run, sweep_stale_runs
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of, publish
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
        self.log = tmp_path / "worker.log"
        environment = dict(os.environ, DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="config.settings",
                           PYTHONUNBUFFERED="1", RUN_HEARTBEAT_SECONDS="1", MODEL_ALLOWED_PRIVATE_HOSTS="127.0.0.1",
                           **env)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queue,
                 "-n", f"{self.queue}@%h", "-P", "threads", "-c", "4", "-l", "INFO"],
                cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        if not wait_until(lambda: b"ready." in self.log.read_bytes() or self.process.poll() is not None, 90):
            self.stop()
            pytest.fail(f"the worker did not start:\n{self.output()}")
        assert self.process.poll() is None, self.output()

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


@pytest.fixture
def worker_process(tmp_path):
    started: list[WorkerProcess] = []

    def start_worker(**env: str) -> WorkerProcess:
        started.append(WorkerProcess(tmp_path, **env))
        return started[-1]

    yield start_worker
    for worker in started:  # before the database is flushed
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


def test_a_worker_killed_mid_request_has_its_run_failed_by_heartbeat_and_an_unstarted_one_requeued(
        org, owner, fake_openai, worker_process, settings, monkeypatch):
    agent, version = openai_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("You will never read this.", delay=120))
    worker = worker_process()
    run = start(org, owner, agent, version, prompt="Take your time")
    worker.take(run)
    assert wait_until(lambda: len(fake_openai.chat_requests) == 1), worker.output()
    first_beat = Run.objects.get(pk=run.pk).heartbeat_at
    assert wait_until(lambda: Run.objects.get(pk=run.pk).heartbeat_at > first_beat), worker.output()  # it beats
    # A run the same worker had taken but not yet sent to the model (taken, never marked).
    demo_agent, demo_version = publish(org, owner, name="Demo")
    unstarted = start(org, owner, demo_agent, demo_version, prompt="Hello")
    Run.objects.filter(pk=unstarted.pk).update(status=RunStatus.RUNNING, started_at=timezone.now(),
                                               heartbeat_at=timezone.now())

    worker.signal(signal.SIGKILL)
    worker.process.wait(10)
    assert status(run) == RunStatus.RUNNING  # nobody has said otherwise yet

    settings.RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=3)  # 90 s in production
    enqueued: list = []
    monkeypatch.setattr("agents.runs.enqueue_run", enqueued.append)
    # The beat's sweep, as often as it takes for both heartbeats to go stale.
    assert wait_until(lambda: sweep_stale_runs() >= 0 and RunStatus.RUNNING not in (status(run), status(unstarted)),
                      20)

    lost = Run.objects.get(pk=run.pk)
    assert lost.status == RunStatus.FAILED and lost.error["type"] == "WorkerLost"
    assert status(unstarted) == RunStatus.QUEUED
    assert enqueued == [unstarted.pk]
    # Never twice: the lost run is not taken again, and the model saw one request from it.
    assert run_now(lost) == []
    assert len(fake_openai.chat_requests) == 1
    assert run_now(Run.objects.get(pk=unstarted.pk))[-1]["type"] == "complete"
    assert status(unstarted) == RunStatus.COMPLETED


def test_sigterm_lets_a_run_finish_within_the_grace_and_fails_the_one_that_does_not(
        org, owner, fake_openai, worker_process):
    agent, version = openai_agent(org, owner, fake_openai, capabilities=[{"id": "charts"}])
    worker = worker_process(RUN_SHUTDOWN_GRACE_SECONDS="10")
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
    stopped = Run.objects.get(pk=long.pk)
    assert stopped.status == RunStatus.FAILED and stopped.error["type"] == "WorkerShutdown"
    assert "grace" in stopped.error["message"]
    # What it streamed and spent is kept.
    assert ToolCall.objects.get(run=long).status == "ok"
    assert SpendEntry.objects.filter(run=long).count() == 1 and stopped.requests == 1
    assert "Drawing it." in Message.objects.get(run=long, role="assistant").content
    # The run sent after SIGTERM was not taken: it waits for another worker.
    assert status(late) == RunStatus.QUEUED
    assert len(fake_openai.chat_requests) == 3
    assert recovery.never_reached_model([long.pk, short.pk]) == {str(long.pk), str(short.pk)}  # marks cleared
