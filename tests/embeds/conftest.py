"""Embeds fixtures: the test URLconf/ASGI app, published agents, sockets through the full ASGI stack,
and (for end-to-end tests) a real Celery worker running the real runner on the offline demo model."""

from __future__ import annotations

import asyncio
import contextlib
import json
from urllib.parse import urlencode

import pytest
from channels.testing import WebsocketCommunicator

from tests import factories

# Imported while collecting, not in a test: the import runs django.setup(), whose logging configuration
# replaces the root logger's handlers — caplog's among them, for the test that happened to import it first.
from tests.embeds.asgi_app import application as _asgi_application
from tests.fakes import live_daphne

FRONTEND = "https://app.example.com"
SHOP = "https://shop.example.com"



@pytest.fixture(autouse=True, scope="session")
def _embeds_chromium(_session_chromium):
    """The browser tests here borrow the process's Chromium inside a test (`lent_chromium`), not through a
    fixture: the session fixture is made alive for them (nothing is launched until one borrows it)."""
    return _session_chromium


@pytest.fixture(autouse=True)
def _embeds_settings(settings):
    settings.ROOT_URLCONF = "tests.embeds.urls"
    settings.FRONTEND_URL = FRONTEND
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 1000
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 1000
    settings.EMBED_SLOW_READER_SECONDS = 30
    settings.MEDIA_ROOT = str(settings.DATA_DIR / "media-test-embeds")


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, name="Shop Helper")


@pytest.fixture
def widget(agent, builder):
    return factories.embed(agent, kind="widget", created_by=builder, title="Ask us")


@pytest.fixture
def page(agent, builder):
    return factories.embed(agent, kind="page", created_by=builder)


@pytest.fixture
def dispatched(monkeypatch):
    """Runs are created for real but not executed: the test publishes the runner's frames itself.
    (Executing them would race the frames the test sends.) Returns the ids that would have run."""
    ids: list[str] = []
    monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: ids.append(str(run_id)))
    return ids


class SlowReaderCommunicator(WebsocketCommunicator):
    """A client that does not read, at the ASGI level: the server's `send` does not complete while the
    client's buffer is full (the backpressure a server such as uvicorn applies) — a bounded output queue."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._output_queue = asyncio.Queue(maxsize=1)


def application():
    return _asgi_application


def ws_path(key: str, **query: str) -> str:
    path = f"/api/v1/embed/{key}/ws"
    return f"{path}?{urlencode(query)}" if query else path


def communicator(key: str, *, origin: str | None = SHOP, address: str = "203.0.113.7", cls=WebsocketCommunicator, **query):
    headers = [(b"origin", origin.encode())] if origin is not None else []
    comm = cls(application(), ws_path(key, **query), headers=headers)
    comm.scope["client"] = (address, 50000)
    return comm


async def connect_and_close_code(comm) -> int | None:
    """Connect; return the close code when the server closes, or None when it stays open (then disconnect)."""
    connected, _ = await comm.connect(timeout=3)
    assert connected  # refusals are delivered after accept, so a client can read the code
    message = await comm.receive_output(timeout=3)
    if message["type"] == "websocket.close":
        await comm.wait(timeout=3)  # a refused socket's consumer ends by itself
        return message.get("code")
    await comm.disconnect()
    return None


async def next_frame(comm, timeout: float = 3) -> dict:
    message = await comm.receive_output(timeout=timeout)
    assert message["type"] == "websocket.send", message
    return json.loads(message["text"])


async def frames_until_end(comm, timeout: float = 10) -> list[dict]:
    out: list[dict] = []
    while True:
        frame = await next_frame(comm, timeout)
        out.append(frame)
        if frame["type"] in ("complete", "error"):
            return out


async def wait_for(predicate, timeout: float = 5):
    from channels.db import database_sync_to_async

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await database_sync_to_async(predicate)()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


@contextlib.contextmanager
def serving_daphne(slow_reader_seconds: int | None = None):
    """The test ASGI app (tests.embeds.asgi_app) in a real daphne against this session's test database and
    Redis. Yields its base URL, which is also its FRONTEND_URL, so a hosted page is admitted from it."""
    env = {"EMBEDS_TEST_URLCONF": "1", "DEBUG": "true",
           **({"EMBED_SLOW_READER_SECONDS": str(slow_reader_seconds)} if slow_reader_seconds else {})}
    with live_daphne.serving_daphne("tests.embeds.asgi_app:application", "embeds", env=env, frontend_is_self=True,
                                    slow_reader_seconds=slow_reader_seconds) as base:
        yield base


@pytest.fixture(scope="session")
def daphne_server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), serving_daphne() as base:
        yield base
