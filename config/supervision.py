"""The launcher's processes kept alive: one that dies is started again, after a backoff, with the reason printed.

`make run` is how a single machine hosts itself: a worker killed by the kernel's out-of-memory killer must not take
the web server, beat and the other workers down with it. Its runs go on elsewhere by themselves (their heartbeat
goes stale, the beat's sweep hands them to a live `runs` worker: agents/runner/recovery.py); the process itself
comes back here. A process that dies again soon after it started waits twice as long each time (up to
`backoff_max`), so a child that cannot start (a port taken, a bad setting) prints one line per backoff instead of
spinning; one that stayed up `stable_after` seconds starts over from `backoff_start`.

Hand-written rather than supervisord: the launcher must stay the parent of every process (Ctrl-C stops them all,
each in its own process group so nothing is orphaned) and relay their output in one console; supervisord is a
daemon with a configuration file of its own, and this is one loop.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO


def exit_reason(returncode: int) -> str:
    """How a process ended, for a person: a code, or the signal that killed it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (the out-of-memory killer sends it, so does `kill -9`)" if name == "SIGKILL" else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {returncode}"


@dataclass
class Child:
    name: str
    command: list[str]
    env: dict[str, str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    starts: int = 0
    quick_exits: int = 0  # in a row, each within `stable_after` of its start
    restart_at: float | None = None
    relays: list[threading.Thread] = field(default_factory=list)


Relay = Callable[[str, int, subprocess.Popen], None]

# agents.runner.recovery.PREDECESSOR_ENV (the launcher imports no app: it starts before Django is set up).
PREDECESSOR_ENV = "AGENTICOS_PREDECESSOR_WORKER"


class Supervisor:
    def __init__(self, children: dict[str, tuple[list[str], dict[str, str]]], *, cwd: Path, relay: Relay | None,
                 err: TextIO, backoff_start: float = 1.0, backoff_max: float = 30.0,
                 stable_after: float = 60.0) -> None:
        self.children = {name: Child(name, command, env) for name, (command, env) in children.items()}
        self.cwd = cwd
        self.relay = relay
        self.err = err
        self.backoff_start = backoff_start
        self.backoff_max = backoff_max
        self.stable_after = stable_after
        self.stopping = threading.Event()
        self._lock = threading.Lock()  # start and shutdown never interleave (a restart racing Ctrl-C)

    def start_all(self) -> None:
        for child in self.children.values():
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        with self._lock:
            if self.stopping.is_set():
                return
            child.process = subprocess.Popen(
                child.command, cwd=self.cwd, env=child.env, stdout=subprocess.PIPE if self.relay else None,
                stderr=subprocess.STDOUT if self.relay else None, start_new_session=True)
            child.started_at = time.monotonic()
            child.starts += 1
            child.restart_at = None
        if self.relay is not None:
            index = list(self.children).index(child.name)
            thread = threading.Thread(target=self.relay, args=(child.name, index, child.process), daemon=True)
            thread.start()
            child.relays.append(thread)

    def delay_for(self, child: Child) -> float:
        return min(self.backoff_max, self.backoff_start * 2 ** max(0, child.quick_exits - 1))

    def tick(self) -> None:
        """One pass: note the children that ended and schedule their restart; start those whose wait is over."""
        now = time.monotonic()
        for child in self.children.values():
            if self.stopping.is_set():
                return
            process = child.process
            if child.restart_at is None and process is not None and process.poll() is not None:
                ran = now - child.started_at
                child.quick_exits = child.quick_exits + 1 if ran < self.stable_after else 1
                delay = self.delay_for(child)
                child.restart_at = now + delay
                # A runs worker started in its place hands back the dead one's runs at once (agents.runner.recovery);
                # other processes ignore the name.
                child.env = {**child.env, PREDECESSOR_ENV: f"{socket.gethostname()}:{process.pid}"}
                print(f"{child.name} {exit_reason(process.returncode)} after {ran:.1f} s; starting it again in "
                      f"{delay:g} s (the other processes keep going).", file=self.err, flush=True)
            elif child.restart_at is not None and now >= child.restart_at:
                self._spawn(child)

    def run(self, interval: float = 0.3) -> None:
        """Watch until `stopping` is set (the launcher's signal handler sets it)."""
        while not self.stopping.wait(interval):
            self.tick()

    def shutdown(self, grace: float) -> None:
        """SIGTERM to every process group, SIGKILL to those still there after `grace` seconds."""
        with self._lock:
            self.stopping.set()
            live = [child.process for child in self.children.values()
                    if child.process is not None and child.process.poll() is None]
        for process in live:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in live:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(10)


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:  # it ended meanwhile
        pass
