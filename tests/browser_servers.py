"""The console browser tests' session servers: daphne subprocesses (one per environment) and one Playwright
driver with one Chromium. Session fixtures, registered in tests/conftest.py so that every module asking for the
console's `live_server_url` or `browser` (tests/console, and the modules that import those fixtures) shares one
of each per process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "console"
# The tests drive Debian's chromium-headless-shell where it is installed (`make browser` installs it): the same
# Blink and V8 as /usr/bin/chromium, without the full browser's invisible windows, tab strips and address bars
# (Playwright's own default for headless runs). Measured on the 161 browser tests of tests/console, tests/embeds
# and the console's others, -n 2, same session: Chromium's CPU 393 → 264 s (its browser process 168 → 77 s),
# wall 7 min 2 s → 5 min 58 s. Debian's full chromium where the shell is missing.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = HEADLESS_SHELL if os.path.exists(HEADLESS_SHELL) else "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


QUIET_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")


def _disable_features_switch() -> str | None:
    """The --disable-features switch of a Chromium this process started through Playwright (the browser process:
    the one without --type), or None if there is none to be found."""
    own = str(os.getpid())
    parents: dict[str, str] = {}
    commands: dict[str, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[entry.name] = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            commands[entry.name] = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, IndexError):  # gone meanwhile
            continue

    def ours(pid: str) -> bool:
        for _ in range(4):  # this process → Playwright's driver → Chromium
            pid = parents.get(pid, "0")
            if pid == own:
                return True
        return False

    for pid, command in commands.items():
        # Debian's /usr/bin/chromium is a script that execs /usr/lib/chromium/chromium.
        browser = command and Path(command[0]).name == "chromium" and not any(a.startswith("--type=") for a in command)
        if browser and ours(pid):
            found = [a for a in command if a.startswith("--disable-features=")]
            if found and not all(feature in found[-1] for feature in QUIET_FEATURES):
                return found[-1]
    return None


class _LiveServers:
    """The session's daphne subprocesses (a fork of this multi-threaded process could inherit held locks), one
    per environment a test gives them: a test that sets an environment variable daphne reads (monkeypatch.setenv
    before it asks for the server) gets a server started with exactly that environment, as when each test
    started its own, and the next test with the same environment reuses it. Starting daphne (importing the
    project) was seconds of every browser test. What a server keeps between tests is the database — emptied
    after each test — and Redis, flushed before each; per-process caches are of settings and environment,
    which are the key. A server that died is started again; at most a few stay alive."""

    KEEP = 3
    # Not the server's: pytest's own (different for every test), and the test thread's licence for sync ORM
    # calls beside Playwright's loop (the `browser` fixture sets it). Passed on, that licence would hide an
    # async-unsafe call in the product from the server — and split one environment in two by whether a test
    # asked for `browser` before or after the server: a second daphne started for nothing.
    NOT_THE_SERVERS = frozenset({"PYTEST_CURRENT_TEST", "DJANGO_ALLOW_ASYNC_UNSAFE"})

    def __init__(self, database: str) -> None:
        self.database = database
        self.servers: dict[tuple, tuple[subprocess.Popen, str, Path]] = {}

    def url_for(self, environment: dict[str, str]) -> tuple[str, Path]:
        environment = {k: v for k, v in environment.items() if k not in self.NOT_THE_SERVERS}
        key = tuple(sorted(environment.items()))
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
        # Full chromium only (the headless shell has no address bar, and no switch to find below). Every test's page
        # is a window of its own, and each window preloaded the address bar's popup as WebUI
        # pages in renderers nobody sees (~0.3 s of CPU per page; config/launcher.py turns them off for the
        # browser service). Playwright passes one --disable-features list of its own and Chromium keeps only the
        # last such switch, so the browser is started again with Playwright's list and these two together —
        # read from the browser's command line, not copied, so a Playwright upgrade's list is kept whole.
        defaults = _disable_features_switch()
        if defaults is not None:
            self.instance.close()
            self.instance = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, timeout=120_000, ignore_default_args=[defaults],
                args=[*CHROMIUM_ARGS, f"{defaults},{','.join(QUIET_FEATURES)}"])

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


_lenders: list[_SessionChromium] = []  # the session fixture's, while the session lasts


@pytest.fixture(scope="session")
def _session_chromium():
    chromium = _SessionChromium()
    _lenders.append(chromium)
    try:
        yield chromium
    finally:
        _lenders.remove(chromium)
        chromium.close()


@contextlib.contextmanager
def lent_chromium() -> Any:
    """The session's Chromium for a block inside a test, for tests that write their rows before Playwright marks
    its loop on this thread (the embeds' browser tests); a context manager where the console's `browser` is a
    fixture. The session fixture must be alive: tests/embeds/conftest.py asks for it."""
    if not _lenders:
        raise RuntimeError("no session Chromium: request the _session_chromium fixture")
    chromium = _lenders[-1]
    instance = chromium.lend()
    try:
        yield instance
    finally:
        chromium.give_back()
