"""What `make run` starts: one `runs` worker per core (a worker's threads share one interpreter lock), each
with a name of its own so Celery tells them apart, plus the web, default worker, beat and bots."""

from __future__ import annotations

from config import launcher


def _names(cmd: list[str]) -> str:
    return cmd[cmd.index("-n") + 1]


def test_one_runs_worker_per_core_at_most_four(monkeypatch):
    monkeypatch.delenv("RUN_WORKER_PROCESSES", raising=False)
    monkeypatch.setattr(launcher.os, "cpu_count", lambda: 2)
    commands = launcher.commands(8000)
    workers = {name: cmd for name, cmd in commands.items() if name.startswith("worker")}
    assert list(workers) == ["worker", "worker2"]
    assert [_names(cmd) for cmd in workers.values()] == ["runs@%h", "runs2@%h"]
    assert all(cmd[cmd.index("-Q") + 1] == "runs" and cmd[cmd.index("-P") + 1] == "threads" for cmd in workers.values())
    assert {"web", "default", "beat", "bots"} <= set(commands)
    monkeypatch.setattr(launcher.os, "cpu_count", lambda: 64)
    assert launcher.run_worker_processes() == 4


def test_the_operator_sets_the_number_and_the_threads(monkeypatch):
    monkeypatch.setenv("RUN_WORKER_PROCESSES", "1")
    monkeypatch.setenv("RUN_WORKER_CONCURRENCY", "8")
    workers = [cmd for name, cmd in launcher.commands(8000).items() if name.startswith("worker")]
    assert len(workers) == 1 and workers[0][workers[0].index("-c") + 1] == "8"


def test_daphne_listens_with_a_backlog_for_a_burst_of_clients(monkeypatch):
    """daphne's -b/-p give Twisted's accept backlog of 50: a thousand clients connecting at once overflowed it
    and were reset. The endpoint daphne is given carries the deployment's backlog, and Twisted reads it."""
    from twisted.internet import endpoints, reactor

    monkeypatch.delenv("DAPHNE_BACKLOG", raising=False)
    command = launcher.daphne_command("config.asgi:application", 8123)
    assert "-b" not in command and "-p" not in command
    endpoint = endpoints.serverFromString(reactor, command[command.index("-e") + 1])
    assert (endpoint._port, endpoint._interface, endpoint._backlog) == (8123, "127.0.0.1", 2048)
    monkeypatch.setenv("DAPHNE_BACKLOG", "4096")
    endpoint = endpoints.serverFromString(reactor, launcher.daphne_endpoint("127.0.0.2", 8000))
    assert endpoint._backlog == 4096
