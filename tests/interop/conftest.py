"""A real daphne (the project's ASGI app, started as the launcher starts it) on this session's test database,
the in-process Celery worker running runs on scripted models, and API keys for the organization and an
outsider."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from agenticos.launcher import daphne_command
from agenticos.services import create_api_key
from tests.fakes.ports import daphne_on_socket, listening_socket
from tests.runner.conftest import actor_of


def _test_database_url() -> str:
    from urllib.parse import quote

    from django.db import connection

    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    host = s.get("HOST") or ""
    if host.startswith("/"):
        return f"postgres://{auth}@/{s['NAME']}?host={host}&port={s.get('PORT') or 5432}"
    return f"postgres://{auth}@{host}:{s.get('PORT') or 5432}/{s['NAME']}"


@contextlib.contextmanager
def serving_daphne(database_url: str):
    root = Path(__file__).resolve().parents[2]
    sock = listening_socket()
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agenticos.settings", "DATABASE_URL": database_url,
           "PYTHONPATH": str(root), "RATE_LIMIT_RUN_PER_MINUTE": "1000"}
    log_path = root / "test-artifacts" / f"interop-daphne-{port}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = open(log_path, "w")  # noqa: SIM115 — closed after the server stops
    command = daphne_on_socket(daphne_command("agenticos.asgi:application", port), sock)
    with sock:  # daphne holds its own copy of the socket
        process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,  # noqa: S603
                                   pass_fds=[sock.fileno()])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {log_path}")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        database_url = _test_database_url()
    with serving_daphne(database_url) as base:
        yield base


def api_key(user, org) -> str:
    _, raw = create_api_key(actor=actor_of(user, org), name="openai client")
    return raw
