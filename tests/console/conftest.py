"""Console fixtures: signed-in clients per role, the console routes, and (for browser tests) a live daphne
server serving HTTP + WebSocket on the test database with a real Celery worker in this process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests import factories

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(autouse=True)
def _console_urls(settings):
    settings.ROOT_URLCONF = "tests.console.urls"


@pytest.fixture
def client_as():
    def make(user, org=None) -> Client:
        from agenticos.tenancy import SESSION_KEY

        client = Client()
        client.force_login(user)
        if org is not None:
            session = client.session
            session[SESSION_KEY] = str(org.pk)
            session.save()
        return client

    return make


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}, {"id": "charts"}])


@pytest.fixture
def outsider_agent(outsider_org, outsider):
    return factories.published_agent(outsider_org, outsider, name="Foreign")


# ------------------------------------------------------------------ the live server


class _LiveServers:
    """The session's daphne subprocesses (a fork of this multi-threaded process could inherit held locks), one
    per environment a test gives them: a test that sets an environment variable daphne reads (monkeypatch.setenv
    before it asks for the server) gets a server started with exactly that environment, as when each test
    started its own, and the next test with the same environment reuses it. Starting daphne (importing the
    project) was seconds of every browser test. What a server keeps between tests is the database — emptied
    after each test — and Redis, flushed before each; per-process caches are of settings and environment,
    which are the key. A server that died is started again; at most a few stay alive."""

    KEEP = 3
    PER_TEST = frozenset({"PYTEST_CURRENT_TEST"})  # pytest's own, different for every test

    def __init__(self, database: str) -> None:
        self.database = database
        self.servers: dict[tuple, tuple[subprocess.Popen, str, Path]] = {}

    def url_for(self, environment: dict[str, str]) -> tuple[str, Path]:
        key = tuple(sorted((k, v) for k, v in environment.items() if k not in self.PER_TEST))
        server = self.servers.pop(key, None)
        if server is not None and not self._answers(server):
            self._stop(server)
            server = None
        if server is None:
            server = self._start(environment)
        self.servers[key] = server  # the most recently used last
        while len(self.servers) > self.KEEP:
            self._stop(self.servers.pop(next(iter(self.servers))))
        return server[1], server[2]

    def _start(self, environment: dict[str, str]) -> tuple[subprocess.Popen, str, Path]:
        from tests.fakes.ports import listening_socket

        with listening_socket() as sock:  # daphne serves on this very socket (--fd): no one can take the port
            port = sock.getsockname()[1]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            log_path = ARTIFACTS / f"daphne-{port}.log"
            with open(log_path, "w") as log:  # the child keeps its own copy of the descriptor
                process = subprocess.Popen(  # noqa: S603
                    [sys.executable, "-m", "daphne", "--fd", str(sock.fileno()), "tests.console.live_asgi:application"],
                    cwd=ROOT, env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings",
                                   "CONSOLE_LIVE_DATABASE": self.database},
                    pass_fds=[sock.fileno()], stdout=log, stderr=subprocess.STDOUT,
                )
        server = (process, f"http://127.0.0.1:{port}", log_path)
        # The socket accepts connections before daphne serves (it is listening already): wait for an answer.
        # Importing the project on a loaded machine is slow: the bound is generous, the wait ends on the answer.
        deadline = time.monotonic() + 120
        while not self._answers(server):
            if process.poll() is not None:
                raise RuntimeError(f"daphne exited; see {log_path}")
            if time.monotonic() > deadline:
                self._stop(server)
                raise RuntimeError(f"daphne did not answer within 120 s; see {log_path}")
            time.sleep(0.1)
        return server

    @staticmethod
    def _answers(server: tuple[subprocess.Popen, str, Path]) -> bool:
        import httpx

        if server[0].poll() is not None:
            return False
        try:
            return httpx.get(f"{server[1]}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    @staticmethod
    def _stop(server: tuple[subprocess.Popen, str, Path]) -> None:
        process = server[0]
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a loaded machine: a daphne still closing its sockets is not a failure
            process.kill()
            process.wait(timeout=20)

    def close(self) -> None:
        while self.servers:
            self._stop(self.servers.popitem()[1])


@pytest.fixture(scope="session")
def _live_servers(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        servers = _LiveServers(connection.settings_dict["NAME"])
    try:
        yield servers
    finally:
        servers.close()


@pytest.fixture
def live_server_url(request, transactional_db, celery_worker, _live_servers):
    """daphne serving HTTP + WebSocket on the test database, with the environment this test gave it."""
    url, log_path = _live_servers.url_for(dict(os.environ))
    request.node.stash[_DAPHNE_LOG] = (log_path, log_path.stat().st_size)
    return url


_DAPHNE_LOG = pytest.StashKey[tuple[Path, int]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """What the shared daphne said during a failed test, in its report (as when the test had its own)."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or _DAPHNE_LOG not in item.stash:
        return
    log_path, start = item.stash[_DAPHNE_LOG]
    with open(log_path, errors="replace") as log:
        log.seek(start)
        said = log.read()
    if said.strip():
        report.sections.append(("daphne", said[-20000:]))


