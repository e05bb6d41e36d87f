"""OpenTelemetry, for real: a daphne and a Celery `runs` worker in their own processes (started as the launcher
starts them) export to an OTLP/HTTP receiver this test runs, which decodes every ExportTraceServiceRequest with
opentelemetry-proto. A completion through the real `openai` client becomes one trace — the HTTP request, the
Celery task, the run, pydantic-ai's model requests (the runner's OpenAI client against the fake provider) and
tool call — whose id is stored on the run and shown on its page; no secret and, by default, no prompt, answer
or tool argument is in any attribute. Without an endpoint no tracer, exporter or instrumentation is even imported.

The two processes use a Redis namespace of their own, so the session's in-process worker never takes their runs.
They start once for the module, together with a second pair that captures content (its own namespace, its own
receiver), because each process costs seconds of imports and tearing one down costs seconds more.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from django.conf import settings
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client.parser import text_string_to_metric_families

from agenticos.services import create_api_key
from agenticos.tenancy import SESSION_KEY
from agents import services as agent_services
from agents.models import Run, RunStatus
from config.launcher import run_worker_command
from tests import factories
from tests.fakes import live_daphne
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.runner.conftest import actor_of

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_KEY = "sk-vault-held-provider-key-5f3c2a"
PROMPT_MARKER = "PROMPT-zebra-7781"
ANSWER_MARKER = "ANSWER-okapi-4410"
TOOL_ARG_MARKER = "Pacific/Chatham"
INSTRUCTIONS_MARKER = "INSTRUCTIONS-heron-2291"
METRICS_TOKEN = "live-metrics-token-0123456789abcdef"
SPAN_KIND_SERVER = 2


# ------------------------------------------------------------------ the OTLP/HTTP receiver


def _value(any_value) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def _attributes(key_values) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in key_values}


class OTLPReceiver:
    """POST /v1/traces, protobuf (gzip or not), as a collector receives it; every span kept, flattened."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.take(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, request: ExportTraceServiceRequest) -> None:
        found = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append({
                        "name": span.name, "kind": span.kind, "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(), "attributes": _attributes(span.attributes),
                        "events": [{"name": event.name, "attributes": _attributes(event.attributes)}
                                   for event in span.events],
                        "status": span.status.message, "resource": resource,
                    })
        with self._lock:
            self.requests += 1
            self.spans.extend(found)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.spans)

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()

    def wait_for(self, predicate, timeout: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({span["name"] for span in spans})
                raise AssertionError(f"the spans did not arrive within {timeout} s; received: {names}")
            time.sleep(0.1)

    def __enter__(self) -> OTLPReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------ the processes


def stack_env(receiver: OTLPReceiver | None, metrics_dir: Path, namespace: str = "obs", **extra: str) -> dict[str, str]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    env = {
        # Not the session worker's broker, nor its channel layer (nor another stack's of this module).
        "REDIS_NAMESPACE": f"agenticos-{worker}-{namespace}",
        "MODEL_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
        "RATE_LIMIT_RUN_PER_MINUTE": "1000",
        "METRICS_TOKEN": METRICS_TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "OTEL_SERVICE_NAME": "agenticos-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within a tenth of a second, not five
        **extra,
    }
    if receiver is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    return env


class RunsWorker(live_daphne.ServerProcess):
    """`celery worker -Q runs` as the launcher starts it, on this session's test database; started here, waited
    for by `wait_ready()` (so it imports the project while the processes started beside it do)."""

    stop_seconds = 45.0  # a worker finishes its runs first

    def __init__(self, env: dict[str, str], name: str) -> None:
        process_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                       "DATABASE_URL": live_daphne.test_database_url(), "PYTHONPATH": str(ROOT), **env}
        for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_CAPTURE_CONTENT"):
            if variable not in env:
                process_env.pop(variable, None)
        self.log_path = ROOT / "test-artifacts" / f"{name}-worker.log"
        self.log_path.parent.mkdir(exist_ok=True)
        command = [*run_worker_command(0, concurrency="4"), "-n", f"{name}@%h"]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=process_env, stdout=log,  # noqa: S603
                                            stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.log_path.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start; see {self.log_path}")
            time.sleep(0.2)



@pytest.fixture(scope="module")
def receiver():
    with OTLPReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def content_receiver():
    """The content-capturing stack's own: the other tests assert no content reached theirs."""
    with OTLPReceiver() as running:
        yield running


