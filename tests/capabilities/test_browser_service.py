"""The browser service an operator runs: `make run` starts Debian's chromium (DevTools on loopback, allowed for
every process it starts unless the operator says otherwise) and an agent browses through it; docker-compose's
`browser` service under --profile browser sits on a network of its own that PostgreSQL and Redis are not on."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from capabilities.browser.config import BrowserConfig, publish_problems
from config import launcher
from tests.capabilities.helpers import run, spec
from tests.fakes.web_pages import site  # noqa: F401

pytestmark = pytest.mark.browser

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


@pytest.fixture
def launch_env(monkeypatch, tmp_path, settings):
    """A data directory of its own and an ephemeral DevTools port; the operator has listed no browser. A Chromium
    started by the test on a 2-core machine busy with the other worker's tests (real coding CLIs in a jail) once
    took more than 30 s to take its first client, so these tests give it the room a slow host's operator would."""
    settings.BROWSER_CONNECT_TIMEOUT_SECONDS = 120
    monkeypatch.setenv("AGENTICOS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BROWSER_CDP_PORT", "0")
    for name in ("BROWSER_SERVICE", "BROWSER_EXECUTABLE", "BROWSER_CDP_ALLOWED_HOSTS", "BROWSER_TZ"):
        monkeypatch.setenv(name, "")  # recorded, so the deletion below is undone after the test
        monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture
