"""Nothing queued is lost with the broker: a run `queued` in PostgreSQL whose message Redis lost (the broker's
database flushed, as a Redis restarted without its data leaves it) is sent again by the beat's sweep once its
delivery is older than RUN_REDELIVER_AFTER, and a real `runs` worker process (`celery -A config worker`) runs it
to the end — once, however often the sweep runs and however many messages it finds."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.utils import timezone

from agents.models import Message, Run, RunStatus
from agents.runner.finish import requeue_lost_runs
from agents.tasks import execute_run
from governance.models import SpendEntry
from tests.fakes.openai_server import Reply
from tests.runner.test_durable_runs import handed_to
from tests.runner.test_execute import start
from tests.runner.test_worker_faults import openai_agent, status, wait_until, worker_process  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def broker() -> redis.Redis:
    return redis.Redis.from_url(django_settings.BROKER_REDIS_URL)


def flush_the_broker() -> None:
    """FLUSHDB the broker's database, as a Redis that lost its data leaves it: messages and kombu's bindings gone.
    Publishing a run needs no binding (Celery sends a task to its queue through the default exchange, by name),
    and remote control goes through pub/sub, so the session worker of this process still answers later tests."""
    client = broker()
    client.flushdb()
    assert client.dbsize() == 0


def waiting_in(queue: str) -> int:
    client = broker()
    return sum(client.llen(key) for key in client.scan_iter(match=f"*{queue}*") if client.type(key) == b"list")


def test_a_queued_run_whose_message_the_broker_lost_is_delivered_again_and_runs_once(
        org, owner, fake_openai, worker_process, settings, monkeypatch):
    agent, version = openai_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Delivered after all."))
    run = start(org, owner, agent, version, prompt="Are you there?")
    worker = worker_process()
    # The run's message is in the broker while its worker does not take it (its consumer cancelled, as if busy).
    worker.control("cancel_consumer")
    execute_run.apply_async(args=[str(run.pk)], queue=worker.queue)
    assert wait_until(lambda: waiting_in(worker.queue) == 1, 10)

    flush_the_broker()
    assert waiting_in(worker.queue) == 0
    worker.control("add_consumer")
    handed_to(monkeypatch, worker)

    # Within the bound, the sweep leaves it: its message may still be on its way.
    assert requeue_lost_runs() == 0
    assert status(run) == RunStatus.QUEUED and fake_openai.chat_requests == []
    # Past it, it is sent again — once, however often the sweep runs.
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - settings.RUN_REDELIVER_AFTER
                                         - timedelta(seconds=1))
    assert requeue_lost_runs() == 1
    assert requeue_lost_runs() == 0
    assert wait_until(lambda: status(run) == RunStatus.COMPLETED, 60), worker.output()

    done = Run.objects.get(pk=run.pk)
    assert done.output == "Delivered after all." and done.events == []
    assert len(fake_openai.chat_requests) == 1
    assert Message.objects.filter(run=run, role="assistant").count() == 1
    assert SpendEntry.objects.filter(run=run).count() == 1 and done.requests == 1


def test_a_second_message_for_a_run_already_taken_finds_nothing_to_do(
        org, owner, fake_openai, worker_process, settings, monkeypatch):
    """A run waiting in a backlog deeper than the bound gets a second message; the worker that takes it after the
    first one finds the run no longer queued and runs nothing."""
    agent, version = openai_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Only once."))
    run = start(org, owner, agent, version, prompt="Once")
    worker = worker_process()
    worker.take(run)
    worker.take(run)
    assert wait_until(lambda: status(run) == RunStatus.COMPLETED, 60), worker.output()
    assert wait_until(lambda: worker.output().count("succeeded in") == 2, 30), worker.output()  # both handled
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert requeue_lost_runs() == 0  # not queued any more: nothing to send
    done = Run.objects.get(pk=run.pk)
    assert len(fake_openai.chat_requests) == 1 and done.requests == 1
    assert Message.objects.filter(run=run, role="assistant").count() == 1
