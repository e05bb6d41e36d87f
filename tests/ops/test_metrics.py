"""Prometheus /metrics: refused without the token (and absent when none is configured), counting a run that went
through the REST API, the Celery worker, the runner and the real OpenAI client against the fake provider, and
adding up what several processes counted (the launcher's PROMETHEUS_MULTIPROC_DIR)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from agenticos import metrics
from agenticos.services import create_api_key
from agents import services as agent_services
from agents.models import Run, RunStatus
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-token-0123456789abcdef"
PROVIDER_KEY = "sk-metrics-provider-key-000111"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of an exposition."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client, token: str | None = TOKEN):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return client.get("/metrics", **headers)


# ------------------------------------------------------------------ refusals


def test_without_a_configured_token_there_is_no_metrics_endpoint(client, settings, db):
    settings.METRICS_TOKEN = ""
    for token in (None, "", "anything-at-all-0123456789"):
        response = scrape(client, token)
        assert response.status_code == 404
        assert b"agenticos_" not in response.content


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-0123456789abcdef", f"Basic {TOKEN}", "Bearer ",
                                          f"Bearer {TOKEN}x", TOKEN])
def test_a_scrape_without_the_right_token_is_refused(client, settings, db, authorization):
    settings.METRICS_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"agenticos_" not in response.content and b"python_" not in response.content


def test_the_right_token_gets_the_exposition(client, settings, db):
    settings.METRICS_TOKEN = TOKEN
    response = scrape(client)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"agenticos_runs_started", "agenticos_runs_finished", "agenticos_runs_in_flight",
            "agenticos_celery_queue_depth"} <= names


@pytest.mark.parametrize("value, message", [("short", "at least 16 characters")])
def test_a_short_metrics_token_stops_the_start(value, message):
    from tests.ops.test_settings_and_health import load_settings

    result = load_settings(METRICS_TOKEN=value)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: METRICS_TOKEN must be {message}" in result.stderr


# ------------------------------------------------------------------ the full path


@pytest.mark.django_db(transaction=True)
def test_a_run_through_the_api_moves_the_counters(client, settings, org, owner, fake_openai, celery_worker):
    settings.METRICS_TOKEN = TOKEN
    actor = actor_of(owner, org)
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=PROVIDER_KEY,
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Timekeeper", spec={
        "name": "Timekeeper", "instructions": "Tell the time.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "charts"}]})
    agent_services.publish_agent(actor=actor, agent=agent)
    fake_openai.queue(Reply.tool_call("create_chart", {"chart_type": "bar", "title": "Madrid", "x_values": ["now"],
                                                        "series": [{"name": "hour", "values": [23]}]}),
                      Reply.text("It is late in Madrid.", usage={"prompt_tokens": 30, "completion_tokens": 6}))
    before = samples(scrape(client).content.decode())

    _, raw = create_api_key(actor=actor, name="metrics test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = api.post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "what time is it?"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"

    after = samples(scrape(client).content.decode())
    moved = {name: value(after, name, **labels) - value(before, name, **labels) for name, labels in [
        ("agenticos_runs_started_total", {"surface": "api"}),
        ("agenticos_runs_finished_total", {"surface": "api", "status": "completed"}),
        ("agenticos_tool_calls_total", {"capability": "charts"}),
        ("agenticos_tool_errors_total", {"capability": "charts"}),
        ("agenticos_model_request_seconds_count", {"provider": "openai"}),
        ("agenticos_model_tokens_total", {"provider": "openai", "direction": "output"}),
        ("agenticos_run_queue_wait_seconds_count", {"surface": "api"}),
    ]}
    assert moved == {
        "agenticos_runs_started_total": 1,
        "agenticos_runs_finished_total": 1,
        "agenticos_tool_calls_total": 1,
        "agenticos_tool_errors_total": 0,
        "agenticos_model_request_seconds_count": 2,  # the tool call, then the answer
        "agenticos_model_tokens_total": moved["agenticos_model_tokens_total"],
        "agenticos_run_queue_wait_seconds_count": 1,
    }
    assert moved["agenticos_model_tokens_total"] >= 6
    assert value(after, "agenticos_runs_in_flight", surface="api") == value(before, "agenticos_runs_in_flight",
                                                                            surface="api")
    # The queues are read from the broker at the scrape: the run's queue is there, and empty now.
    assert value(after, "agenticos_celery_queue_depth", queue="runs") == 0
    assert ("agenticos_celery_queue_depth", (("queue", "runs"),)) in after
    # Tracing is off in this process: nothing was stored on the run.
    assert Run.objects.get().trace_id == "" and Run.objects.get().status == RunStatus.COMPLETED


# ------------------------------------------------------------------ several processes


COUNT_ONE_RUN = """
import django
django.setup()
from datetime import timedelta
from django.utils import timezone
from agenticos import metrics
from agents.models import Run
now = timezone.now()
run = Run(surface="embed", created_at=now - timedelta(seconds=2), started_at=now)
metrics.run_started(run)
metrics.run_finished(run, "completed")
metrics.tool_call("clock", ok=False)
metrics.socket_opened("embed")
print("counted")
"""


def test_what_two_processes_counted_is_added_up(tmp_path, monkeypatch):
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", PROMETHEUS_MULTIPROC_DIR=str(directory))
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", COUNT_ONE_RUN], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0 and "counted" in result.stdout, result.stderr
    assert len(list(directory.glob("*.db"))) >= 2  # each process wrote its own files

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    found = samples(metrics.exposition().decode())
    assert value(found, "agenticos_runs_started_total", surface="embed") == 2
    assert value(found, "agenticos_runs_finished_total", surface="embed", status="completed") == 2
    assert value(found, "agenticos_runs_in_flight", surface="embed") == 2  # livesum: both processes' gauges
    assert value(found, "agenticos_run_queue_wait_seconds_count", surface="embed") == 2
    assert value(found, "agenticos_tool_errors_total", capability="clock") == 2
    assert value(found, "agenticos_socket_connections", kind="embed") == 2
    # Only the files' values: this (test) process's own in-memory registry is not in a multi-process scrape.
    assert value(found, "agenticos_runs_started_total", surface="api") == 0


def test_the_launcher_empties_the_directory_of_an_earlier_launch(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    directory = Path(metrics.prepare_multiproc_dir(tmp_path))
    assert directory == tmp_path / "prometheus" and directory.is_dir()
    (directory / "counter_123.db").write_bytes(b"stale")
    (directory / "notes.txt").write_text("the operator's")
    assert Path(metrics.prepare_multiproc_dir(tmp_path)) == directory
    assert not (directory / "counter_123.db").exists()
    assert (directory / "notes.txt").read_text() == "the operator's"  # only prometheus_client's files go


def test_the_dashboard_in_the_docs_reads_only_metrics_that_exist():
    import json
    import re

    from prometheus_client.metrics import MetricWrapperBase

    suffixes = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_count", "_sum"]}
    exposed = {"agenticos_celery_queue_depth"}
    for item in vars(metrics).values():
        if isinstance(item, MetricWrapperBase):
            exposed.update(item._name + suffix for suffix in suffixes[item._type])
    docs = (ROOT / "docs" / "operations.md").read_text()
    dashboard = json.loads(re.search(r"```json\n(.*?)\n```", docs.split("## Traces and metrics")[1], re.S).group(1))
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expression in expressions for name in re.findall(r"agenticos_[a-z_]+", expression)}
    assert used and used <= exposed, used - exposed
    # Every metric is on the dashboard (a histogram through its buckets).
    assert {name for name in exposed if not name.endswith(("_count", "_sum"))} - used <= {
        "agenticos_socket_connections_opened_total"}


# ------------------------------------------------------------------ sockets and bot deliveries


def open_sockets(kind: str) -> float:
    return metrics.SOCKETS.labels(kind)._value.get()


@pytest.mark.django_db(transaction=True)
async def test_a_member_socket_counts_while_open_and_a_refused_one_never(org, owner):
    from channels.testing import WebsocketCommunicator

    from config.asgi import application
    from tests.runner.test_chat_socket import connect

    before = open_sockets("chat"), metrics.SOCKETS_OPENED.labels("chat")._value.get()
    refused = WebsocketCommunicator(application, "/ws/chat/")
    connected, _ = await refused.connect(timeout=20)
    assert not connected
    await refused.disconnect()
    assert open_sockets("chat") == before[0]

    communicator, connected = await connect(owner, org)
    assert connected
    assert open_sockets("chat") == before[0] + 1
    assert metrics.SOCKETS_OPENED.labels("chat")._value.get() == before[1] + 1
    await communicator.disconnect()
    assert open_sockets("chat") == before[0]


@pytest.mark.django_db(transaction=True)
def test_each_followed_bot_reply_is_counted_by_platform_and_outcome(org, owner, settings):
    from types import SimpleNamespace

    from channelbots import delivery
    from tests.channelbots.test_delivery_watchdog import a_run, delivery_subscription

    settings.CHANNELBOTS_WATCHDOG_SECONDS = 0.2
    counted = metrics.CHANNEL_DELIVERIES.labels("telegram", "completed")
    before = counted._value.get()
    run = a_run(org, owner)
    Run.objects.filter(pk=run.pk).update(status="completed", output="All done.")
    # The platform client is the outside world: this reply only needs to say which platform it is.
    reply = delivery.LiveReply(SimpleNamespace(can_edit=False, bot=SimpleNamespace(pk="bot", platform="telegram")),
                               "C1", "1.0")  # type: ignore[arg-type]
    outcome = delivery.follow(delivery_subscription(run), reply, str(run.pk), silence_limit=10)
    assert outcome.kind == "completed"
    assert counted._value.get() == before + 1


def test_containers_sharing_the_directory_as_pid_1_keep_their_own_files(tmp_path, monkeypatch):
    """docker-compose: every container is pid 1 and they share /data/prometheus. Files are named by host and pid,
    so two containers add up; a restarted container (same host, same pid) carries its counters on and starts
    its live gauges from zero instead of from what its previous process left."""
    directory = tmp_path / "prometheus"
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", PROMETHEUS_MULTIPROC_DIR=str(directory))
    for host in ("web-a", "worker-b", "web-a"):  # the third is web-a restarted
        as_container = f"import os, socket\nos.getpid = lambda: 1\nsocket.gethostname = lambda: {host!r}\n"
        result = subprocess.run([sys.executable, "-c", as_container + COUNT_ONE_RUN], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and "counted" in result.stdout, result.stderr
    assert {p.name for p in directory.glob("counter_*.db")} == {"counter_web-a-1.db", "counter_worker-b-1.db"}

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    found = samples(metrics.exposition().decode())
    assert value(found, "agenticos_runs_started_total", surface="embed") == 3
    assert value(found, "agenticos_runs_in_flight", surface="embed") == 2  # web-a's restart did not carry its 1 on


def test_a_run_the_stale_sweep_ends_is_counted_as_finished(org, owner, settings):
    """A worker killed mid-run never counts its run's ending; the sweep that ends it failed does."""
    from datetime import timedelta

    from django.utils import timezone

    from agents.runner.finish import sweep_stale_runs
    from tests.channelbots.test_delivery_watchdog import a_run

    counted = metrics.RUNS_FINISHED.labels("web", "failed")
    before = counted._value.get()
    run = a_run(org, owner)
    # Lost as often as a run may be: ended failed, not handed back again.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, surface="web",
                                         heartbeat_at=timezone.now() - timedelta(hours=1),
                                         events=[{"type": "run_interrupted"}] * settings.RUN_MAX_RESUMES)
    assert sweep_stale_runs() == 1
    assert Run.objects.get(pk=run.pk).status == RunStatus.FAILED
    assert counted._value.get() == before + 1
