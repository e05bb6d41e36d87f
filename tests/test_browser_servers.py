"""The browser tests' shared daphne (tests/browser_servers.py): one server per environment daphne reads, whatever
order a test asked for its fixtures in, and never the test thread's licence for sync ORM calls."""

from __future__ import annotations

from pathlib import Path

from tests.browser_servers import _LiveServers


class _Recorded(_LiveServers):
    """Starts nothing: records the environment each server would have been started with."""

    def __init__(self) -> None:
        super().__init__("test_db")
        self.started: list[dict[str, str]] = []

    def _start(self, environment):
        self.started.append(environment)
        return (None, f"http://127.0.0.1:{len(self.started)}", Path("/dev/null"))

    @staticmethod
    def _answers(server) -> bool:
        return True

    @staticmethod
    def _stop(server) -> None:
        pass


def test_a_test_asking_for_the_browser_first_shares_the_server_of_one_asking_for_it_after():
    servers = _Recorded()
    plain = {"PATH": "/usr/bin", "PYTEST_CURRENT_TEST": "a (setup)"}
    first, _log = servers.url_for(plain)
    second, _log = servers.url_for({**plain, "DJANGO_ALLOW_ASYNC_UNSAFE": "true", "PYTEST_CURRENT_TEST": "b"})
    assert first == second and len(servers.started) == 1
    assert "DJANGO_ALLOW_ASYNC_UNSAFE" not in servers.started[0] and "PYTEST_CURRENT_TEST" not in servers.started[0]


def test_an_environment_daphne_reads_gets_a_server_of_its_own():
    servers = _Recorded()
    first, _log = servers.url_for({"PATH": "/usr/bin"})
    other, _log = servers.url_for({"PATH": "/usr/bin", "MODEL_ALLOWED_PRIVATE_HOSTS": "127.0.0.1"})
    assert first != other and servers.started[1]["MODEL_ALLOWED_PRIVATE_HOSTS"] == "127.0.0.1"
