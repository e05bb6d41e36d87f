"""Prometheus metrics, served at /metrics behind METRICS_TOKEN.

prometheus_client directly, not django-prometheus: what an operator needs here is the platform's own
numbers (runs, model requests, tools, sockets, deliveries, the queues), counted at the few places the runner,
the consumers and the bots pass; django-prometheus' value is per-view HTTP, database and cache metrics, two
more middlewares on every request and a series set per view, which the request spans already cover, and its
export view has no authentication of its own.

Multi-process: daphne, the `runs` workers and the default worker each count in their own process. With
PROMETHEUS_MULTIPROC_DIR set (the launcher sets it for every process it starts, under the data dir, and
empties it when it starts; docker-compose shares a `metrics` volume between its containers) each process
writes its values to files there, named by host and pid, and a scrape of any web process adds them up; gauges
count only live processes ("livesum"). Without it (one process, the tests) values
live in memory. The variable must be set before this module is first imported: prometheus_client picks
its storage then.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

logger = logging.getLogger(__name__)

MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def process_identifier() -> str:
    """What names this process's files in the multi-process directory: host and pid. prometheus_client's default
    is the pid alone, and containers sharing one directory (docker-compose's `metrics` volume) all run as pid 1."""
    host = socket.gethostname().replace("_", "-") or "host"
    return f"{host}-{os.getpid()}"


if os.environ.get(MULTIPROC_VARIABLE, "").strip():
    from prometheus_client import multiprocess, values

    os.makedirs(os.environ[MULTIPROC_VARIABLE].strip(), exist_ok=True)  # compose: a directory of the shared volume

    values.ValueClass = values.MultiProcessValue(process_identifier=process_identifier)
    # A restarted container has the same host name and pid: its live gauges start again from zero, not from
    # what the process before it left in the files.
    multiprocess.mark_process_dead(process_identifier())

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

RUNS_STARTED = Counter("agenticos_runs_started_total", "Executions of runs taken by a worker.", ["surface"])
RUNS_FINISHED = Counter("agenticos_runs_finished_total",
                        "Executions of runs that ended (completed, failed, cancelled, budget_exceeded) or parked "
                        "(awaiting_approval, awaiting_answer).", ["surface", "status"])
RUNS_IN_FLIGHT = Gauge("agenticos_runs_in_flight", "Runs executing now.", ["surface"], multiprocess_mode="livesum")
QUEUE_WAIT = Histogram("agenticos_run_queue_wait_seconds",
                       "From a run's creation to a worker taking it (first execution only: a resumed run waited "
                       "for a person, not for the queue).", ["surface"], buckets=_SECONDS)
MODEL_REQUEST_SECONDS = Histogram("agenticos_model_request_seconds", "Model requests, answered.", ["provider"],
                                  buckets=_SECONDS)
MODEL_TOKENS = Counter("agenticos_model_tokens_total", "Tokens of answered model requests.",
                       ["provider", "direction"])
SPEND_USD = Counter("agenticos_spend_usd_total", "Priced spend of model requests, in USD.", ["provider", "surface"])
TOOL_CALLS = Counter("agenticos_tool_calls_total", "Tool calls that returned.", ["capability"])
TOOL_ERRORS = Counter("agenticos_tool_errors_total", "Tool calls that failed or asked the model to retry.",
                      ["capability"])
SOCKETS = Gauge("agenticos_socket_connections", "WebSocket connections open now.", ["kind"],
                multiprocess_mode="livesum")
SOCKETS_OPENED = Counter("agenticos_socket_connections_opened_total", "WebSocket connections accepted.", ["kind"])
RUNS_RESUMED = Counter("agenticos_runs_resumed_total",
                       "Runs taken over from a lost or stopping worker, from their last checkpoint.", ["surface"])
RESUMED_TOOL_CALLS = Counter("agenticos_resumed_tool_calls_total",
                             "Open tool calls of a resumed run, by what they got: reused (a stored result), rerun "
                             "(read-only, in flight), interrupted (side-effecting, in flight: not run again), "
                             "not_started.", ["outcome"])
CHANNEL_DELIVERIES = Counter("agenticos_channel_deliveries_total",
                             "Bot replies that followed a run to its end, by how it ended.", ["platform", "outcome"])


# ------------------------------------------------------------------ hooks (each a few increments)


def run_started(run: Any) -> None:
    surface = run.surface or "unknown"
    RUNS_STARTED.labels(surface).inc()
    RUNS_IN_FLIGHT.labels(surface).inc()
    if not run.parked_state and not run.events and run.started_at is not None and run.created_at is not None:
        QUEUE_WAIT.labels(surface).observe(max(0.0, (run.started_at - run.created_at).total_seconds()))


def run_resumed(run: Any) -> None:
    RUNS_RESUMED.labels(run.surface or "unknown").inc()


def resumed_tool_call(outcome: str) -> None:
    RESUMED_TOOL_CALLS.labels(outcome).inc()


def run_left(run: Any) -> None:
    RUNS_IN_FLIGHT.labels(run.surface or "unknown").dec()


def run_finished(run: Any, status: str) -> None:
    RUNS_FINISHED.labels(run.surface or "unknown", status).inc()


def model_request(response: Any, entry: Any, started: float, *, surface: str) -> None:
    """One answered model request: its latency since `started` (time.monotonic), tokens and priced spend."""
    provider = getattr(response, "provider_name", None) or "unknown"
    MODEL_REQUEST_SECONDS.labels(provider).observe(max(0.0, time.monotonic() - started))
    if entry.input_tokens:
        MODEL_TOKENS.labels(provider, "input").inc(entry.input_tokens)
    if entry.output_tokens:
        MODEL_TOKENS.labels(provider, "output").inc(entry.output_tokens)
    if entry.cost_usd:
        SPEND_USD.labels(provider, surface or "unknown").inc(float(entry.cost_usd))


def tool_call(capability: str, *, ok: bool) -> None:
    capability = capability or "unknown"
    TOOL_CALLS.labels(capability).inc()
    if not ok:
        TOOL_ERRORS.labels(capability).inc()


def socket_opened(kind: str) -> None:
    SOCKETS.labels(kind).inc()
    SOCKETS_OPENED.labels(kind).inc()


def socket_closed(kind: str) -> None:
    SOCKETS.labels(kind).dec()


def channel_delivery(platform: str, outcome: str) -> None:
    CHANNEL_DELIVERIES.labels(platform or "unknown", outcome or "unknown").inc()


def counting_deliveries(follow: Callable[..., Any]) -> Callable[..., Any]:
    """Around channelbots.delivery.follow(subscription, live, run_id, ...): each followed run, by its outcome."""

    @functools.wraps(follow)
    def counted(subscription: Any, live: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = follow(subscription, live, *args, **kwargs)
        channel_delivery(getattr(getattr(live.client, "bot", None), "platform", ""), outcome.kind)
        return outcome

    return counted


# ------------------------------------------------------------------ scrape


class QueueDepthCollector:
    """Messages waiting in each Celery queue, read from the broker at scrape time (not per process: the
    broker's count is already the whole deployment's)."""

    def collect(self):
        family = GaugeMetricFamily("agenticos_celery_queue_depth", "Messages waiting in a Celery queue.",
                                   labels=["queue"])
        for queue, depth in queue_depths().items():
            family.add_metric([queue], depth)
        yield family


def queue_names() -> list[str]:
    from django.conf import settings

    names = {settings.CELERY_TASK_DEFAULT_QUEUE}
    names.update(route["queue"] for route in settings.CELERY_TASK_ROUTES.values() if "queue" in route)
    return sorted(names)


def queue_depths() -> dict[str, int]:
    """Through kombu (a passive declare answers the message count on any broker); a queue nobody declared
    yet is empty. A broker that cannot answer leaves the metric out rather than failing the scrape."""
    from amqp.exceptions import NotFound
    from celery import (
        current_app as app,  # the project's (config.celery), without the kernel importing config
    )
    from kombu.exceptions import ChannelError

    depths: dict[str, int] = {}
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            channel = connection.default_channel
            for queue in queue_names():
                try:
                    depths[queue] = int(channel.queue_declare(queue=queue, passive=True).message_count)
                except (ChannelError, NotFound):
                    depths[queue] = 0
    except Exception:  # noqa: BLE001 — a scrape must still answer the processes' metrics
        logger.warning("metrics: could not read the Celery queue depths", exc_info=True)
        return {}
    return depths


def multiproc_dir() -> str:
    return os.environ.get(MULTIPROC_VARIABLE, "").strip()


def exposition() -> bytes:
    """Every process's metrics (added up from the multi-process directory when there is one) and the queues."""
    directory = multiproc_dir()
    if directory:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    queues = CollectorRegistry()
    queues.register(QueueDepthCollector())
    return body + generate_latest(queues)


def token_matches(header: str, expected: str) -> bool:
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and bool(given) and hmac.compare_digest(given.strip().encode(),
                                                                              expected.encode())


def metrics_view(request):
    """GET /metrics with `Authorization: Bearer <METRICS_TOKEN>`. No token configured: 404, as if there were no
    endpoint (never an open one); a missing or wrong token: 401."""
    from django.conf import settings
    from django.http import HttpResponse, HttpResponseNotAllowed

    expected = settings.METRICS_TOKEN
    if not expected:
        return HttpResponse("Not found.\n", status=404, content_type="text/plain")
    if not token_matches(request.headers.get("Authorization", ""), expected):
        response = HttpResponse("A valid metrics token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


# ------------------------------------------------------------------ the launcher's side


def prepare_multiproc_dir(data_dir: Path) -> str:
    """The directory every process of one launcher shares, emptied (values of processes that are gone would
    otherwise be added forever). An operator's own PROMETHEUS_MULTIPROC_DIR is used, and emptied too."""
    directory = Path(multiproc_dir() or data_dir / "prometheus")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):  # only prometheus_client's files: the directory may be the operator's
        stale.unlink(missing_ok=True)
    return str(directory)

