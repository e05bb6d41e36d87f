"""Console fixtures: signed-in clients per role, the console routes, and (for browser tests) a live daphne
server serving HTTP + WebSocket on the test database with a real Celery worker in this process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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


@pytest.fixture
def live_server_url(transactional_db, celery_worker):
    """daphne in a subprocess (a fork of this multi-threaded process could inherit held locks)."""
    from tests.fakes.ports import listening_socket

    with listening_socket() as sock:  # daphne serves on this very socket (--fd): no one can take the port
        port = sock.getsockname()[1]
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "daphne", "--fd", str(sock.fileno()), "tests.console.live_asgi:application"],
            cwd=ROOT, env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                           "CONSOLE_LIVE_DATABASE": connection.settings_dict["NAME"]},
            pass_fds=[sock.fileno()],
        )
    try:
        # The socket accepts connections before daphne serves (it is listening already): wait for an answer.
        import httpx

        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("daphne exited")
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("daphne did not answer within 60 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a loaded machine: a daphne still closing its sockets is not a failure
            process.kill()
            process.wait(timeout=20)


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


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
