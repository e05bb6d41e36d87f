"""sandboxd's settings, from the environment (it is not a Django process). Safe defaults; a bad value stops
the service at start with the variable's name."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Where `make install` puts the coding CLIs (the workbench runtime's /opt/workbench) when
# SANDBOXD_WORKBENCH_DIR names no other folder.
WORKBENCH_DEFAULT = ".agenticos/workbench"


class ConfigError(ValueError):
    """A SANDBOXD_* variable holds a value the service cannot use."""


def _int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}.")
    return value


def _listening_fd() -> int | None:
    raw = os.environ.get("SANDBOXD_FD", "").strip()
    if not raw:
        return None
    fd = _int("SANDBOXD_FD", 0)
    try:
        is_socket = stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        is_socket = False
    if not is_socket:
        raise ConfigError(f"SANDBOXD_FD {fd} is not an open socket this process inherited.")
    return fd


def _token() -> str:
    token = os.environ.get("SANDBOXD_TOKEN", "").strip()
    path = os.environ.get("SANDBOXD_TOKEN_FILE", "").strip()
    if not token and path:
        try:
            token = Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"SANDBOXD_TOKEN_FILE {path!r} cannot be read: {exc.strerror}.") from None
    if len(token) < 32:
        raise ConfigError("sandboxd needs a service token of at least 32 characters in SANDBOXD_TOKEN or "
                          "SANDBOXD_TOKEN_FILE (make sandbox-token writes one).")
    return token


@dataclass(frozen=True)
class Runtime:
    """A runtime alias: what it promises (binaries that must exist) and what it adds to PATH."""

    alias: str
    description: str
    needs: tuple[str, ...]
    extra_path: tuple[str, ...] = ()
    # Host directory mounted read-only at /opt/<alias> (the workbench's coding CLIs).
    mount: str | None = None


@dataclass(frozen=True)
class Config:
    token: str
    root: Path
    host: str = "127.0.0.1"
    port: int = 8765
    # A listening socket handed down by whoever started sandboxd (SANDBOXD_FD): served instead of host:port,
    # so the starter can hold the port from the moment it picked it (the tests do; `make run` does not).
    fd: int | None = None
    bwrap: str = "bwrap"
    prlimit: str = "prlimit"
    # Per command: CPU seconds, address space, processes, one file's size, open files; /tmp is an in-memory
    # tmpfs of tmp_bytes. disk_bytes caps the whole workspace.
    cpu_seconds: int = 300
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 128
    file_bytes: int = 256 * 1024**2
    disk_bytes: int = 1024**3
    tmp_bytes: int = 256 * 1024**2
    open_files: int = 1024
    max_timeout: int = 600
    default_timeout: int = 120
    output_bytes: int = 256 * 1024
    read_bytes: int = 32 * 1024**2
    idle_close_seconds: int = 7 * 24 * 3600
    # The host uids commands run as when sandboxd is root: one per tenant (or per workspace the service token
    # opened), allocated from [uid_base, uid_base + uid_count) and kept in <root>/uids.json (uids.py), so the
    # kernel's per-user limits (RLIMIT_NPROC) and the workspaces' file permissions are never shared between two
    # organizations. The default range sits far above the usual /etc/subuid ranges (100000 + 65536 × n); an
    # operator whose hosts use it sets another. Ignored when sandboxd is not root (then every command runs as
    # sandboxd's own uid, and the per-user limits are shared: say so in production — operations.md).
    uid_base: int = 1_100_000_000
    uid_count: int = 10_000_000
    workbench_dir: str | None = None
    runtimes: dict[str, Runtime] = field(default_factory=dict)
    # Background tasks (tasks.py): their longest wall-clock timeout, and the upstreams (host, port) one may
    # name to reach through a relay (egress.py). Commands never have egress.
    max_task_timeout: int = 3600
    egress_allow: frozenset[tuple[str, int]] = frozenset()

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"


def available_runtimes(workbench_dir: str | None) -> dict[str, Runtime]:
    """The aliases this host can honour: each promises binaries, and is reported only when they exist."""
    candidates = [
        Runtime("python", "Python 3 with the host's standard library and a POSIX shell", ("python3", "sh")),
        Runtime("node", "Node.js and npm with a POSIX shell", ("node", "sh")),
    ]
    if workbench_dir:
        candidates.append(Runtime("workbench", "git, Node.js and the coding CLIs (Claude Code, Codex)",
                                  ("git", "node", "npm", "sh"), extra_path=("/opt/workbench/node_modules/.bin",),
                                  mount=workbench_dir))
    else:
        candidates.append(Runtime("workbench", "git, Python and Node.js", ("git", "node", "npm", "python3", "sh")))
    usr_path = "/usr/local/bin:/usr/bin"
    found = {}
    for runtime in candidates:
        if all(shutil.which(binary, path=usr_path) for binary in runtime.needs):
            found[runtime.alias] = runtime
    return found


# The coding CLIs' own APIs: what a coding agent's task may reach unless the operator says otherwise.
DEFAULT_EGRESS = "api.anthropic.com:443,api.openai.com:443,chatgpt.com:443,auth.openai.com:443"


def _egress() -> frozenset[tuple[str, int]]:
    from sandboxd.egress import EgressRefused, parse

    raw = os.environ.get("SANDBOXD_EGRESS_ALLOW", DEFAULT_EGRESS)
    try:
        return frozenset(parse(item) for item in raw.split(",") if item.strip())
    except EgressRefused as exc:
        raise ConfigError(f"SANDBOXD_EGRESS_ALLOW: {exc}") from None


def from_env() -> Config:
    root = Path(os.environ.get("SANDBOXD_ROOT", "").strip() or Path.cwd() / ".agenticos" / "sandboxd").resolve()
    workbench = os.environ.get("SANDBOXD_WORKBENCH_DIR", "").strip() or None
    if workbench is None and (Path.cwd() / WORKBENCH_DEFAULT / "node_modules" / ".bin").is_dir():
        workbench = str((Path.cwd() / WORKBENCH_DEFAULT).resolve())  # what `make install` put there
    if workbench and not Path(workbench).is_dir():
        raise ConfigError(f"SANDBOXD_WORKBENCH_DIR {workbench!r} is not a directory.")
    bwrap = shutil.which(os.environ.get("SANDBOXD_BWRAP", "bwrap"))
    if bwrap is None:
        raise ConfigError("bubblewrap (bwrap) is not installed: apt-get install bubblewrap. sandboxd never "
                          "runs a command without it.")
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise ConfigError("prlimit (util-linux) is not installed; it sets each command's resource limits.")
    mib = 1024 * 1024
    return Config(
        token=_token(),
        root=root,
        host=os.environ.get("SANDBOXD_HOST", "127.0.0.1").strip() or "127.0.0.1",
        port=_int("SANDBOXD_PORT", 8765, minimum=1),
        fd=_listening_fd(),
        bwrap=bwrap,
        prlimit=prlimit,
        cpu_seconds=_int("SANDBOXD_CPU_SECONDS", 300, minimum=1),
        memory_bytes=_int("SANDBOXD_MEMORY_MB", 2048, minimum=64) * mib,
        max_processes=_int("SANDBOXD_MAX_PROCESSES", 128, minimum=4),
        file_bytes=_int("SANDBOXD_FILE_MB", 256, minimum=1) * mib,
        disk_bytes=_int("SANDBOXD_DISK_MB", 1024, minimum=1) * mib,
        tmp_bytes=_int("SANDBOXD_TMP_MB", 256, minimum=1) * mib,
        max_timeout=_int("SANDBOXD_MAX_TIMEOUT", 600, minimum=1),
        output_bytes=_int("SANDBOXD_OUTPUT_BYTES", 256 * 1024, minimum=1024),
        idle_close_seconds=_int("SANDBOXD_IDLE_CLOSE_SECONDS", 7 * 24 * 3600, minimum=60),
        uid_base=_int("SANDBOXD_UID_BASE", 1_100_000_000, minimum=1000),
        uid_count=_int("SANDBOXD_UID_COUNT", 10_000_000, minimum=1),
        workbench_dir=workbench,
        runtimes=available_runtimes(workbench),
        max_task_timeout=_int("SANDBOXD_MAX_TASK_TIMEOUT", 3600, minimum=1),
        egress_allow=_egress(),
    )


def check_reachable(config: Config) -> None:
    """Run as root, commands start as their tenant's uid, and bubblewrap (running as that uid) must reach the
    workspace it binds: every folder above the workspaces must be searchable by others."""
    if config.uid_base + config.uid_count > 2**32 - 2:
        raise ConfigError("SANDBOXD_UID_BASE + SANDBOXD_UID_COUNT must stay below 4294967294.")
    if os.geteuid() != 0:
        return
    folder = config.workspaces
    for current in [folder, *folder.parents]:
        if current.exists() and not os.stat(current).st_mode & 0o001:
            raise ConfigError(f"{current} is not searchable by other users, so commands (run as uid "
                              f"{config.uid_base}+) cannot reach their workspace: chmod o+x it, or choose "
                              "another SANDBOXD_ROOT.")
