"""Schemathesis over /api/schema/, in process through the WSGI app, authenticated as an owner whose
organization has a published agent: 0 server errors, 0 responses outside the schema, 0 non-JSON answers
on /api/.

In the suite it is bounded (FUZZ_EXAMPLES per operation and mode, derandomized, so it is the same run every
time). `make fuzz` runs this file with more examples and a random seed, and prints the figures.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agenticos import services
from evals import services as evals
from tests import factories
from tests.api.conftest import actor_of
from triggers import services as triggers

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "3"))
SEED = os.environ.get("FUZZ_SEED")  # unset: derandomized, the same cases on every run
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Operations whose documented answer is not JSON (a file's bytes).
NOT_JSON = {"GET /api/v1/conversations/{conversation_id}/workspace/raw"}
# Known failures that belong to another item of issue 16, fixed separately: (operation, failure kind) ->
# the item. Still counted and printed, not asserted. Remove an entry when its fix lands; never a blanket one.
KNOWN: dict[tuple[str, str], str] = {}  # (operation, failure kind) -> why it is tolerated for now: none


@dataclass
class Figures:
    requests: int = 0
    by_status: Counter = field(default_factory=Counter)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)  # (operation, kind) -> first example
    seconds: Counter = field(default_factory=Counter)  # per operation, to say where the time goes

    def kinds(self) -> Counter:
        return Counter(kind for _, kind in self.failures)


def _documented_media(case, status: int) -> set[str]:
    """The media types the operation documents for this status (a YAML export, a CSV or JSON Lines file)."""
    responses = case.operation.definition.raw.get("responses", {})
    return set(responses.get(str(status), {}).get("content", {}))


def _not_json(case, response) -> str | None:
    if not case.path.startswith("/api/") or f"{case.method.upper()} {case.path}" in NOT_JSON:
        return None
    if not response.content:
        return None if response.status_code in (204, 304) else "empty body"
    media = response.headers.get("content-type", [""])[0]
    if media.split(";")[0].strip() in _documented_media(case, response.status_code) - {"application/json"}:
        return None  # a type the operation says it answers (content_type_conformance checks the rest)
    return None if media.split(";")[0].strip().endswith(("/json", "+json")) else \
        f"non-JSON response ({media or 'no content type'})"


class DjangoApp(WSGIHandler):
    """The project's WSGI handler, minus the signal that closes the connection at the end of a request:
    the test's transaction lives on that connection (django.test.Client does the same)."""


@pytest.fixture
def wsgi_app(db, monkeypatch):
    # No worker executes runs here (tests/conftest.py): POST agents/{id}/run would wait its full 300 s for
    # a last frame that never comes. One second still walks the wait path and its answer.
    monkeypatch.setattr("agents.api_runs.WAIT_TIMEOUT_SECONDS", 1)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield DjangoApp()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def owner_key(org, owner, published_agent) -> str:
    _key, raw = services.create_api_key(actor=actor_of(owner, org), name="fuzz")
    return raw


@pytest.fixture
def known_ids(org, owner, published_agent, demo_profile) -> dict[str, dict[str, str]]:
    """Ids of real objects of the owner's organization, by the path's first segment and parameter name:
    the third pass reaches past the 404 of a random id into each operation's own code."""
    membership = owner.memberships.get(organization=org)
    actor = actor_of(owner, org)
    # An event trigger (it has a signing secret to rotate) and an evaluation suite with a case and a run.
    trigger, _secret = triggers.create_trigger(actor=actor, agent=published_agent, data={
        "name": "On order", "kind": "event", "prompt": "A new order arrived."})
    suite = evals.create_suite(actor=actor, agent=published_agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "Say hello.", "checks": [{"kind": "contains", "value": "hello"}]}]})
    suite_run = evals.start_suite_run(actor=actor, suite=suite, target="production", enqueue=False)
    by_segment = {
        "agents": str(published_agent.pk), "model-profiles": str(demo_profile.pk),
        "members": str(membership.pk), "secrets": str(factories.secret(org).pk),
        "collections": str(factories.collection(org).pk), "embeds": str(factories.embed(published_agent).pk),
        "triggers": str(trigger.pk),
    }
    return {
        segment: {"id": value, "agent_id": str(published_agent.pk), "user_id": str(owner.pk), "number": "1",
                  "name": "production", "embed_id": value, "trigger_id": value, "suite_id": str(suite.pk),
                  "key": "json_webhook"}
        for segment, value in by_segment.items()
    } | {"tool-templates": {"key": "json_webhook"}, "evals": {"run_id": str(suite_run.pk)}}


def _known_path_parameters(operation, known_ids: dict[str, dict[str, str]]) -> dict[str, str] | None:
    segment = operation.path.removeprefix("/api/v1/").split("/")[0]
    names = re.findall(r"{(\w+)}", operation.path)
    values = known_ids.get(segment, {})
    if not names or not all(name in values for name in names):
        return None
    return {name: values[name] for name in names}


def _fuzz_operation(operation, mode: GenerationMode, call, figures: Figures, path_parameters=None) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)
    def run(case) -> None:
        response = call(case)
        figures.requests += 1
        figures.by_status[response.status_code] += 1
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as group:
            for failure in group.exceptions:
                _record(figures, label, failure, case)
        except Failure as failure:
            _record(figures, label, failure, case)
        problem = _not_json(case, response)
        if problem:
            figures.failures.setdefault((label, "non_json_response"), f"{problem}: {case.as_curl_command()}")

    if SEED is not None:
        run = seed(int(SEED))(run)
    started = time.monotonic()
    run()
    figures.seconds[label] += time.monotonic() - started


def _record(figures: Figures, label: str, failure: Failure, case) -> None:
    kind = type(failure).__name__
    figures.failures.setdefault((label, kind), f"{failure.title}: {failure.message[:300]} | {case.as_curl_command()}")


def test_the_api_answers_every_operation_inside_its_schema(wsgi_app, owner_key, known_ids, capsys):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app)
    headers = {"Authorization": f"Bearer {owner_key}"}

    def call(case):
        # A savepoint rolled back after each call: examples stay independent, and a statement the database
        # refuses does not poison the test's transaction.
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        return response

    figures = Figures()
    started = time.monotonic()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 100
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz_operation(operation, mode, call, figures)
        known = _known_path_parameters(operation, known_ids)
        if known is not None:
            _fuzz_operation(operation, GenerationMode.POSITIVE, call, figures, path_parameters=known)

    report = [f"fuzz: {len(operations)} operations, {figures.requests} requests in {time.monotonic() - started:.0f} s, "
              f"{EXAMPLES} examples per operation and pass (positive, negative, positive on real ids), statuses {dict(sorted(figures.by_status.items()))}",
              f"fuzz: failures by kind {dict(figures.kinds()) or 0}"]
    report.append("fuzz: slowest " + ", ".join(f"{op} {sec:.1f}s" for op, sec in figures.seconds.most_common(8)))
    report += [f"  {operation} [{kind}]{' (known: ' + KNOWN[operation, kind] + ')' if (operation, kind) in KNOWN else ''}"
               f" {example}" for (operation, kind), example in sorted(figures.failures.items())]
    with capsys.disabled():
        print("\n" + "\n".join(report))
    assert [failure for failure in figures.failures if failure not in KNOWN] == [], "\n".join(report)