class _SessionChromium:
    """One Playwright driver and one Chromium for the session; each test gets the browser with no context of an
    earlier test left open (its pages and contexts are closed after it), so cookies and storage start empty
    as with a browser of its own. Starting the driver and the browser was ~4 s of every browser test on this
    machine under load.

    Playwright's sync API marks its event loop as running on this thread between its calls (it runs the loop
    in a greenlet). Between browser tests the mark is lifted, so the suite's async tests can run their own
    loops; a browser test puts it back before its first call. asyncio._set_running_loop is the same private
    hook Playwright itself uses for this (playwright/_impl/_greenlets.py)."""

    def __init__(self) -> None:
        self.manager: Any = None
        self.instance: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def lend(self) -> Any:
        if self.manager is None:
            from playwright.sync_api import sync_playwright

            self.manager = sync_playwright()
            playwright = self.manager.start()
            self.loop = self.manager._loop
            self._launch(playwright)
        else:
            asyncio._set_running_loop(self.loop)
            if not self.instance.is_connected():  # a test's browser crashed: the next one gets a new one
                self._launch(self.manager._playwright)
        return self.instance

    def _launch(self, playwright: Any) -> None:
        # Playwright's 30 s default was too short for a launch on a loaded 2-core machine: a bound, not a wait.
        self.instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                                   timeout=120_000)

    def give_back(self) -> None:
        try:
            if self.instance.is_connected():
                for context in list(self.instance.contexts):
                    context.close()
        finally:
            asyncio._set_running_loop(None)

    def close(self) -> None:
        if self.manager is None:
            return
        asyncio._set_running_loop(self.loop)
        try:
            if self.instance.is_connected():
                self.instance.close()
        finally:
            self.manager.__exit__(None, None, None)
            asyncio._set_running_loop(None)


@pytest.fixture(scope="session")
def _session_chromium():
    chromium = _SessionChromium()
    try:
        yield chromium
    finally:
        chromium.close()


@pytest.fixture
def browser(monkeypatch, _session_chromium):
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (make browser)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    instance = _session_chromium.lend()
    try:
        yield instance
    finally:
        _session_chromium.give_back()


def make_turn(org, user, agent, *, conversation=None, prompt="Chart my sales", tools=("create_chart",),
              status="completed", cost="0.0012"):
    """A finished web turn written the way the runner writes it: the person's message, one assistant message
    with parts in streamed order, its tool calls, and the run's tokens and cost."""
    from decimal import Decimal

    from agents.models import Conversation, Environment, Message, Run, ToolCall
    from agents.runs import start_run

    version = Environment.objects.get(agent=agent, name="production").version
    if conversation is None:
        conversation = Conversation.objects.create(organization=org, agent=agent, owner=user, title=prompt)
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=user, acting_role="owner",
                    conversation=conversation, enqueue=False)
    parts = [{"type": "text", "text": "Let me look."}]
    parts += [{"type": "tool", "tool_call_id": f"call_{run.pk.hex[:6]}_{i}"} for i in range(len(tools))]
    parts += [{"type": "text", "text": "Done."}]
    message = Message.objects.create(conversation=conversation, run=run, version=version, role="assistant",
                                     author_label=agent.name, content="Let me look.Done.", parts=parts)
    for i, name in enumerate(tools):
        ToolCall.objects.create(run=run, message=message, tool_call_id=f"call_{run.pk.hex[:6]}_{i}",
                                tool_name=name, args={"title": "Sales"}, result={"ok": True}, status="ok")
    Run.objects.filter(pk=run.pk).update(status=status, input_tokens=120, output_tokens=30, cost_usd=Decimal(cost))
    run.refresh_from_db()
    return conversation, run
