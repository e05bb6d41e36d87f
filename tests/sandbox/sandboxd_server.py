"""A real sandboxd (python -m sandboxd) for the tests: its own root, token and port, small caps so the
attacks reach them quickly. Skips with the reason when bubblewrap is not installed (make test installs it)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start() -> Sandboxd:
    base = Path(tempfile.mkdtemp(prefix="sandboxd-test-"))
    os.chmod(base, 0o755)  # noqa: S103 — the uid commands run as must reach the workspaces below
    token = secrets.token_urlsafe(32)
    token_file = base / "token"
    token_file.write_text(token + "\n")
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SANDBOXD_TOKEN_FILE": str(token_file),
           "SANDBOXD_ROOT": str(base / "root"), "SANDBOXD_PORT": str(port), **LIMITS}
    process = subprocess.Popen([sys.executable, "-m", "sandboxd"], cwd=ROOT, env=env,
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
