"""Across machines: the web server and two `runs` worker hosts, each in a network namespace (and with a hostname
and a data directory) of its own, talking TCP over a bridge to PostgreSQL and Redis on a services host
(tests/runner/netlab.py). A run started through the web server's API is taken by one worker host; that host is
lost whole (every process SIGKILLed, its network gone) mid-run, and the other host finishes the run from its
checkpoint: the finished step is not done again, the cut request is sent again, one answer, spend counted once."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from urllib.parse import urlparse

import httpx
import pytest
from django.conf import settings as django_settings
from django.db import connection

from agenticos.services import create_api_key
from agents.models import Run, RunStatus, ToolCall
from agents.runner.finish import sweep_stale_runs
from agents.tasks import execute_run
from config.launcher import daphne_command
from governance.models import SpendEntry
from tests.fakes.openai_server import Reply
from tests.runner import netlab
from tests.runner.conftest import actor_of
from tests.runner.test_worker_faults import openai_agent, status, wait_until

WHY_NOT = netlab.available()
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("runs_queue_to_ourselves"),
              pytest.mark.skipif(bool(WHY_NOT), reason=f"no network namespaces here: {WHY_NOT}")]


@pytest.fixture
def lab(tmp_path):
    built = netlab.Lab(tmp_path)
    yield built
    built.close()


def host_env(lab: netlab.Lab, **extra: str) -> dict[str, str]:
    """What every host of this deployment is given: the services host's TCP addresses and the shared keys (each
    host gets a data directory of its own: nothing local is shared)."""
    database = connection.settings_dict
    socket_path = os.path.join(database["HOST"], f".s.PGSQL.{database['PORT']}")
    redis_path = urlparse(django_settings.REDIS_URL).path
    services = lab.serve(5432, socket_path)
    lab.serve(6379, redis_path)
    env = dict(os.environ, DATABASE_URL=f"postgres://{database['USER']}@{services}:5432/{database['NAME']}",
               REDIS_URL=f"redis://{services}:6379/0",
               SECRET_KEY=django_settings.SECRET_KEY, VAULT_MASTER_KEY=django_settings.VAULT_MASTER_KEY,
               DJANGO_SETTINGS_MODULE="config.settings", PYTHONUNBUFFERED="1", RUN_HEARTBEAT_SECONDS="1",
               MODEL_ALLOWED_PRIVATE_HOSTS=services, **extra)
    env.pop("DATABASE_URL_TEST", None)
    return env


def test_a_lost_worker_host_has_its_run_finished_by_the_other_host(org, owner, fake_openai, lab, tmp_path,
                                                                     settings, monkeypatch):
    from tests.runner.test_execute import CHART_ARGS

    model_port = urlparse(fake_openai.base_url).port
    assert model_port is not None
    services = lab.publish(model_port)
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = [services]
    # The model server as the hosts reach it: on the services host.
    monkeypatch.setattr(type(fake_openai), "base_url", property(lambda _: f"http://{services}:{model_port}/v1"))
    agent, _ = openai_agent(org, owner, fake_openai, capabilities=[{"id": "charts"}])
    _, key = create_api_key(actor=actor_of(owner, org), name="lab")
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS, text="Drawing it."),
                      Reply.text("You will never read this.", delay=120),
                      Reply.text("Here is the chart."))

    env = host_env(lab)
    hosts = {}
    for name in ("web", "w1", "w2"):
        host = lab.add_host(name)
        host_data = tmp_path / f"data-{name}"
        host_data.mkdir()
        own = dict(env, AGENTICOS_DATA_DIR=str(host_data))
        if name == "web":
            argv = daphne_command("config.asgi:application", 8000, host="0.0.0.0")  # noqa: S104 - its own network
            own["ALLOWED_HOSTS"] = "web.lab"
        else:
            argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "runs", "-n", "runs@%h",
                    "-P", "threads", "-c", "4", "-l", "INFO"]
        lab.start(host, argv, own, tmp_path / f"{name}.log")
        hosts[name] = host

    def log(name: str) -> str:
        return (tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]

    for name in ("w1", "w2"):
        assert wait_until(lambda name=name: "ready." in log(name), 180), log(name)
    web = httpx.Client(transport=httpx.HTTPTransport(uds=lab.reach(hosts["web"], 8000)), base_url="http://web.lab",
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert wait_until(lambda: _answers(web), 120), log("web")

    response = web.post(f"/api/v1/agents/{agent.pk}/run?wait=false", json={"prompt": "Chart it"})
    assert response.status_code == 202, response.text
    run = Run.objects.get(pk=response.json()["run_id"])
    assert wait_until(lambda: len(fake_openai.chat_requests) == 2, 120), (log("w1"), log("w2"))
    holder = Run.objects.get(pk=run.pk).worker
    lost_name = holder.split(":", 1)[0]
    assert lost_name in ("w1", "w2"), holder
    survivor = "w2" if lost_name == "w1" else "w1"
    assert ToolCall.objects.get(run=run).status == ToolCall.Status.OK  # the step before the loss is done

    hosts[lost_name].lose()
    settings.RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=3)  # 40 s in production
    # The beat's sweep (here, in the test's process): the run goes to the `runs` queue, which the survivor reads
    # (this process's session worker does not: runs_queue_to_ourselves; and the tests' default of executing runs
    # in-process is put back to the real delivery).
    monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: execute_run.delay(str(run_id)))
    assert wait_until(lambda: sweep_stale_runs() >= 0 and status(run) != RunStatus.RUNNING, 60)
    assert wait_until(lambda: status(run) == RunStatus.COMPLETED, 120), (status(run), log(survivor))

    done = Run.objects.get(pk=run.pk)
    assert done.output.endswith("Here is the chart.")
    assert [e["type"] for e in done.events] == ["run_interrupted", "run_resumed"]
    assert done.events[0]["worker"] == holder
    assert done.events[1]["worker"].split(":", 1)[0] == survivor and done.events[1]["from_step"] == 1
    assert ToolCall.objects.filter(run=run).count() == 1  # the chart is not drawn again
    assert len(fake_openai.chat_requests) == 3  # the request cut with the host is sent again
    # The same messages (their JSON texts come back from the checkpoint's jsonb with the keys in its order).
    assert same_messages(fake_openai.chat_requests[2]) == same_messages(fake_openai.chat_requests[1])
    assert "You will never read this." not in done.output  # a REST run keeps no transcript; its output is one
    assert SpendEntry.objects.filter(run=run).count() == 2 and done.requests == 2


def same_messages(request) -> list:
    """The request's messages with every JSON text in them (a tool call's arguments, a tool's result) read: the
    checkpoint keeps them in PostgreSQL's jsonb, which orders an object's keys its own way."""

    def read(value):
        if isinstance(value, dict):
            return {key: read(item) for key, item in value.items()}
        if isinstance(value, list):
            return [read(item) for item in value]
        if isinstance(value, str) and value[:1] in "{[":
            try:
                return read(json.loads(value))
            except ValueError:
                return value
        return value

    return read(request.json["messages"])


def _answers(web: httpx.Client) -> bool:
    try:
        return web.get("/api/v1/agents").status_code == 200
    except httpx.HTTPError:
        return False
