"""`make run` keeps going when one of its processes dies (config/supervision.py), with real child processes: the
dead one is started again after a backoff that grows while it keeps dying young, the reason is printed, the others
are never touched; a stop ends everything, a process deaf to SIGTERM included. A second instance on the same
machine moves the sandbox's and the browser's default ports, and names the setting when a port it was given is
taken (config/launcher.py)."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from config import launcher
from config.supervision import Supervisor, exit_reason

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@contextmanager
def supervising(children: dict[str, list[str]], **options) -> Iterator[tuple[Supervisor, io.StringIO]]:
    err = io.StringIO()
    supervisor = Supervisor({name: (command, dict(os.environ)) for name, command in children.items()}, cwd=ROOT,
                            relay=None, err=err, **options)
    supervisor.start_all()
    watcher = threading.Thread(target=supervisor.run, kwargs={"interval": 0.05}, daemon=True)
    watcher.start()
    try:
        yield supervisor, err
    finally:
        supervisor.shutdown(5)
        watcher.join(10)
        assert not watcher.is_alive()
        assert all(c.process is None or c.process.poll() is not None for c in supervisor.children.values())


def delays(err: io.StringIO, name: str) -> list[float]:
    return [float(d) for d in re.findall(rf"^{name} .*; starting it again in ([0-9.]+) s", err.getvalue(), re.M)]


def test_a_process_that_dies_is_started_again_with_a_growing_backoff_and_the_others_keep_going(tmp_path):
    starts = tmp_path / "starts"
    crasher = python(f"open({str(starts)!r}, 'a').write('started\\n'); raise SystemExit(3)")
    with supervising({"crasher": crasher, "steady": python("import time; time.sleep(120)")},
                     backoff_start=0.2, backoff_max=0.8, stable_after=60) as (supervisor, err):
        steady = supervisor.children["steady"].process
        assert wait_until(lambda: lines(starts) >= 5), err.getvalue()
        assert wait_until(lambda: len(delays(err, "crasher")) >= 4), err.getvalue()
        assert delays(err, "crasher")[:4] == [0.2, 0.4, 0.8, 0.8]  # doubling while it dies young, capped
        assert "crasher exited with code 3 after" in err.getvalue()
        assert "(the other processes keep going)" in err.getvalue()
        # The other process was never stopped nor started again.
        assert supervisor.children["steady"].process is steady and steady.poll() is None
        assert supervisor.children["steady"].starts == 1 and "steady" not in err.getvalue()


def test_a_killed_process_is_named_so_and_one_that_lived_long_enough_starts_over_from_the_first_delay(tmp_path):
    with supervising({"worker": python("import time; time.sleep(120)")}, backoff_start=0.1, backoff_max=5,
                     stable_after=0) as (supervisor, err):
        child = supervisor.children["worker"]
        for round_ in (1, 2, 3):
            process = child.process
            os.killpg(process.pid, signal.SIGKILL)  # what the out-of-memory killer does
            assert wait_until(lambda p=process: child.process is not p and child.process.poll() is None), (
                err.getvalue())
            assert child.starts == round_ + 1
        assert delays(err, "worker") == [0.1, 0.1, 0.1]  # each had lived its `stable_after`: no growth
        assert err.getvalue().count("worker was killed by SIGKILL") == 3


def test_a_process_started_in_place_of_a_dead_one_is_told_the_dead_ones_name(tmp_path):
    """A runs worker started again hands back what the dead one held at once (agents.runner.recovery): it is
    told its predecessor's name, host:pid as a run's `worker` column spells it."""
    from config.supervision import PREDECESSOR_ENV

    said = tmp_path / "said"
    child_code = (f"import os, time; open({str(said)!r}, 'a').write(os.environ.get({PREDECESSOR_ENV!r}, '-') + "
                  f"'\\n'); time.sleep(120)")
    with supervising({"worker": python(child_code)}, backoff_start=0.1, stable_after=0) as (supervisor, err):
        child = supervisor.children["worker"]
        assert wait_until(lambda: lines(said) == 1), err.getvalue()
        first = child.process
        os.killpg(first.pid, signal.SIGKILL)
        assert wait_until(lambda: lines(said) == 2), err.getvalue()
    assert said.read_text().splitlines() == ["-", f"{socket.gethostname()}:{first.pid}"]


def test_a_stop_during_the_backoff_starts_nothing_more(tmp_path):
    with supervising({"crasher": python("raise SystemExit(1)")}, backoff_start=60) as (supervisor, err):
        assert wait_until(lambda: len(delays(err, "crasher")) == 1), err.getvalue()
    assert supervisor.children["crasher"].starts == 1


def test_the_stop_kills_a_process_deaf_to_sigterm_after_the_grace(tmp_path):
    ready = tmp_path / "ready"
    deaf = python(f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  f"open({str(ready)!r}, 'w').write('1'); time.sleep(120)")
    supervisor = Supervisor({"deaf": (deaf, dict(os.environ))}, cwd=ROOT, relay=None, err=io.StringIO())
    supervisor.start_all()
    assert wait_until(ready.exists)
    supervisor.shutdown(0.5)
    assert supervisor.children["deaf"].process.returncode == -signal.SIGKILL


def test_an_exit_reads_as_a_code_or_the_signal_that_killed_it():
    assert exit_reason(3) == "exited with code 3"
    assert exit_reason(-signal.SIGKILL).startswith("was killed by SIGKILL (the out-of-memory killer")
    assert exit_reason(-signal.SIGSEGV) == "was killed by SIGSEGV"


# ---------------------------------------------------------------------------- a second instance: its ports


@pytest.fixture
def held_ports() -> Iterator[list[int]]:
    """Two listening sockets, standing for the sandbox and browser of an instance already running."""
    sockets = []
    for _ in range(2):
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen()
        sockets.append(held)
    yield [held.getsockname()[1] for held in sockets]
    for held in sockets:
        held.close()


def test_a_second_instance_moves_the_default_ports_another_holds(held_ports, monkeypatch, capsys):
    sandbox_port, browser_port = held_ports
    monkeypatch.setattr(launcher, "SANDBOXD_DEFAULT_PORT", sandbox_port)
    monkeypatch.setattr(launcher, "BROWSER_DEFAULT_PORT", browser_port)
    environ: dict[str, str] = {}
    assert launcher.settle_ports(environ) == set()
    moved_sandbox = int(environ["SANDBOXD_URL"].rsplit(":", 1)[1])
    moved_browser = int(environ["BROWSER_CDP_PORT"])
    assert {moved_sandbox, moved_browser}.isdisjoint(held_ports)
    assert not launcher.port_taken(moved_sandbox) and not launcher.port_taken(moved_browser)
    said = capsys.readouterr().out
    assert f"port {sandbox_port} is taken" in said and "SANDBOXD_URL chooses" in said
    assert f"port {browser_port} is taken" in said and "BROWSER_CDP_PORT chooses" in said


def test_free_default_ports_are_kept(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    monkeypatch.setattr(launcher, "SANDBOXD_DEFAULT_PORT", free)
    monkeypatch.setattr(launcher, "BROWSER_DEFAULT_PORT", free)
    environ: dict[str, str] = {}
    assert launcher.settle_ports(environ) == set() and environ == {}


def test_a_port_the_operator_set_that_is_taken_is_named_and_that_service_is_not_started(held_ports, capsys):
    sandbox_port, browser_port = held_ports
    environ = {"SANDBOXD_URL": f"http://127.0.0.1:{sandbox_port}", "BROWSER_CDP_PORT": str(browser_port)}
    skip = launcher.settle_ports(environ)
    assert skip == {"sandbox", "browser"}
    assert environ == {"SANDBOXD_URL": f"http://127.0.0.1:{sandbox_port}", "BROWSER_CDP_PORT": str(browser_port)}
    said = capsys.readouterr().out
    assert f"SANDBOXD_URL=http://127.0.0.1:{sandbox_port} is already listening" in said
    assert f"BROWSER_CDP_PORT={browser_port} is taken" in said
    assert {"sandbox", "browser"}.isdisjoint(launcher.commands(8000, skip))


def test_the_launcher_refuses_a_web_port_another_holds_and_names_the_setting(held_ports):
    environment = dict(os.environ, PORT=str(held_ports[0]))
    done = subprocess.run([sys.executable, "-m", "config.launcher"], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert f"port {held_ports[0]} is taken" in done.stderr and "PORT=" in done.stderr
    assert "embedded service" not in done.stdout  # it stopped before starting anything
