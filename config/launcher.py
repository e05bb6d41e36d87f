"""`make run`: embedded services, migrate, bootstrap, then daphne + Celery worker + beat in one console.

The launcher stays the parent of every process it starts; Ctrl-C (or SIGTERM) stops them all, and
each child runs in its own process group so nothing is orphaned. A process that dies is started again after a
backoff, the reason printed (config/supervision.py); the others keep going. A second instance on the same machine
(its own AGENTICOS_DATA_DIR) starts beside the first: the sandbox's and the browser's ports move to free ones when
their defaults are taken (`settle_ports`); the web's PORT is the operator's to choose, and a message says so.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path

from config import devservices
from config.supervision import Supervisor

ROOT = Path(__file__).resolve().parent.parent
COLORS = ["\033[36m", "\033[35m", "\033[33m", "\033[32m", "\033[34m"]
RESET = "\033[0m"


def _env() -> dict[str, str]:
    """The environment of every process the launcher starts. `make run` is also how one machine hosts itself, so
    DEBUG is off (no page listing every URL, no traceback beside the settings) unless the developer asked for it:
    `make dev`, or DEBUG=true in the environment. AGENTICOS_LAUNCHER tells the settings what this machine is
    (keys in the data dir, loopback names as hosts, cookies for plain http: config/settings.py)."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("DEBUG", "false")
    env["AGENTICOS_LAUNCHER"] = "true"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _debug_on(env: dict[str, str]) -> bool:
    return env["DEBUG"].strip().lower() in {"1", "true", "yes", "on"}


def _manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=_env(), check=True)


def _relay(name: str, index: int, proc: subprocess.Popen) -> None:
    assert proc.stdout is not None
    color = COLORS[index % len(COLORS)]
    tty = sys.stdout.isatty()
    label = f"{color}{name:>7}{RESET} | " if tty else f"{name:>7} | "
    for line in iter(proc.stdout.readline, b""):
        sys.stdout.write(label + line.decode(errors="replace"))
        sys.stdout.flush()


def daphne_command(application: str, port: int, host: str = "127.0.0.1",
                   slow_reader_seconds: int | None = None) -> list[str]:
    """daphne as this deployment runs it (docker-compose passes the same flags).

    A handshake may wait behind a busy CPU: 30 s before daphne gives up on it (its default is 5 s). A
    client that stops reading cannot be closed with 1011 (it would not read the close frame either) and
    daphne never blocks a send, so the socket's own ping does the job: pinged after a third of
    EMBED_SLOW_READER_SECONDS without a word from the client, dropped when no pong came back by the end."""
    slow_reader = max(3, slow_reader_seconds or int(os.environ.get("EMBED_SLOW_READER_SECONDS", "30")))
    ping_interval = slow_reader // 3
    return [sys.executable, "-m", "daphne", "-e", daphne_endpoint(host, port), "--websocket_connect_timeout", "30",
            "--ping-interval", str(ping_interval), "--ping-timeout", str(slow_reader - ping_interval), application]


def daphne_endpoint(host: str, port: int) -> str:
    """daphne's listening socket as a Twisted endpoint, for its accept backlog (DAPHNE_BACKLOG, 2048; the
    kernel caps it at net.core.somaxconn). daphne's -b/-p take Twisted's default of 50: 1,000 clients
    connecting at once overflowed it and 72 of them were reset (bench/concurrency.py --runs 1000)."""
    backlog = max(50, int(os.environ.get("DAPHNE_BACKLOG", "2048")))
    return f"tcp:port={port}:interface={host}:backlog={backlog}"


def run_worker_processes() -> int:
    """How many `runs` workers to start: RUN_WORKER_PROCESSES, else one per core (at most four).

    A worker's runs share one loop and one interpreter lock, so one process uses one core however many runs it
    holds; with one per core the runs' Python work spreads over the machine (bench/turn_overhead.py, 50
    sockets on 2 cores: 0.27–0.44× of the floor's throughput with one worker, 0.59–0.71× with two)."""
    configured = os.environ.get("RUN_WORKER_PROCESSES", "").strip()
    if configured:
        return max(1, int(configured))
    return max(1, min(os.cpu_count() or 1, 4))


