"""Console fixtures: signed-in clients per role, the console routes, and (for browser tests) a live daphne
server serving HTTP + WebSocket on the test database with a real Celery worker in this process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.test import Client

from tests import factories
from tests.browser_servers import ARTIFACTS, CHROMIUM, ROOT  # noqa: F401  (ROOT, ARTIFACTS: used by test modules)


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
                                     author_label=agent.name, content="Let me look.Done.", parts=parts,
                                     parent_id=run.user_message_id)  # it answers the person (agents.branches)
    for i, name in enumerate(tools):
        ToolCall.objects.create(run=run, message=message, tool_call_id=f"call_{run.pk.hex[:6]}_{i}",
                                tool_name=name, args={"title": "Sales"}, result={"ok": True}, status="ok")
    Run.objects.filter(pk=run.pk).update(status=status, input_tokens=120, output_tokens=30, cost_usd=Decimal(cost))
    run.refresh_from_db()
    return conversation, run
