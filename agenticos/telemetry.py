"""OpenTelemetry traces: off unless an OTLP endpoint is configured, and then every process exports spans.

`setup(process)` is called by each entry point (asgi.py for daphne, the Celery worker/beat init signals,
manage.py). Without OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) it returns False
having imported nothing: no tracer provider, exporter or instrumentation, no middleware; the runner's hooks
below are a flag check.

With an endpoint:
- HTTP requests: Django's instrumentation (it serves daphne's ASGI requests too, /v1/ and /mcp included).
  Every URL attribute is rewritten to the matched route before the span ends: paths carry credentials
  (`/api/v1/hooks/<key>`, `/link/<token>`, embed keys) and query strings may.
- Celery: its instrumentation, which carries the trace from the request that enqueued a task into the task.
- Runs: one `agenticos.run` span per execution (the runner hands the caller's context to its loop thread),
  its trace id stored on the run (`Run.trace_id`).
- Model requests and tool calls: pydantic-ai's own instrumentation, without prompts, answers, tool
  arguments or results unless OTEL_CAPTURE_CONTENT=true.
Secrets never become attributes: no header is captured unless the operator lists one (and the usual
credential headers are sanitized then), the vault's values never reach a span (tool arguments are content),
and model clients are not instrumented at the HTTP level (their Authorization header stays out).
"""

from __future__ import annotations

import logging
import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

logger = logging.getLogger(__name__)

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
# Headers that must never appear, should an operator turn on header capture (OTEL_INSTRUMENTATION_HTTP_CAPTURE_*).
_SANITIZED_HEADERS = "authorization,cookie,set-cookie,x-api-key,x-agenticos-signature,x-csrftoken,proxy-authorization"
# URL attributes of the old and the stable HTTP semantic conventions.
_URL_ATTRIBUTES = ("http.url", "http.target", "url.full", "url.path", "url.query")

_enabled_in: int | None = None  # the pid that set up tracing (a forked child inherits it: the SDK re-arms its thread)
_capture_content = False


def endpoint_configured() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES)


def enabled() -> bool:
    return _enabled_in is not None


def capture_content() -> bool:
    return _capture_content


def _flag(name: str) -> bool:
    raw = os.environ.get(name, "false").strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off", ""}:
        return False
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use true or false.")


def setup(process: str) -> bool:
    """Start exporting spans from this process when an endpoint is configured; True when tracing is on.
    Idempotent. Must run before Django loads its middleware (asgi.py calls it before get_asgi_application)."""
    global _enabled_in, _capture_content
    if _enabled_in is not None:
        return True
    from django.conf import settings

    settings.DEBUG  # noqa: B018 — loading the settings reads .env into the environment, OTEL_* included
    if not endpoint_configured():
        return False
    _capture_content = _flag("OTEL_CAPTURE_CONTENT")
    os.environ.setdefault("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SANITIZE_FIELDS", _SANITIZED_HEADERS)
    # Probes and scrapes would be most of the spans and tell nothing.
    os.environ.setdefault("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", r"/healthz(\?|$),/metrics(\?|$),/static/")

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {"agenticos.process": process}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "agenticos"
    provider = TracerProvider(resource=Resource.create(attributes))
    # The exporter reads the endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _instrument_django()
    _instrument_celery()
    _instrument_agents()
    _enabled_in = os.getpid()
    logger.info("OpenTelemetry: exporting spans of %s (content %s)", process,
                "captured" if _capture_content else "left out")
    return True


def flush(timeout_millis: int = 5000) -> None:
    """Export what is buffered (a worker shutting down, a test waiting for its spans)."""
    if _enabled_in is None:
        return
    from opentelemetry import trace

    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush(timeout_millis)


# ------------------------------------------------------------------ instrumentation


def _instrument_django() -> None:
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    instrumentor = DjangoInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument(response_hook=_route_only_urls)


def _route_only_urls(span, request, response) -> None:
    """Replace every URL attribute by the route that matched (`/api/v1/hooks/<str:key>`), query dropped."""
    if not span.is_recording():
        return
    match = getattr(request, "resolver_match", None)
    route = "/" + match.route if match is not None and match.route else "(unmatched)"
    present = set(getattr(span, "attributes", None) or ())
    for name in _URL_ATTRIBUTES:
        if name in present:
            span.set_attribute(name, "" if name == "url.query" else route)


def traced_asgi(app: Any) -> Any:
    """An HTTP app served beside Django (the A2A server, config/asgi.py) with request spans like Django's:
    its URL attributes are the path, query dropped. The app itself when tracing is off."""
    if _enabled_in is None:
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(app, server_request_hook=_path_only_urls, exclude_spans=["receive", "send"])


def _path_only_urls(span, scope) -> None:
    if span is None or not span.is_recording():
        return
    present = set(getattr(span, "attributes", None) or ())
    for name in _URL_ATTRIBUTES:
        if name in present:
            span.set_attribute(name, "" if name == "url.query" else str(scope.get("path", "")))


def _instrument_celery() -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor

    instrumentor = CeleryInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()


def _instrument_agents() -> None:
    """pydantic-ai's spans for every agent this process builds (the runner's, and the knowledge helpers')."""
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    Agent.instrument_all(InstrumentationSettings(
        include_content=_capture_content,
        include_binary_content=_capture_content,
        # Tool definitions (custom tools' descriptions and schemas) are the tenant's configuration.
        include_model_request_parameters=_capture_content,
    ))


# ------------------------------------------------------------------ the runner's hooks


def current_context() -> Any:
    """The caller's trace context, for the runner to continue on its loop thread (None when tracing is off)."""
    if _enabled_in is None:
        return None
    from opentelemetry import context

    return context.get_current()


def run_span(run_id: Any, parent: Any) -> AbstractContextManager[Any]:
    """The span one execution of a run lives in, child of `parent` (the context of the task that started it)."""
    if _enabled_in is None:
        return nullcontext(None)
    from opentelemetry import trace

    return trace.get_tracer("agenticos").start_as_current_span(
        "agenticos.run", context=parent, attributes={"agenticos.run.id": str(run_id)})


def trace_id(span: Any) -> str:
    """The span's trace id as 32 hex digits (how Jaeger and Tempo spell it); "" without a span."""
    if span is None:
        return ""
    context = span.get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


def describe_run(span: Any, execution: Any) -> None:
    """What the run span says once the execution ended: ids, surface and status — never content."""
    run = getattr(execution, "run", None)
    if span is None or run is None or not span.is_recording():
        return
    span.set_attributes({
        "agenticos.organization.id": str(run.organization_id),
        "agenticos.agent.id": str(run.agent_id),
        "agenticos.version.id": str(run.version_id),
        "agenticos.surface": run.surface,
        "agenticos.run.status": getattr(execution, "ended_status", "") or "unknown",
    })
    first = getattr(run, "trace_id", "")
    if first and first != trace_id(span):
        # A resumed run: its trace id on the row is the first execution's.
        span.set_attribute("agenticos.run.first_trace_id", first)