def run_worker_command(index: int, concurrency: str | None = None, log_level: str = "INFO") -> list[str]:
    # Agent runs are I/O-bound (model streams, HTTP tools): each is a task on the worker's runs loop (up to
    # RUN_MAX_CONCURRENT), and a handful of Celery threads is enough to hand them over (agents/runner/loop.py).
    # Runs get their own workers; a bot delivery (queue "default") hands the run it follows to its worker's
    # follows loop (channelbots/follows.py) and frees its thread.
    return [
        sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "runs", "-n", f"runs{index + 1 if index else ''}@%h",
        "-P", "threads", "-c", concurrency or os.environ.get("RUN_WORKER_CONCURRENCY", "8"), "-l", log_level,
    ]


def stop_grace_seconds() -> float:
    """How long to wait for every process after SIGTERM before killing it: a `runs` worker lets its runs finish
    for RUN_SHUTDOWN_GRACE_SECONDS, then writes the endings of those it stopped."""
    return int(os.environ.get("RUN_SHUTDOWN_GRACE_SECONDS", "25")) + 15


SANDBOXD_DEFAULT_PORT = 8765
SANDBOXD_DEFAULT_URL = f"http://127.0.0.1:{SANDBOXD_DEFAULT_PORT}"


@functools.lru_cache(maxsize=1)
def sandboxd_command() -> list[str] | None:
    """The deployment's own sandbox service (`python -m sandboxd`) when bubblewrap is installed and can
    isolate a command on this machine (`sandboxd --check`), else None — a sandboxd that cannot start would
    stop every other process here. Its token is SANDBOXD_TOKEN_FILE (made by `manage.py sandbox_token`
    before this starts), its workspaces live in <data dir>/sandboxd, its port is SANDBOXD_URL's."""
    import shutil

    url = os.environ.get("SANDBOXD_URL", SANDBOXD_DEFAULT_URL)
    if not url or shutil.which("bwrap") is None:
        return None
    check = subprocess.run([sys.executable, "-m", "sandboxd", "--check"], cwd=ROOT, capture_output=True, text=True)
    if check.returncode != 0:
        print(check.stderr.strip(), file=sys.stderr)
        return None
    return [sys.executable, "-m", "sandboxd"]


def sandboxd_env() -> dict[str, str]:
    from urllib.parse import urlparse

    data = devservices.data_dir()
    parsed = urlparse(os.environ.get("SANDBOXD_URL", SANDBOXD_DEFAULT_URL))
    return {"SANDBOXD_TOKEN_FILE": os.environ.get("SANDBOXD_TOKEN_FILE", str(data / "sandboxd.token")),
            "SANDBOXD_ROOT": os.environ.get("SANDBOXD_ROOT", str(data / "sandboxd")),
            "SANDBOXD_HOST": parsed.hostname or "127.0.0.1", "SANDBOXD_PORT": str(parsed.port or 8765)}


BROWSER_DEFAULT_PORT = 9222
# WebRTC gathers candidates over UDP, which no request interception sees: a page could aim STUN packets at any
# address inside the network. Forced to proxied (TCP) candidates only; docker-compose's browser passes the same.
# Without Blink's AutomationControlled feature, which a DevTools-driven Chromium turns on, navigator.webdriver is
# false natively in every world (the page's and the client's isolated one), not only where page_js.DESKTOP runs.
# What a browser service without internet should not try: update checks, sync, field trials. Without them a fresh
# profile's first seconds spend DNS lookups that never answer, and a CDP client connecting then can time out.
BROWSER_QUIET = ["--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--metrics-recording-only", "--mute-audio",
                 # Each window (every browse's page is one) preloads the address bar's popup as WebUI pages in
                 # renderers of their own, which nobody sees here: measured on this 2-core VM, Chromium's CPU per
                 # browse 0.51 → 0.21 s and at start 1.2 → 0.5 s without them (Puppeteer turns them off too).
                 "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup"]
BROWSER_HARDENING = ["--force-webrtc-ip-handling-policy", "--webrtc-ip-handling-policy=disable_non_proxied_udp",
                     "--disable-blink-features=AutomationControlled"]


def browser_profile_dir() -> Path:
    return devservices.data_dir() / "browser"


