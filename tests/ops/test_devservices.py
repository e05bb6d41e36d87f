"""The embedded PostgreSQL and Redis: starting twice is harmless, and a killed server comes back.

These tests start their own servers in a temporary data directory (never the test servers the rest of
the suite uses) and stop them at the end.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest
import redis

from config import devservices

pytestmark = pytest.mark.embedded_services


def _connect_postgres(url: str) -> int:
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), connect_timeout=10) as conn:
        return conn.execute("SELECT 1").fetchone()[0]


def _connect_redis(url: str) -> bool:
    return bool(redis.Redis.from_url(url, socket_timeout=5).ping())


def _wait_dead(pid: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A killed child of ours would linger as a zombie; these servers are daemons, not our children.
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} did not die")


def _postmaster_pid(base: Path) -> int:
    return int((base / "pg" / "postmaster.pid").read_text().splitlines()[0])


def _redis_pid(base: Path) -> int:
    return int((base / "redis" / "redis.pid").read_text().strip())


@pytest.fixture
def base(tmp_path, monkeypatch):
    # The servers must be started by devservices, not taken from the environment.
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    path = tmp_path / "data"
    path.mkdir()
    yield path
    devservices.stop(path)


def test_starting_twice_reuses_the_running_servers(base):
    first = devservices.start(base)
    pg_pid, redis_pid = _postmaster_pid(base), _redis_pid(base)
    second = devservices.start(base)

    assert second == first
    assert (_postmaster_pid(base), _redis_pid(base)) == (pg_pid, redis_pid)
    assert _connect_postgres(second["DATABASE_URL"]) == 1
    assert _connect_redis(second["REDIS_URL"])
    assert devservices.read_services_env(base) == second


def test_killed_servers_are_recovered_on_the_next_start(base):
    urls = devservices.start(base)
    redis.Redis.from_url(urls["REDIS_URL"]).set("survives-a-restart?", "no")
    pg_pid, redis_pid = _postmaster_pid(base), _redis_pid(base)

    os.kill(redis_pid, signal.SIGKILL)
    os.kill(pg_pid, signal.SIGKILL)
    _wait_dead(redis_pid)
    _wait_dead(pg_pid)
    assert (base / "pg" / "postmaster.pid").exists()  # the stale state a killed run leaves behind
    assert (base / "redis" / "redis.sock").exists()

    urls = _start_when_the_old_backends_are_gone(base)
    assert _postmaster_pid(base) != pg_pid
    assert _redis_pid(base) != redis_pid
    assert _connect_postgres(urls["DATABASE_URL"]) == 1
    assert _connect_redis(urls["REDIS_URL"])


def _start_when_the_old_backends_are_gone(base: Path) -> dict[str, str]:
    """After a kill -9 of the postmaster its backends exit on their own, but not instantly; until they
    do, PostgreSQL itself refuses to start over their shared memory. A real operator retries; so do we."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return devservices.start(base)
        except devservices.ServiceError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_a_stopped_server_pair_starts_again_with_its_data(base):
    urls = devservices.start(base)
    with psycopg.connect(urls["DATABASE_URL"].replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    devservices.stop(base)
    assert not (base / "pg" / "postmaster.pid").exists()
    assert not (base / "redis" / "redis.sock").exists()

    urls = devservices.start(base)
    with psycopg.connect(urls["DATABASE_URL"].replace("postgres://", "postgresql://", 1)) as conn:
        assert conn.execute("SELECT v FROM kept").fetchone()[0] == 42
