"""A stop reaches the executing worker through a Redis signal within half a second; the database row is the
backstop (the heartbeat asks it too), so a lost signal only delays the stop until the next beat."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic_ai.models.function import FunctionModel

from agents.models import Run, RunStatus
from agents.runs import request_stop, stop_signalled
from tests.runner.conftest import publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


def endless_model(started: threading.Event) -> FunctionModel:
    async def stream(messages, info):
        yield "Working"
        started.set()
        for _ in range(400):  # 20 s unless stopped
            await asyncio.sleep(0.05)
            yield "."

    return FunctionModel(stream_function=stream, model_name="scripted")


def run_and_stop(org, owner, scripted_model) -> tuple[Run, list[dict]]:
    started = threading.Event()
    scripted_model(endless_model(started))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    frames: list = []
    worker = threading.Thread(target=lambda: frames.extend(run_now(run)))
    worker.start()
    assert started.wait(10)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(30)
    assert not worker.is_alive()
    run.refresh_from_db()
    return run, frames


def test_the_redis_signal_stops_a_run_long_before_its_next_heartbeat(org, owner, scripted_model, settings):
    settings.RUN_HEARTBEAT_SECONDS = 600

    run, frames = run_and_stop(org, owner, scripted_model)

    assert run.status == RunStatus.CANCELLED and run.cancel_requested
    assert frames[-1]["data"]["code"] == "cancelled"
    assert stop_signalled(run.pk)


def test_without_the_signal_the_heartbeat_finds_the_stop_in_the_row(org, owner, scripted_model, monkeypatch,
                                                                     settings):
    settings.RUN_HEARTBEAT_SECONDS = 1
    monkeypatch.setattr("agents.runner.loop.stops_signalled", lambda run_ids: [])  # the signal is lost

    run, frames = run_and_stop(org, owner, scripted_model)

    assert run.status == RunStatus.CANCELLED
    assert frames[-1]["data"]["code"] == "cancelled"
    assert run.heartbeat_at is not None and run.heartbeat_at > run.started_at


def test_a_stop_with_redis_down_is_still_recorded(org, owner, monkeypatch):
    import redis

    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr("agenticos.ratelimit.client", lambda: dead)

    request_stop(Run.objects.get(pk=run.pk))

    assert Run.objects.get(pk=run.pk).cancel_requested
    assert stop_signalled(run.pk) is False
