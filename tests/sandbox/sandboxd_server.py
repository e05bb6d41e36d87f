"""A real sandboxd (python -m sandboxd) for the tests: its own root, token and port, small caps so the
attacks reach them quickly. Skips with the reason when bubblewrap is not installed (make test installs it).

Its port is never picked and then released: sandboxd serves on a socket this process bound and handed down
(SANDBOXD_FD), so no other process on the machine — a parallel test worker among them — can take it first."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.fakes.ports import listening_socket

ROOT = Path(__file__).resolve().parents[2]
NO_BWRAP = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap (make test installs it)"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason=NO_BWRAP)
LIMITS = {"SANDBOXD_DISK_MB": "8", "SANDBOXD_FILE_MB": "4", "SANDBOXD_MAX_PROCESSES": "64",
          "SANDBOXD_MEMORY_MB": "1024", "SANDBOXD_TMP_MB": "16", "SANDBOXD_CPU_SECONDS": "30",
          "SANDBOXD_MAX_TIMEOUT": "60", "SANDBOXD_OUTPUT_BYTES": "65536"}


@dataclass
class Sandboxd:
    url: str
    token: str
    root: Path
    token_file: Path
    process: subprocess.Popen

    def get(self, path: str, token: str | None = None) -> httpx.Response:
        return httpx.get(self.url + path, headers={"Authorization": f"Bearer {token or self.token}"}, timeout=30)

    def healthy(self) -> bool:
        try:
            return httpx.get(self.url + "/healthz", timeout=5).json() == {"ok": True}
        except httpx.HTTPError:
            return False


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port where nothing answers, for as long as the block runs: bound here and never listened on,
    so a connection to it is refused and no other process can start a server on it meanwhile."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def start() -> Sandboxd:
    base = Path(tempfile.mkdtemp(prefix="sandboxd-test-"))
    os.chmod(base, 0o755)  # noqa: S103 — the uid commands run as must reach the workspaces below
    token = secrets.token_urlsafe(32)
    token_file = base / "token"
    token_file.write_text(token + "\n")
    # Bound and listening before sandboxd starts; sandboxd serves on this very socket. Closed here once handed
    # down: the child's copy keeps the port.
    with listening_socket() as sock:
        port = int(sock.getsockname()[1])
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SANDBOXD_TOKEN_FILE": str(token_file),
               "SANDBOXD_ROOT": str(base / "root"), "SANDBOXD_FD": str(sock.fileno()), **LIMITS}
        process = subprocess.Popen([sys.executable, "-m", "sandboxd"], cwd=ROOT, env=env, pass_fds=[sock.fileno()],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server = Sandboxd(url=f"http://127.0.0.1:{port}", token=token, root=base / "root", token_file=token_file,
                      process=process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("sandboxd did not start: " + (process.stderr.read() or b"").decode()[-2000:])
        if server.healthy():
            return server
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("sandboxd did not answer within 30 s")


def stop(server: Sandboxd) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
    shutil.rmtree(server.root.parent, ignore_errors=True)
