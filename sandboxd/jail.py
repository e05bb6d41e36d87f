"""One command under bubblewrap: the isolation boundary of the deployment's sandboxes.

What a command sees and may do:
- new user, PID, IPC, UTS, network and cgroup namespaces; no capabilities (`--cap-drop ALL`), no further
  user namespaces (`--disable-userns`), its own session (no terminal injection);
- the host's /usr read-only (with the /bin, /lib, /lib64, /sbin links), a generated /etc holding only
  passwd, group, hosts and the read-only CA bundle and `alternatives` links — never the host's
  passwd/shadow, keys or credentials; a fresh minimal /proc of its own PID namespace and a minimal /dev;
  /tmp an in-memory tmpfs of `tmp_bytes` gone with the command; the root remounted read-only, so the
  workspace (/workspace) is the only writable tree on disk;
- a cleared environment (PATH, HOME=/workspace, LANG, TMPDIR and what the caller passes by name), given to
  prlimit and bwrap as their own environment, never on a command line the host's process list shows;
- network: only its own loopback (the network namespace has no route out, and the host's 127.0.0.1 is
  another namespace's). An egress allow-list is not built;
- rlimits set by prlimit before bwrap starts (inherited by everything inside): CPU seconds, address space,
  processes (counted per host uid — sandboxd running as root runs each tenant's commands as a uid of its own,
  uids.py, so one organization's processes never use up another's quota), one file's
  size (at most what is left of the workspace's disk cap), open files, no core dumps;
- a wall-clock timeout: the whole process group is killed, and because the command's processes live in
  their own PID namespace whose init dies with bwrap (`--die-with-parent`), nothing started inside — a
  background job, a daemon that called setsid — outlives its command;
- the workspace's size is watched while the command runs: past `disk_bytes` the command is killed.

cgroups v2 are not used: this needs a delegated, writable cgroup v2 subtree with the memory and pids
controllers, which the machines this was built on lack (hybrid hierarchy); rlimits bind instead.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sandboxd.config import Config, Runtime

SANDBOX_UID = 1000
SANDBOX_GID = 1000
HOSTNAME = "sandbox"
_ETC_FILES = {
    "passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/workspace:/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": f"sandbox:x:{SANDBOX_GID}:\nnogroup:x:65534:\n",
    "hosts": f"127.0.0.1 localhost {HOSTNAME}\n::1 localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    # No name server is reachable from a jail (its own network namespace; egress targets are in `hosts`). An
    # empty file leaves musl programs (Codex's binary) waiting 5 s × 2 for 127.0.0.1:53 on every other name (it
    # ignores the port's refusal): a ChatGPT-signed-in Codex task spent ~40 s of its ~47 s on lookups. One try of
    # one second is the least musl takes; glibc programs fail at once as before.
    "resolv.conf": "options timeout:1 attempts:1\n",
}
# Public, read-only host trees a program may need (certificate bundle, the alternatives links of /usr/bin).
_ETC_TREES = ("alternatives", "ssl", "ca-certificates", "ld.so.cache", "localtime", "mime.types")
WATCH_SECONDS = 0.25


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    stdout_truncated: int
    stderr_truncated: int
    timed_out: bool
    disk_full: bool
    duration_ms: int
    max_rss_kb: int
    cancelled: bool = False


def write_etc(root: Path) -> Path:
    """The generated /etc every sandbox sees (written at start; nothing of the host's identity in it)."""
    etc = root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    for name, text in _ETC_FILES.items():
        (etc / name).write_text(text)
        os.chmod(etc / name, 0o644)
    return etc


def walls(bwrap: str, *, etc: Path, tmp_bytes: int, hosts: Path | None = None) -> list[str]:
    """bubblewrap's part of every jail, up to the mounts of what it runs (see the module docstring): its own
    user, PID, IPC, UTS, network and cgroup namespaces, no capabilities, the host's /usr read-only, a fresh
    /proc and /dev, an in-memory /tmp, and `etc` (write_etc's folder) as the only /etc. Shared by sandboxd's
    commands and the platform's `run_python` (capabilities/code_execution/sandbox.py), so one wall is kept."""
    jail = [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
        "--unshare-cgroup-try",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", HOSTNAME,
        "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
        "--ro-bind", "/usr", "/usr",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            jail += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            jail += ["--ro-bind", str(target), f"/{link}"]
    # The sandbox's own /tmp (a tmpfs inside its mount namespace), not the host's.
    jail += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp",  # noqa: S108
             "--dir", "/etc"]
    for name in _ETC_FILES:
        source = hosts if name == "hosts" and hosts is not None else etc / name
        jail += ["--ro-bind", str(source), f"/etc/{name}"]
    for name in _ETC_TREES:
        jail += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return jail


def argv(config: Config, workspace: Path, runtime: Runtime, command: str, *, file_bytes: int,
         hosts: Path | None = None, binds: tuple[tuple[str, str], ...] = (),
         rw_binds: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """`hosts` replaces the generated /etc/hosts and `binds` adds read-only mounts (a background task's
    egress relay, egress.py); neither can make the workspace's tree or the host's anything but what it is.
    `rw_binds` mounts a folder sandboxd made for this one task (its private home, tasks.py) writable, outside
    /workspace."""
    limits = [
        config.prlimit,
        f"--cpu={config.cpu_seconds}",
        f"--as={config.memory_bytes}",
        f"--nproc={config.max_processes}",
        f"--fsize={file_bytes}",
        f"--nofile={config.open_files}",
        "--core=0",
        "--",
    ]
    jail = walls(config.bwrap, etc=config.root / "etc", tmp_bytes=config.tmp_bytes, hosts=hosts)
    if runtime.mount:
        jail += ["--ro-bind", runtime.mount, f"/opt/{runtime.alias}"]
    for bind_source, bind_target in binds:
        jail += ["--ro-bind", bind_source, bind_target]
    for bind_source, bind_target in rw_binds:
        jail += ["--bind", bind_source, bind_target]
    jail += ["--bind", str(workspace), "/workspace", "--chdir", "/workspace", "--remount-ro", "/"]
    return [*limits, *jail, "--", "/bin/sh", "-c", command]


def environment(runtime: Runtime, env: dict[str, str]) -> dict[str, str]:
    """The command's whole environment, handed to prlimit and bwrap as theirs (both pass it on untouched): never
    `--setenv` on their command lines, where any process of the host could read a key a task carries."""
    path = ":".join((*runtime.extra_path, "/usr/local/bin", "/usr/bin", "/bin"))
    base = {"PATH": path, "HOME": "/workspace", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "USER": "sandbox",  # noqa: S108
            "SANDBOX_RUNTIME": runtime.alias}
    return {**base, **env}


def disk_usage(root: Path) -> int:
    """Bytes the workspace holds (allocated blocks, so a sparse file counts what it really takes)."""
    total = 0
    stack = [str(root)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += max(info.st_blocks * 512, 0) if hasattr(info, "st_blocks") else info.st_size
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total


def kill(process: subprocess.Popen) -> None:
    """The whole process group (bwrap and, with it, the PID namespace of everything the command started)."""
    _kill(process)


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(config: Config, workspace: Path, runtime: Runtime, command: str, *, timeout: float,
        env: dict[str, str] | None = None, uid: int | None = None,
        cancel: threading.Event | None = None) -> Outcome:
    """Run `command` in the workspace under the jail, as host `uid` (the workspace's tenant's, uids.py) when
    sandboxd is root; blocking (sandboxd calls it on a thread). Setting `cancel` kills it (its caller left)."""
    used = disk_usage(workspace)
    room = max(config.disk_bytes - used, 0)
    # A workspace a killed command left over its cap: the next command may only bring it down (it cannot write,
    # room is 0), so it is stopped only when it grows the workspace — `rm` of the leftovers must not be killed
    # for what it is deleting.
    ceiling = max(config.disk_bytes, used)
    cmd = argv(config, workspace, runtime, command, file_bytes=min(config.file_bytes, room))
    demote: dict = {}
    if os.geteuid() == 0:
        if uid is None:
            raise ValueError("sandboxd runs as root: a command needs its workspace's uid")
        demote = {"user": uid, "group": uid, "extra_groups": []}
    started = time.monotonic()
    process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, close_fds=True, env=environment(runtime, env or {}), **demote)
    flags = {"timed_out": False, "disk_full": False, "cancelled": False}
    done = threading.Event()

    def watch() -> None:
        deadline = started + timeout
        while not done.wait(WATCH_SECONDS):
            if time.monotonic() >= deadline:
                flags["timed_out"] = True
                _kill(process)
                return
            if cancel is not None and cancel.is_set():
                flags["cancelled"] = True
                _kill(process)
                return
            if disk_usage(workspace) > ceiling:
                flags["disk_full"] = True
                _kill(process)
                return

    watcher = threading.Thread(target=watch, name="sandboxd-watch", daemon=True)
    watcher.start()
    out, err = bytearray(), bytearray()
    dropped = {"out": 0, "err": 0}
    cap = config.output_bytes
    selector = selectors.DefaultSelector()
    assert process.stdout is not None and process.stderr is not None
    selector.register(process.stdout, selectors.EVENT_READ, ("out", out))
    selector.register(process.stderr, selectors.EVENT_READ, ("err", err))
    try:
        open_streams = 2
        while open_streams:
            for key, _ in selector.select(timeout=0.5):
                name, buffer = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                room_left = cap - len(buffer)
                if room_left > 0:
                    buffer += chunk[:room_left]
                dropped[name] += max(len(chunk) - max(room_left, 0), 0)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        done.set()
        selector.close()
        _kill(process)  # nothing of the group may outlive the command, whatever ended it
        process.stdout.close()
        process.stderr.close()
        watcher.join(timeout=2)
    code = process.returncode
    if code is not None and code < 0:
        code = 128 - code  # the shell's convention for "killed by signal N"
    return Outcome(exit_code=int(code if code is not None else -1), stdout=out.decode("utf-8", "replace"),
                   stderr=err.decode("utf-8", "replace"), stdout_truncated=dropped["out"],
                   stderr_truncated=dropped["err"], timed_out=flags["timed_out"], disk_full=flags["disk_full"],
                   duration_ms=int((time.monotonic() - started) * 1000), max_rss_kb=int(usage.ru_maxrss),
                   cancelled=flags["cancelled"])


def probe(bwrap: str) -> str | None:
    """None when bubblewrap can create the namespaces every command needs here, else what it said (a
    kernel without unprivileged user namespaces, a container whose seccomp profile refuses them)."""
    command = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
               "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64"):
        target = Path("/") / link
        if target.is_symlink():
            command += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            command += ["--ro-bind", str(target), f"/{link}"]
    try:
        done = subprocess.run([*command, "--", "/bin/sh", "-c", "true"], capture_output=True, text=True, timeout=30,
                              env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit code {done.returncode}")
