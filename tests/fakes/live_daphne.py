"""A real daphne in a subprocess, started the way the launcher starts it (config.launcher.daphne_command),
serving on a socket the test already holds (tests/fakes/ports.py), against this session's test database."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx

from config.launcher import daphne_command
from tests.fakes.ports import daphne_on_socket, listening_socket

ROOT = Path(__file__).resolve().parents[2]


def test_database_url() -> str:
    """The DSN of the test database this session's Django connection uses (a subprocess must open the same)."""
    from django.db import connection

    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    host = s.get("HOST") or ""
    if host.startswith("/"):
        return f"postgres://{auth}@/{s['NAME']}?host={host}&port={s.get('PORT') or 5432}"
    return f"postgres://{auth}@{host}:{s.get('PORT') or 5432}/{s['NAME']}"


test_database_url.__test__ = False  # type: ignore[attr-defined]  (a helper, not a test pytest should collect)


class ServerProcess:
    """A server process a test started: `terminate()` asks it to stop (a stack stops its processes side by side),
    `stop()` waits for it and kills it after `stop_seconds`."""

    process: subprocess.Popen
    stop_seconds = 10.0

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()

    def stop(self) -> None:
        self.terminate()
        try:
            self.process.wait(timeout=self.stop_seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Daphne(ServerProcess):
    """A daphne started and not yet waited for: start several (and workers beside them), then `wait_ready()`
    each, so a test pays the project's import time once, not once per process. `stop()` is safe to call twice;
    `terminate()` then `stop()` stops several at once."""

    def __init__(self, application: str, name: str, *, env: dict[str, str] | None = None,
                 frontend_is_self: bool = False, slow_reader_seconds: int | None = None) -> None:
        sock = listening_socket()
        port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        process_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                       "DATABASE_URL": test_database_url(), "PYTHONPATH": str(ROOT), **(env or {})}
        if frontend_is_self:
            process_env["FRONTEND_URL"] = self.base
        self.log_path = ROOT / "test-artifacts" / f"{name}-daphne-{port}.log"
        self.log_path.parent.mkdir(exist_ok=True)
        self._log = open(self.log_path, "w")  # noqa: SIM115 — closed after the server stops
        command = daphne_on_socket(daphne_command(application, port, slow_reader_seconds=slow_reader_seconds), sock)
        with sock:  # daphne holds its own copy of the socket
            self.process = subprocess.Popen(command, cwd=ROOT, env=process_env, stdout=self._log,  # noqa: S603
                                            stderr=subprocess.STDOUT, pass_fds=[sock.fileno()])

    def wait_ready(self, timeout: float = 60) -> str:
        """The base URL, once /healthz answers."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return self.base
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start; see {self.log_path}")
            time.sleep(0.2)

    def stop(self) -> None:
        super().stop()
        self._log.close()


@contextlib.contextmanager
def serving_daphne(application: str, name: str, *, env: dict[str, str] | None = None, frontend_is_self: bool = False,
                   slow_reader_seconds: int | None = None) -> Iterator[str]:
    """Yields the server's base URL once /healthz answers. `env` adds to the process environment;
    `frontend_is_self` makes the base URL its FRONTEND_URL (a hosted page is then admitted from it).
    Its output goes to test-artifacts/<name>-daphne-<port>.log."""
    server = Daphne(application, name, env=env, frontend_is_self=frontend_is_self,
                    slow_reader_seconds=slow_reader_seconds)
    try:
        yield server.wait_ready()
    finally:
        server.stop()
