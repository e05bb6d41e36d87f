"""Run a small Python program in a throwaway jail: no network, nothing of the host's data, its own processes,
CPU-time and memory caps, output cut at 8,000 characters.

The wall is bubblewrap with the very walls sandboxd puts around every shell command (`sandboxd.jail.walls`, one
implementation for both): new user, PID, IPC, UTS, network and cgroup namespaces, no capabilities, the host's
/usr read-only (the interpreter is the host's Python under /usr: standard library only), a generated /etc, an
in-memory /tmp, and the program's own scratch folder at /scratch as the only writable tree. Nothing else of the
host is mounted: another organization's workspaces, chat attachments and generated files, the deployment's
`services.env`, the worker's own files — none of them exist inside, whatever path or `dir_fd` a program opens.
Its own PID namespace means it can name, signal or re-prioritise no process but its own.

As root (the runs worker of `make run`, and of docker-compose), the jail is started as the organization's own
host uid (`JailIdentity`: RUN_PYTHON_UID_BASE + a number given once per organization and never again), so
the per-user process quota (prlimit --nproc) and the scratch folder's owner are the organization's, never
shared with another. Not root, every organization's programs run as the worker's uid: the walls above hold,
but the process quota is the worker's (operations.md says so).

Inside, the bootstrap (`_bootstrap.py`) lowers the rlimits (CPU seconds, address space, file size, open files,
no new processes; hard = soft) and installs an audit hook that refuses sockets, processes and writes outside
the scratch folder with a readable PermissionError: a tripwire that turns an attempt into a clear refusal for
the model, not the boundary. There is no unjailed path: without bubblewrap, or where it cannot create its
namespaces, run_python refuses (`Unavailable`).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandboxd import jail

OUTPUT_LIMIT = 8_000
MARK = "\x00sandbox:"
SCRATCH = "/scratch"
BOOTSTRAP = (Path(__file__).with_name("_bootstrap.py")).read_text(encoding="utf-8")
# The organization's processes of run_python at once (each program is bwrap, its namespace's init and Python).
MAX_PROCESSES = 256
TMP_BYTES = 16 * 1024 * 1024


class Unavailable(OSError):
    """This host cannot jail a program (no bubblewrap, or no namespaces for it): run_python does not run."""


@dataclass(frozen=True)
class Outcome:
    """What happened. `status`: ok | exit (non-zero sys.exit) | error (exception in the program) |
    refused (the sandbox said no) | timeout | memory | crashed (killed by a signal)."""

    status: str
    output: str  # stdout then stderr, already cut at OUTPUT_LIMIT with a visible marker
    exit_code: int | None = None
    error_type: str = ""


def interpreter() -> str | None:
    """The host's Python under /usr (the only tree of the host a jail sees): this process's own when it lives
    there (the production image's /usr/local/bin/python), else the system's python3."""
    own = os.path.realpath(sys.executable)
    if own.startswith(("/usr/", "/bin/")):
        return own
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin")
    return os.path.realpath(found) if found else None


@functools.cache
def _etc() -> Path:
    """The generated /etc the jails bind (the same files sandboxd writes for its commands)."""
    root = Path(tempfile.mkdtemp(prefix="run_python_etc_"))
    # One per process, removed when it exits (a worker restarted many times must not leave one each behind).
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    os.chmod(root, 0o755)  # noqa: S103 - the organization's uid must reach the files it binds read-only
    jail.write_etc(root)
    os.chmod(root / "etc", 0o755)  # noqa: S103
    return root


def _etc_dir() -> Path:
    root = _etc()
    if not (root / "etc" / "passwd").exists():  # a tmp cleaner took it: write it again
        _etc.cache_clear()
        root = _etc()
    return root / "etc"


def command(python: str, *, timeout_secs: int, max_memory_mb: int, scratch: str) -> list[str]:
    """prlimit, then bubblewrap's walls, then the bootstrap: the whole argv (the program travels as a file)."""
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if bwrap is None or prlimit is None:
        raise Unavailable("bubblewrap (bwrap) and prlimit are needed to run a program: apt-get install bubblewrap")
    walls = jail.walls(bwrap, etc=_etc_dir(), tmp_bytes=TMP_BYTES)
    python_root = os.path.dirname(os.path.dirname(python))
    extra = [] if python_root.startswith("/usr") else ["--ro-bind", python_root, python_root]
    return [
        prlimit, f"--nproc={MAX_PROCESSES}", "--core=0", "--",
        *walls, *extra,
        "--bind", scratch, SCRATCH, "--chdir", SCRATCH, "--remount-ro", "/",
        "--", python, "-I", "-S", "-B", "-c", BOOTSTRAP, SCRATCH, str(timeout_secs),
        str(max_memory_mb * 1024 * 1024),
    ]


def _env() -> dict[str, str]:
    return {"HOME": SCRATCH, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": SCRATCH}


def run_program(code: str, *, timeout_secs: int, max_memory_mb: int, uid: int | None = None) -> Outcome:
    """Blocking: call from a thread. `uid`: the organization's host uid (identity.host_uid), used when this
    process is root. Raises OSError (Unavailable among them) only when the jail itself cannot start."""
    python = interpreter()
    if python is None:
        raise Unavailable("No Python 3 under /usr for the jail (apt-get install python3).")
    demote: dict = {}
    if os.geteuid() == 0:
        if uid is None:
            raise ValueError("run_python runs as root here: a program needs its organization's uid")
        demote = {"user": uid, "group": uid, "extra_groups": []}
    with (
        tempfile.TemporaryDirectory(prefix="run_python_") as scratch,
        tempfile.TemporaryDirectory(prefix="run_python_out_") as outdir,
    ):
        Path(scratch, "main.py").write_text(code, encoding="utf-8")
        os.chmod(Path(scratch, "main.py"), 0o644)
        if demote:
            os.chown(scratch, uid, uid)  # type: ignore[arg-type]
            os.chmod(scratch, 0o700)
        argv = command(python, timeout_secs=timeout_secs, max_memory_mb=max_memory_mb, scratch=scratch)
        out_path, err_path = Path(outdir, "stdout"), Path(outdir, "stderr")
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(  # noqa: S603 - fixed argv, the program travels as a file
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd="/", env=_env(),
                start_new_session=True, close_fds=True, **demote,
            )
            timed_out = False
            try:
                # Wall clock too: a program that sleeps uses no CPU time.
                process.wait(timeout=timeout_secs + 1)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # The whole group: bwrap and, with it, the PID namespace of everything inside.
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                process.wait()
        stdout = _read_capped(out_path)
        stderr = _read_capped(err_path)
    if process.returncode == 1 and not stdout[0] and stderr[0].startswith("bwrap:"):
        raise Unavailable(f"The jail could not start: {stderr[0].strip()[:300]}")
    returncode = process.returncode
    if returncode is not None and 128 < returncode <= 128 + 64 and MARK not in stderr[0]:
        # bwrap reports a child killed by signal N as exit code 128 + N (the shell's convention): SIGXCPU at the
        # CPU limit, SIGKILL, a crash. The bootstrap reports every exit of its own on stderr (MARK), so a bare
        # code above 128 is the kernel's doing, not the program's.
        returncode = -(returncode - 128)
    return _classify(returncode, stdout, stderr, timed_out)


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