def browser_command() -> list[str] | None:
    """Debian's `chromium` as this deployment's browser service (capability browser_use), or None when it is not
    installed or BROWSER_SERVICE=off. DevTools listens on loopback only (BROWSER_CDP_PORT, 9222): pages it opens
    are guarded by the capability, and nothing off this machine can drive it. `--headless=new` is the full browser
    without a window; the capability replaces its HeadlessChrome user agent per browse. BROWSER_LANG (en-US) is
    the language it says it speaks; BROWSER_TZ (UTC), its time zone, goes in its environment (`browser_env`)."""
    import shutil

    if os.environ.get("BROWSER_SERVICE", "chromium").strip().lower() in ("off", "false", "0", "none"):
        return None
    executable = os.environ.get("BROWSER_EXECUTABLE") or shutil.which("chromium")
    if not executable:
        return None
    port = int(os.environ.get("BROWSER_CDP_PORT", str(BROWSER_DEFAULT_PORT)))
    command = [
        executable, "--headless=new", "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}",
        f"--user-data-dir={browser_profile_dir()}", f"--lang={os.environ.get('BROWSER_LANG', 'en-US')}",
        "--disable-dev-shm-usage", *BROWSER_QUIET, *BROWSER_HARDENING,
    ]
    if os.geteuid() == 0:
        # Chromium will not start its sandbox as root (a dev container); the capability's request guard and the
        # per-browse contexts still hold, but a renderer exploit is not contained: run `make run` as a user.
        command.append("--no-sandbox")
    # The first tab on about:blank, as docker-compose's browser starts: left to itself it loads the new-tab page,
    # and a DevTools client connecting while a tab's navigation has not committed waits for it (Playwright's
    # connect enables every page) — a just-started browser on a loaded machine made a browse time out.
    command.append("about:blank")
    return command


def browser_env() -> dict[str, str]:
    return {"TZ": os.environ.get("BROWSER_TZ", "UTC")}


def prepare_browser_profile() -> None:
    """A fresh profile per launch: each browse works in a context of its own, so the default profile holds
    nothing worth keeping, and a stale DevToolsActivePort or lock of an earlier launch would mislead."""
    import shutil

    shutil.rmtree(browser_profile_dir(), ignore_errors=True)
    browser_profile_dir().mkdir(parents=True, exist_ok=True)


def browser_cdp_url(timeout: float = 15.0) -> str | None:
    """The browser service's DevTools address once Chromium is listening (it writes the port it bound, also
    for BROWSER_CDP_PORT=0, to DevToolsActivePort in its profile), or None if it did not come up in time."""
    marker = browser_profile_dir() / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            first = marker.read_text().split()
        except OSError:
            first = []
        if first:
            return f"http://127.0.0.1:{int(first[0])}"
        time.sleep(0.1)
    return None


def allow_own_browser() -> None:
    """`make run` lists its own browser service for every process it starts (publish checks in web, browses in
    the workers) and makes it the default of every agent's browser (BROWSER_CDP_URL, when its port is fixed);
    an operator's BROWSER_CDP_ALLOWED_HOSTS and BROWSER_CDP_URL, when set, win."""
    os.environ.setdefault("BROWSER_CDP_ALLOWED_HOSTS", "127.0.0.1")
    port = int(os.environ.get("BROWSER_CDP_PORT", str(BROWSER_DEFAULT_PORT)))
    if port:
        os.environ.setdefault("BROWSER_CDP_URL", f"http://127.0.0.1:{port}")