def launched_browser(launch_env):
    command = launcher.commands(8000)["browser"]
    launcher.prepare_browser_profile()
    proc = subprocess.Popen(command, env={**os.environ, **launcher.browser_env()}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        cdp_url = launcher.browser_cdp_url(timeout=30)
        assert cdp_url, "chromium did not open its DevTools port"
        yield command, cdp_url, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.django_db
def test_make_run_starts_chromium_on_loopback_and_an_agent_browses_through_it(launched_browser, settings, site,
                                                                              monkeypatch):
    command, cdp_url, session = launched_browser
    assert command[0] == "/usr/bin/chromium" and "--headless=new" in command
    assert command[-1] == "about:blank"  # the first tab loads nothing a connecting client would wait for
    assert "--remote-debugging-address=127.0.0.1" in command
    assert cdp_url.startswith("http://127.0.0.1:")
    launcher.allow_own_browser()
    # The processes make run starts read the list from the environment it gave them.
    settings.BROWSER_CDP_ALLOWED_HOSTS = os.environ["BROWSER_CDP_ALLOWED_HOSTS"].split(",")
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the test's site is on this machine
    config = {"cdp_url": cdp_url, "allowed_domains": ["127.0.0.1"]}
    assert publish_problems(BrowserConfig(**config)) == []
    outcome = asyncio.run(run(spec({"id": "browser_use", "config": config}),
                              [("browser_open", {"url": f"http://127.0.0.1:{site.port}/form"})]))
    assert "[4] button 'Send'" in outcome.returns[0]
    assert site.paths() == ["/form"]
    # No window preloaded the address bar's popup (WebUI renderers nobody sees, most of a browse's CPU).
    renderers = [arguments for arguments in _processes_of(session) if b"--type=renderer" in arguments]
    assert renderers and not [arguments for arguments in renderers if b"--top-chrome-webui" in arguments]


def _processes_of(session: int) -> list[bytes]:
    """The command lines of the processes in a session (the browser and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) == session:
                found.append((entry / "cmdline").read_bytes())
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return found


@pytest.fixture
def silent_server():
    """A server that takes connections and never answers: a page navigating to it never commits."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:  # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for connection in held:
        connection.close()


def test_a_page_that_never_loads_does_not_hold_up_the_next_browse_of_the_shared_browser(
        launched_browser, settings, site, silent_server, monkeypatch):
    """One browse opens a server that never answers; a browse started after it (another agent's, another
    organization's: the browser is shared) connects and works, within its connect timeout."""
    from capabilities.browser import session as browser_session
    from capabilities.browser.session import ActionFailed, BrowserSession

    _command, cdp_url, _session = launched_browser
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    monkeypatch.setattr(browser_session, "NAVIGATION_TIMEOUT_MS", 3000)
    config = BrowserConfig(cdp_url=cdp_url, allowed_domains=["127.0.0.1"])

    async def browse() -> str:
        stuck = BrowserSession(config=config)
        try:
            with pytest.raises(ActionFailed, match="did not load"):
                await stuck.open(f"http://127.0.0.1:{silent_server}/never")
            # The next browse, with a connect timeout the stuck navigation would outlast if it were left going.
            settings.BROWSER_CONNECT_TIMEOUT_SECONDS = 15
            other = BrowserSession(config=config)
            try:
                await other.open(f"http://127.0.0.1:{site.port}/form")
                return other.page.url
            finally:
                await other.close()
        finally:
            await stuck.close()

    assert asyncio.run(browse()).endswith("/form")


def test_the_browser_says_the_time_zone_the_operator_gave_it(launch_env, monkeypatch, settings, site):
    from capabilities.browser.session import BrowserSession

    monkeypatch.setenv("BROWSER_TZ", "Europe/Warsaw")
    command = launcher.browser_command()
    assert command is not None
    launcher.prepare_browser_profile()
    proc = subprocess.Popen(command, env={**os.environ, **launcher.browser_env()}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the test's site is on this machine

    async def zone(cdp_url: str) -> str:
        tab = BrowserSession(config=BrowserConfig(cdp_url=cdp_url, allowed_domains=["127.0.0.1"]))
        await tab.open(f"http://127.0.0.1:{site.port}/form")
        try:
            return await tab.page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
        finally:
            await tab.close()

    try:
        cdp_url = launcher.browser_cdp_url(timeout=30)
        assert cdp_url
        assert asyncio.run(zone(cdp_url)) == "Europe/Warsaw"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def test_an_operators_list_of_browsers_wins_over_make_runs_default(launch_env, monkeypatch):
    monkeypatch.setenv("BROWSER_CDP_ALLOWED_HOSTS", "browser.internal")
    launcher.allow_own_browser()
    assert os.environ["BROWSER_CDP_ALLOWED_HOSTS"] == "browser.internal"


def test_no_browser_service_without_chromium_or_when_switched_off(launch_env, monkeypatch):
    assert "browser" in launcher.commands(8000)  # the control: chromium is installed here
    monkeypatch.setenv("BROWSER_SERVICE", "off")
    assert launcher.browser_command() is None and "browser" not in launcher.commands(8000)
    monkeypatch.delenv("BROWSER_SERVICE")
    monkeypatch.setenv("PATH", str(launch_env))  # no chromium on it
    assert launcher.browser_command() is None


def test_a_fresh_profile_per_launch_forgets_an_earlier_port(launch_env):
    launcher.prepare_browser_profile()
    (launcher.browser_profile_dir() / "DevToolsActivePort").write_text("9333\n/devtools/browser/old\n")
    assert launcher.browser_cdp_url(timeout=0.5) == "http://127.0.0.1:9333"
    launcher.prepare_browser_profile()
    assert launcher.browser_cdp_url(timeout=0.3) is None


def test_compose_runs_the_browser_under_its_profile_on_a_network_of_its_own():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    browser = services["browser"]
    assert browser["profiles"] == ["browser"]
    assert browser["networks"] == ["browser"] and "ports" not in browser
    assert "browser" in compose["networks"]
    on_browser_network = {name for name, service in services.items() if "browser" in service.get("networks", [])}
    assert on_browser_network == {"browser", "web", "worker"}
    assert "postgres" not in on_browser_network and "redis" not in on_browser_network
    assert all(services[name]["networks"] == ["default", "browser"] for name in ("web", "worker"))
    started = browser["command"][-1]
    assert "chromium" in started and "--headless" not in started and "xvfb-run" in started
    assert "TCP-LISTEN:9222" in started  # what http://browser:9222 reaches
    assert all(flag in started.split() for flag in (*launcher.BROWSER_QUIET, *launcher.BROWSER_HARDENING))
    assert services["web"]["environment"]["BROWSER_CDP_ALLOWED_HOSTS"] == "${BROWSER_CDP_ALLOWED_HOSTS:-}"