@pytest.fixture(scope="module")
def metrics_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("prometheus")


@pytest.fixture(scope="module")
def stacks(receiver, content_receiver, metrics_dir, tmp_path_factory, django_db_setup, django_db_blocker):
    """Two web processes and two `runs` workers, all started at once and stopped at once: `obs` exports no
    content (the launcher's default), `obs-content` is the operator's OTEL_CAPTURE_CONTENT=true. Each pair has
    its own Redis namespace, so a run asked of one web process is taken by that pair's worker only."""
    plain = stack_env(receiver, metrics_dir)
    content = stack_env(content_receiver, tmp_path_factory.mktemp("prometheus-content"), "obs-content")
    processes: list[Any] = []
    with django_db_blocker.unblock():
        try:
            web = live_daphne.Daphne("config.asgi:application", "obs", env=plain)
            processes.append(web)
            content_web = live_daphne.Daphne("config.asgi:application", "obs-content", env=content)
            processes.append(content_web)
            processes.append(RunsWorker(plain, "obs-traced"))
            processes.append(RunsWorker({**content, "OTEL_CAPTURE_CONTENT": "true"}, "obs-content"))
            for process in processes:
                process.wait_ready()
            yield {"obs": web.base, "obs-content": content_web.base}
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.stop()


@pytest.fixture(scope="module")
def web(stacks):
    return stacks["obs"]


@pytest.fixture(scope="module")
def content_web(stacks):
    return stacks["obs-content"]


@pytest.fixture
def provider():
    with FakeOpenAIServer(api_key=PROVIDER_KEY) as server:
        yield server


@pytest.fixture
def timekeeper(org, owner, provider):
    actor = actor_of(owner, org)
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=PROVIDER_KEY,
                                      base_url=provider.base_url)
    agent = agent_services.create_agent(actor=actor, name="Timekeeper", spec={
        "name": "Timekeeper", "instructions": f"Tell the time. {INSTRUCTIONS_MARKER}",
        "model_profile_id": str(profile.pk), "capabilities": [{"id": "charts"}]})
    agent_services.publish_agent(actor=actor, agent=agent)
    provider.queue(Reply.tool_call("create_chart", {"chart_type": "bar", "title": TOOL_ARG_MARKER, "x_values": ["now"],
                                                   "series": [{"name": "hours", "values": [23]}]}),
                   Reply.text(f"It is late there. {ANSWER_MARKER}"))
    return agent


def ask(base: str, key: str, agent) -> Any:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=90)
    return client.chat.completions.create(model=agent.slug, messages=[
        {"role": "user", "content": f"What time is it in the far east? {PROMPT_MARKER}"}])


def everything_said(spans: list[dict[str, Any]]) -> str:
    """Every attribute value, event attribute, status message and resource attribute, as one text."""
    return json.dumps([[span["attributes"], span["events"], span["status"], span["resource"]] for span in spans])


def of_trace(spans: list[dict[str, Any]], trace_id: str) -> list[dict[str, Any]]:
    return [span for span in spans if span["trace_id"] == trace_id]


def run_span(spans, run_id) -> dict[str, Any] | None:
    return next((span for span in spans if span["name"] == "agenticos.run"
                 and span["attributes"].get("agenticos.run.id") == str(run_id)), None)


def one_trace_arrived(run_id):
    """The run's span, and the request's and the task's in the same trace (each process exports on its own)."""

    def ready(spans) -> bool:
        span = run_span(spans, run_id)
        if span is None:
            return False
        names = [s["name"] for s in of_trace(spans, span["trace_id"])]
        return any("chat/completions" in name for name in names) and any(n.startswith("run/") for n in names)

    return ready


# ------------------------------------------------------------------ tests


WHAT_A_PROCESS_LOADED = """
import json, sys
import config.asgi  # the web process's entry point
from celery.signals import worker_init
from config.celery import app
worker_init.send(sender=None)  # what a worker's start sends
from django.conf import settings
from opentelemetry import trace
from pydantic_ai import Agent
from agenticos import telemetry
# (redis-py imports the SDK's metrics classes by itself once the SDK is installed: not ours, and no tracing.)
prefixes = ("opentelemetry.sdk.trace", "opentelemetry.instrumentation", "opentelemetry.exporter")
print(json.dumps({
    "enabled": telemetry.enabled(),
    "loaded": sorted(name for name in sys.modules if name.startswith(prefixes)),
    "middleware": [name for name in settings.MIDDLEWARE if "opentelemetry" in name],
    "agents_instrumented": bool(Agent._instrument_default),
    "provider": type(trace.get_tracer_provider()).__name__,
}))
"""


