"""Evaluation tests: the real OpenAI client against the local fake server, with replies scripted per case.

Cases run concurrently, so one shared reply queue would hand one case's reply to another. `ScriptedOpenAI`
(the fake server of tests/fakes, unchanged on the wire) picks each request's reply by the case marker
`[case:<name>]` its messages carry; the judge's requests (pydantic-evals' grading prompt) by `judge:<name>`.
It also counts the chat requests in flight, holding each for `hold` seconds, to prove a concurrency bound.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from agents import services as agent_services
from evals import services as eval_services
from evals.models import SuiteRun
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.runner.conftest import actor_of

MARKER = re.compile(r"\[case:([\w-]+)\]")
KEY = "sk-eval-provider-key-000111"


class ScriptedOpenAI(FakeOpenAIServer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scripts: dict[str, deque[Reply]] = {}
        self.hold = 0.0
        self.in_flight = 0
        self.peak = 0
        self._local = threading.local()

    def script(self, key: str, *replies: Reply) -> None:
        with self._lock:
            self.scripts.setdefault(key, deque()).extend(replies)

    def record(self, request) -> None:
        super().record(request)
        self._local.request = request  # the handler's thread asks next_reply right after

    @staticmethod
    def key_for(body: dict[str, Any]) -> str | None:
        messages = body.get("messages") or []
        text = " ".join(str(m.get("content")) for m in messages)
        judge = "grading output" in text  # pydantic-evals' judge prompt (system or developer message)
        for message in messages:
            if message.get("role") == "user":
                found = MARKER.search(str(message.get("content")))
                if found:
                    return ("judge:" if judge else "") + found.group(1)
        found = MARKER.search(text)
        return (("judge:" if judge else "") + found.group(1)) if found else None

    def next_reply(self, route: str) -> Reply | None:
        request = getattr(self._local, "request", None)
        if route != "chat" or request is None or not isinstance(request.json, dict):
            return super().next_reply(route)
        key = self.key_for(request.json)
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            queue = self.scripts.get(key or "")
            reply = queue.popleft() if queue else None
        try:
            if self.hold:
                time.sleep(self.hold)
        finally:
            with self._lock:
                self.in_flight -= 1
        return reply if reply is not None else super().next_reply(route)

    def requests_for(self, key: str) -> list[dict[str, Any]]:
        return [r.json for r in self.chat_requests if isinstance(r.json, dict) and self.key_for(r.json) == key]


@pytest.fixture
def scripted_openai(settings) -> Iterator[ScriptedOpenAI]:
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with ScriptedOpenAI() as server:
        yield server


def judge_says(passed: bool, reason: str = "Judged.") -> Reply:
    """pydantic-evals' judge answers through its output tool."""
    return Reply.tool_call("final_result", {"reason": reason, "pass": passed, "score": 1.0 if passed else 0.0})


def openai_profile(org, server: ScriptedOpenAI, label: str = "Scripted"):
    return factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label=label, api_key=KEY,
                                   base_url=server.base_url)


def make_agent(org, user, server: ScriptedOpenAI, *, publish: bool = True, **spec: Any):
    actor = actor_of(user, org)
    profile = openai_profile(org, server)
    data = {"name": spec.pop("name", "Evaluated"), "instructions": spec.pop("instructions", "Be brief."),
            "model_profile_id": str(profile.pk), **spec}
    agent = agent_services.create_agent(actor=actor, name=data["name"], spec=data)
    version = agent_services.publish_agent(actor=actor, agent=agent) if publish else None
    return agent, version, profile


def suite_with(org, user, agent, cases: list[dict[str, Any]], **fields: Any):
    return eval_services.create_suite(actor=actor_of(user, org), agent=agent,
                                      data={"name": fields.pop("name", "Smoke"), "cases": cases, **fields})


def wait_for(suite_run: SuiteRun, timeout: float = 90.0) -> SuiteRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        suite_run.refresh_from_db()
        if suite_run.is_finished:
            return suite_run
        time.sleep(0.2)
    raise AssertionError(f"suite run still {suite_run.status} after {timeout} s")


def run_suite(org, user, suite, target: Any = "draft") -> SuiteRun:
    """Start through the service (the driver is a Celery task on the default queue) and wait for it."""
    suite_run = eval_services.start_suite_run(actor=actor_of(user, org), suite=suite, target=target)
    return wait_for(suite_run)


@pytest.fixture(autouse=True)
def _suites_wait_for_a_worker_only_when_one_is_asked_for(request, monkeypatch):
    """As with runs (tests/conftest.py): without the worker fixture a started suite stays queued, and no
    message is left in the broker for a later test's worker to find."""
    if not {"celery_worker", "celery_worker_session"} & set(request.fixturenames):
        monkeypatch.setattr("evals.tasks.run_suite.delay", lambda suite_run_id: None)
        monkeypatch.setattr("evals.tasks.run_replay_set.delay", lambda replay_set_id: None)