def process_env(name: str) -> dict[str, str]:
    """The environment of the process `name` of `commands()`."""
    return {**_env(), **(sandboxd_env() if name == "sandbox" else {}), **(browser_env() if name == "browser" else {})}


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on host:port (bound as the servers bind, with SO_REUSEADDR, so a connection of
    an earlier launch still in TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def settle_ports(environ: MutableMapping[str, str] = os.environ) -> set[str]:
    """Sandboxd's and the browser's ports, before anything starts. A default port taken (another instance on this
    machine) moves to a free one, written in `environ` so every process started after (the workers that call
    them) reads the same; a port the operator set that is taken is theirs: that service is not started here, and
    a message names the setting. Returns the services not to start."""
    from urllib.parse import urlparse

    skip: set[str] = set()
    if "SANDBOXD_URL" not in environ:
        if port_taken(SANDBOXD_DEFAULT_PORT):
            environ["SANDBOXD_URL"] = f"http://127.0.0.1:{free_port()}"
            print(f"sandbox service: port {SANDBOXD_DEFAULT_PORT} is taken (another instance?); this one uses "
                  f"{environ['SANDBOXD_URL']} (SANDBOXD_URL chooses).")
    elif environ["SANDBOXD_URL"]:
        parsed = urlparse(environ["SANDBOXD_URL"])
        if parsed.hostname in ("127.0.0.1", "localhost") and port_taken(parsed.port or 80):
            skip.add("sandbox")
            print(f"sandbox service: SANDBOXD_URL={environ['SANDBOXD_URL']} is already listening (another instance, "
                  "or your own sandboxd): not starting one; agents use that one. Set SANDBOXD_URL to a free port "
                  "for a sandbox of this instance's own.")
    configured = environ.get("BROWSER_CDP_PORT", "").strip()
    if not configured:
        if port_taken(BROWSER_DEFAULT_PORT):
            environ["BROWSER_CDP_PORT"] = str(free_port())
            print(f"browser service: port {BROWSER_DEFAULT_PORT} is taken (another instance?); this one uses "
                  f"{environ['BROWSER_CDP_PORT']} (BROWSER_CDP_PORT chooses).")
    elif int(configured) and port_taken(int(configured)):
        skip.add("browser")
        print(f"browser service: BROWSER_CDP_PORT={configured} is taken: not starting one. Set BROWSER_CDP_PORT to "
              "a free port (or 0) for a browser of this instance's own.")
    return skip


def commands(port: int, skip: set[str] | frozenset[str] = frozenset()) -> dict[str, list[str]]:
    py = sys.executable
    sandbox = sandboxd_command() if "sandbox" not in skip else None
    browser = browser_command() if "browser" not in skip else None
    workers = {f"worker{index + 1 if index else ''}": run_worker_command(index) for index in range(run_worker_processes())}
    return {
        "web": daphne_command("config.asgi:application", port),
        **workers,
        "default": [
            py, "-m", "celery", "-A", "config", "worker", "-Q", "default,cpu", "-n", "default@%h",
            "-P", "threads", "-c", os.environ.get("DEFAULT_WORKER_CONCURRENCY", "16"), "-l", "INFO",
        ],
        "beat": [py, "-m", "celery", "-A", "config", "beat", "-l", "INFO"],
        # Polling / socket / stream connections of channel bots, in a process of their own.
        "bots": [py, "manage.py", "channel_supervisor"],
        # The sandbox service of capability sandbox's `service` backend (bubblewrap; absent without it).
        **({"sandbox": sandbox} if sandbox else {}),
        # The browser service of capability browser_use (Debian's chromium; absent without it).
        **({"browser": browser} if browser else {}),
    }


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    if port_taken(port):
        print(f"port {port} is taken (another instance of AgenticOS, or another server): start this one with "
              f"PORT set to a free port, e.g. PORT={free_port()} make run — and its own AGENTICOS_DATA_DIR for a "
              "deployment of its own.", file=sys.stderr)
        return 1
    skip = settle_ports()
    try:
        urls = devservices.start()
    except devservices.ServiceError as exc:
        print(exc, file=sys.stderr)
        return 1
    for key, value in urls.items():
        print(f"embedded service: {key}={value}")
    # One Prometheus directory for every process started below (/metrics adds them up, agenticos/metrics.py),
    # emptied: the counts of processes of an earlier launch would otherwise be added forever.
    from agenticos import metrics

    os.environ[metrics.MULTIPROC_VARIABLE] = metrics.prepare_multiproc_dir(devservices.data_dir())
    _manage("migrate", "--noinput")
    _manage("platform_bootstrap")
    if "sandbox" not in skip and sandboxd_command() is not None:
        _manage("sandbox_token")  # keeps an existing token
    elif "sandbox" not in skip:
        print("no sandbox service (bubblewrap missing or unable to isolate here): agents get stored files, no shell.")
    if "browser" not in skip and browser_command() is not None:
        prepare_browser_profile()
        allow_own_browser()
    elif "browser" not in skip:
        print("no browser service (chromium not installed, or BROWSER_SERVICE=off): agents get no web browser.")

    children = {name: (cmd, process_env(name)) for name, cmd in commands(port, skip).items()}
    supervisor = Supervisor(children, cwd=ROOT, relay=_relay, err=sys.stderr)
    supervisor.start_all()
    if "browser" in children:
        cdp_url = browser_cdp_url()
        print(f"browser service: {cdp_url} (an agent's browser names it as cdp_url)" if cdp_url
              else "the browser service did not open its DevTools port (BROWSER_CDP_PORT taken?)")
    print(f"\nAgenticOS is up: http://127.0.0.1:{port}/  (admin: /admin/, API docs: /api/docs/)  Ctrl-C stops.")
    print("DEBUG is on: error pages show code and settings (`make run` turns it off).\n" if _debug_on(_env())
          else "DEBUG is off (`make dev` turns it on for a developer's error pages).\n")

    def _stop(*_):
        supervisor.stopping.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    supervisor.run()  # a process that dies is started again; only a signal ends this
    supervisor.shutdown(stop_grace_seconds())
    print("stopped web, workers and beat (the embedded servers keep their data; `make services-stop` stops them).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