PROBES = {
    "off": {},
    # An endpoint nothing listens at: nothing is exported before the first span.
    "on": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    "disabled": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"},
}


@pytest.fixture(scope="module")
def what_a_process_loaded():
    """A fresh interpreter per environment of PROBES, all started at once (each imports the whole project)."""
    running = {}
    for name, otel in PROBES.items():
        env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
        env.update(DJANGO_SETTINGS_MODULE="config.settings", **otel)
        running[name] = subprocess.Popen([sys.executable, "-c", WHAT_A_PROCESS_LOADED], cwd=ROOT, env=env,  # noqa: S603
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: dict[str, dict[str, Any]] = {}

    def loaded(name: str) -> dict[str, Any]:
        if name not in said:
            stdout, stderr = running[name].communicate(timeout=180)
            assert running[name].returncode == 0, stderr
            said[name] = json.loads(stdout.strip().splitlines()[-1])
        return said[name]

    try:
        yield loaded
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
            process.communicate()


def test_without_an_endpoint_nothing_is_loaded_nor_set_up(what_a_process_loaded):
    off = what_a_process_loaded("off")
    assert off == {"enabled": False, "loaded": [], "middleware": [], "agents_instrumented": False,
                   "provider": "ProxyTracerProvider"}
    # The same process with an endpoint.
    on = what_a_process_loaded("on")
    assert on["enabled"] and on["agents_instrumented"] and on["provider"] == "TracerProvider"
    assert "opentelemetry.sdk.trace" in on["loaded"] and len(on["middleware"]) == 1


def test_otel_sdk_disabled_wins_over_an_endpoint(what_a_process_loaded):
    assert not what_a_process_loaded("disabled")["enabled"]


def test_a_run_span_is_nothing_without_tracing():
    from agenticos import telemetry

    assert not telemetry.enabled() and telemetry.current_context() is None
    with telemetry.run_span("some-run", None) as span:
        assert span is None and telemetry.trace_id(span) == ""



@pytest.mark.django_db(transaction=True)
def test_a_completion_is_one_trace_without_content_or_secrets(web, receiver, org, owner, timekeeper, provider):
    _, raw_key = create_api_key(actor=actor_of(owner, org), name="traced client")
    completion = ask(web, raw_key, timekeeper)
    assert ANSWER_MARKER in completion.choices[0].message.content
    run = Run.objects.get()
    spans = receiver.wait_for(one_trace_arrived(run.pk))

    assert run.status == RunStatus.COMPLETED
    assert len(run.trace_id) == 32 and int(run.trace_id, 16) != 0
    the_run = run_span(spans, run.pk)
    assert the_run["trace_id"] == run.trace_id  # the stored id is the trace's
    assert the_run["attributes"]["agenticos.surface"] == "api"
    assert the_run["attributes"]["agenticos.run.status"] == "completed"
    assert the_run["attributes"]["agenticos.organization.id"] == str(org.pk)

    trace = of_trace(spans, run.trace_id)
    by_name = {span["name"]: span for span in trace}
    request = next(span for span in trace if "chat/completions" in span["name"])
    assert request["kind"] == SPAN_KIND_SERVER and request["resource"]["agenticos.process"] == "web"
    assert request["attributes"].get("http.target", "/v1/chat/completions") == "/v1/chat/completions"
    # Celery carried the request's context into the task; the runner carried the task's into its loop.
    assert {"apply_async/agents.tasks.execute_run", "run/agents.tasks.execute_run"} <= set(by_name)
    assert by_name["run/agents.tasks.execute_run"]["resource"]["agenticos.process"] == "worker"
    assert the_run["parent_span_id"] == by_name["run/agents.tasks.execute_run"]["span_id"]
    # pydantic-ai's own spans: the two model requests and the tool call, under the run.
    chats = [span for span in trace if span["name"].startswith("chat ")]
    assert len(chats) == 2 and {span["scope"] for span in chats} == {"pydantic-ai"}
    tools = [span for span in trace if span["attributes"].get("gen_ai.tool.name") == "create_chart"]
    assert len(tools) == 1

    said = everything_said(receiver.snapshot())
    for secret in (PROVIDER_KEY, raw_key, raw_key.split(".")[-1], settings.SECRET_KEY, settings.VAULT_MASTER_KEY):
        assert secret not in said
    assert "Bearer" not in said
    for content in (PROMPT_MARKER, ANSWER_MARKER, TOOL_ARG_MARKER, INSTRUCTIONS_MARKER):
        assert content not in said, f"{content} reached a span"

    # The run's page in the console shows its trace id.
    client = Client()
    client.force_login(owner)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    page = client.get(f"/activity/runs/{run.pk}/")
    assert page.status_code == 200
    assert run.trace_id in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_content_is_in_the_spans_only_when_asked_for(content_web, content_receiver, org, owner, timekeeper):
    _, raw_key = create_api_key(actor=actor_of(owner, org), name="traced client")
    ask(content_web, raw_key, timekeeper)
    run = Run.objects.get()
    spans = content_receiver.wait_for(one_trace_arrived(run.pk))
    said = everything_said(of_trace(spans, run.trace_id))
    for content in (PROMPT_MARKER, ANSWER_MARKER, TOOL_ARG_MARKER, INSTRUCTIONS_MARKER):
        assert content in said, f"{content} is missing from the spans"
    for secret in (PROVIDER_KEY, raw_key):  # content, never credentials
        assert secret not in said


@pytest.mark.django_db(transaction=True)  # the web process reads this session's test database
def test_a_credential_in_a_path_or_query_never_reaches_a_span(web, receiver):
    hook_key = "hookkey-SECRET-5e1d09c7b2"
    response = httpx.post(f"{web}/api/v1/hooks/{hook_key}?token=query-SECRET-77aa", content=b"{}", timeout=30)
    assert response.status_code == 404
    spans = receiver.wait_for(lambda spans: any("hooks" in span["name"] for span in spans))
    request = next(span for span in spans if "hooks" in span["name"])
    assert request["attributes"].get("http.target") == "/api/v1/hooks/<str:key>"
    # The A2A server is served beside Django (config/asgi.py): its requests are traced too, query dropped.
    card = httpx.get(f"{web}/a2a/no-such-agent/.well-known/agent-card.json?key=query-SECRET-a2a", timeout=30)
    assert card.status_code == 401
    spans = receiver.wait_for(lambda spans: any("/a2a/" in json.dumps(span["attributes"]) for span in spans))
    a2a = next(span for span in spans if "/a2a/" in json.dumps(span["attributes"]))
    assert a2a["kind"] == SPAN_KIND_SERVER and a2a["resource"]["agenticos.process"] == "web"
    said = everything_said(receiver.snapshot())
    assert hook_key not in said and "query-SECRET-77aa" not in said and "query-SECRET-a2a" not in said


@pytest.mark.django_db(transaction=True)
def test_the_web_process_scrape_counts_what_the_worker_did(web, org, owner, timekeeper):
    """Two processes, one directory: the run was counted in the worker, the scrape is the web process's."""

    def scrape() -> dict[tuple[str, tuple], float]:
        response = httpx.get(f"{web}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
        assert response.status_code == 200
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(response.text) for s in family.samples}

    def value(found, name, **labels) -> float:
        return found.get((name, tuple(sorted(labels.items()))), 0.0)

    refused = httpx.get(f"{web}/metrics", timeout=30)
    assert refused.status_code == 401 and "agenticos_" not in refused.text
    before = scrape()
    _, raw_key = create_api_key(actor=actor_of(owner, org), name="counted client")
    ask(web, raw_key, timekeeper)
    after = scrape()
    assert value(after, "agenticos_runs_started_total", surface="api") - value(
        before, "agenticos_runs_started_total", surface="api") == 1
    assert value(after, "agenticos_runs_finished_total", surface="api", status="completed") - value(
        before, "agenticos_runs_finished_total", surface="api", status="completed") == 1
    assert value(after, "agenticos_tool_calls_total", capability="charts") - value(
        before, "agenticos_tool_calls_total", capability="charts") == 1
    assert value(after, "agenticos_runs_in_flight", surface="api") == 0
    assert ("agenticos_celery_queue_depth", (("queue", "runs"),)) in after
