"""Run a small Python program in a throwaway subprocess: no network, no writes outside a temp dir,
CPU-time and memory caps, output cut at 8,000 characters.

Walls, strongest available first (probed once per process):
1. `unshare -n` puts the child in an empty network namespace (as root), or `unshare -rn` (an
   unprivileged user namespace) when not root. Without either, the audit hook's socket block is all
   there is — said here on purpose, because it is a tripwire, not a wall.
2. As root, `setpriv` drops the child to uid/gid 65534 (nobody), so the file system's own permissions
   stop writes outside the temp dir (which is chowned to it).
3. rlimits set by the child itself before the program runs (hard = soft, so it cannot raise them):
   CPU seconds, address space, file size, no new processes.
4. An audit hook (see `_bootstrap.py`) refusing sockets, new processes, native code, and opening for
   write outside the temp dir or for read outside the standard library.
The interpreter runs `-I -S -B`: isolated from the environment, standard library only, no bytecode
writes; the environment is replaced by a minimal one, so no secret of the worker reaches the program.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 8_000
MARK = "\x00sandbox:"
NOBODY = 65534
BOOTSTRAP = (Path(__file__).with_name("_bootstrap.py")).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Outcome:
    """What happened. `status`: ok | exit (non-zero sys.exit) | error (exception in the program) |
    refused (the sandbox said no) | timeout | memory | crashed (killed by a signal)."""

    status: str
    output: str  # stdout then stderr, already cut at OUTPUT_LIMIT with a visible marker
    exit_code: int | None = None
    error_type: str = ""


def _works(prefix: list[str]) -> bool:
    try:
        result = subprocess.run(
            [*prefix, sys.executable, "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=10,
            env=_env("/"),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


@functools.cache
def isolation_prefix() -> tuple[str, ...]:
    """The strongest wrapper this host allows (see module docstring)."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    candidates: list[list[str]] = []
    if os.geteuid() == 0 and unshare and setpriv:
        drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        candidates += [[unshare, "-n", "--", *drop], drop]
    if unshare:
        candidates.append([unshare, "-rn", "--"])
    for prefix in candidates:
        if _works(prefix):
            return tuple(prefix)
    return ()


def network_isolated() -> bool:
    return any(part.endswith("unshare") for part in isolation_prefix())


def _env(home: str) -> dict[str, str]:
    return {"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": home}


def run_program(code: str, *, timeout_secs: int, max_memory_mb: int) -> Outcome:
    """Blocking: call from a thread. Raises OSError only when the sandbox itself cannot start."""
    prefix = list(isolation_prefix())
    drops_privileges = any("setpriv" in part for part in prefix)
    with (
        tempfile.TemporaryDirectory(prefix="run_python_") as workdir,
        tempfile.TemporaryDirectory(prefix="run_python_out_") as outdir,
    ):
        Path(workdir, "main.py").write_text(code, encoding="utf-8")
        if drops_privileges:
            os.chown(workdir, NOBODY, NOBODY)
            os.chmod(workdir, 0o700)
        out_path, err_path = Path(outdir, "stdout"), Path(outdir, "stderr")
        with out_path.open("wb") as out, err_path.open("wb") as err:
            command = [
                *prefix,
                sys.executable,
                "-I",
                "-S",
                "-B",
                "-c",
                BOOTSTRAP,
                workdir,
                str(timeout_secs),
                str(max_memory_mb * 1024 * 1024),
            ]
            process = subprocess.Popen(  # noqa: S603 - fixed argv, the program travels as a file
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=workdir,
                env=_env(workdir),
                start_new_session=True,
            )
            timed_out = False
            try:
                # Wall clock too: a program that sleeps uses no CPU time.
                process.wait(timeout=timeout_secs + 1)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        stdout = _read_capped(out_path)
        stderr = _read_capped(err_path)
    return _classify(process.returncode, stdout, stderr, timed_out)


def _read_capped(path: Path) -> tuple[str, int]:
    """The first part of a stream and how many bytes were left unread (never the whole of a flood)."""
    with path.open("rb") as handle:
        data = handle.read(4 * OUTPUT_LIMIT)
        rest = path.stat().st_size - len(data)
    return data.decode("utf-8", errors="replace"), max(rest, 0)


def _join(stdout: tuple[str, int], stderr: tuple[str, int]) -> str:
    (out, out_rest), (err, err_rest) = stdout, stderr
    text = out
    if err.strip():
        text = (text.rstrip("\n") + "\n" if text else "") + "[stderr]\n" + err
    hidden = out_rest + err_rest
    if len(text) > OUTPUT_LIMIT or hidden:
        extra = max(len(text) - OUTPUT_LIMIT, 0) + hidden
        return text[:OUTPUT_LIMIT] + f"\n…[output truncated: {extra} more characters not shown]"
    return text


def _classify(code: int | None, stdout: tuple[str, int], stderr: tuple[str, int], timed_out: bool) -> Outcome:
    kind = ""
    err_text, err_rest = stderr
    if MARK in err_text:
        err_text, _, tail = err_text.rpartition(MARK)
        kind = tail.strip()
        err_text = err_text.rstrip("\n")
    output = _join(stdout, (err_text, err_rest))
    if timed_out or (code in (-signal.SIGXCPU, -signal.SIGKILL) and not kind):
        return Outcome("timeout", output, code)
    if kind == "refused":
        return Outcome("refused", output, code, "PermissionError")
    if kind == "MemoryError":
        return Outcome("memory", output, code, kind)
    if kind:
        return Outcome("error", output, code, kind)
    if code == 0:
        return Outcome("ok", output, 0)
    if code is not None and code < 0:
        return Outcome("crashed", output, code)
    return Outcome("exit", output, code)
