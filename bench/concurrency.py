"""Runs at scale: N runs started at once through `POST /api/v1/agents/{id}/run?wait=false`, against a local
OpenAI-compatible server that streams at a real model's pace, behind an `openai_compatible` profile (the real
OpenAI client path, the outbound guard included), through the `runs` workers `make run` starts.

    .venv/bin/python bench/concurrency.py [--runs 50,300,1000] [--via api|socket] [--tokens 40] [--seconds 2.3]

--via socket opens N widget sockets (`/api/v1/embed/<key>/ws`, one visitor each) and sends one message on
each instead of N REST calls: the same runner behind daphne's socket path.

Each run asks the model twice: a `create_chart` tool call (streamed in a few chunks), then an answer of
--tokens tokens over --seconds. Printed per N: peak streams open at the model server, start delay (request
sent → the run's first model request) p50/p95, wall time for all N against one run alone, CPU per run (web,
runs workers, PostgreSQL, Redis; the model server apart), the peak RSS of each process, and errors / runs not
completed. It also prints the floor: the same runs made by bare pydantic-ai (no platform) in one process
against the same server — the CPU the agent library and the OpenAI client spend per run, which bounds what
any runner can reach on this machine. Runs against the embedded dev services (`python -m config.devservices start`), starting its own
daphne, runs workers and model server; launcher helpers and measurement from bench/turn_overhead.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.tenant import owner_and_model, scale_agent  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

MARKER = re.compile(r"bench-run-[0-9a-f]{32}")
# The tool call the model server streams: a chart of one point (the clock has no tool; capabilities/clock).
CHART_ARGS = json.dumps({"chart_type": "bar", "title": "Now", "x_values": ["now"],
                         "series": [{"name": "hour", "values": [1]}]})


# ------------------------------------------------------------------ the model server (a process of its own)


class ModelServer:
    """chat.completions over SSE at a model's pace. Counts streams open at once and when each run's first
    request arrived (the prompt carries a marker)."""

    def __init__(self, tokens: int, seconds: float) -> None:
        self.tokens = tokens
        self.pace = seconds / tokens
        self.open = 0
        self.peak = 0
        self.first_seen: dict[str, float] = {}
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            method, path, _ = request_line.split(" ", 2)
            if path == "/stats":
                await self._json(writer, {"peak": self.peak, "open": self.open, "requests": self.requests,
                                          "first_seen": self.first_seen})
            elif path == "/reset":
                self.peak, self.requests, self.first_seen = self.open, 0, {}
                await self._json(writer, {"ok": True})
            elif path.endswith("/chat/completions") and method == "POST":
                await self._chat(writer, json.loads(body or b"{}"))
            else:
                await self._json(writer, {"error": {"message": "not found"}}, status=404)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _json(self, writer, payload, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        writer.write(f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        await writer.drain()

    async def _chat(self, writer, body: dict) -> None:
        self.requests += 1
        messages = body.get("messages") or []
        text = json.dumps(messages)
        found = MARKER.search(text)
        if found and found.group(0) not in self.first_seen:
            self.first_seen[found.group(0)] = time.time()
        answered_tool = any(m.get("role") == "tool" for m in messages)
        self.open += 1
        self.peak = max(self.peak, self.open)
        try:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                         b"Connection: close\r\n\r\n")
            model = body.get("model", "gpt-4o-mini")

            def chunk(delta, finish=None):
                return {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764000000,
                        "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

            async def send(event) -> None:
                writer.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                await writer.drain()

            await send(chunk({"role": "assistant", "content": ""}))
            if answered_tool:
                for n in range(self.tokens):
                    await asyncio.sleep(self.pace)
                    await send(chunk({"content": f" word{n}"}))
                finish, completion = "stop", self.tokens
            else:
                call = {"index": 0, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                        "function": {"name": "create_chart", "arguments": ""}}
                await asyncio.sleep(self.pace)
                await send(chunk({"tool_calls": [call]}))
                for piece in (CHART_ARGS[:40], CHART_ARGS[40:]):
                    await asyncio.sleep(self.pace)
                    await send(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
                finish, completion = "tool_calls", 5
            await send(chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                await send({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764000000,
                            "model": model, "choices": [],
                            "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": completion,
                                      "total_tokens": len(text) // 4 + completion}})
            writer.write(b"data: [DONE]\n\n")
            await writer.drain()
        finally:
            self.open -= 1


async def serve_model(port: int, tokens: int, seconds: float) -> None:
    server = ModelServer(tokens, seconds)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=4096)
    async with listener:
        await listener.serve_forever()


# ------------------------------------------------------------------ the bench

# --shared-tls-context: every default-verifying httpx2 transport of a process shares one TLS context (what
# agenticos.netguard.PinnedTransport would do with `verify=` a context built once), loaded as sitecustomize.
SHARED_TLS_CONTEXT = """
import httpx2

_original = httpx2.AsyncHTTPTransport.__init__
_shared = []


def _init(self, *args, verify=True, cert=None, trust_env=True, **kwargs):
    if verify is True and cert is None:
        if not _shared:
            _shared.append(httpx2.create_ssl_context(trust_env=trust_env))
        verify = _shared[0]
    _original(self, *args, verify=verify, cert=cert, trust_env=trust_env, **kwargs)


httpx2.AsyncHTTPTransport.__init__ = _init
"""


def setup_tenant(model_port: int) -> tuple[str, str]:
    """An organization without a cap, an `openai_compatible` profile at the model server, an agent with the
    charts, and an API key. Returns (agent id, raw key)."""
    from agenticos.services import create_api_key

    org, actor, profile = owner_and_model("bench-scale", "Bench scale", model_port)
    agent = scale_agent(org, actor, profile)
    _, raw = create_api_key(actor=actor, name=f"bench {uuid.uuid4().hex[:6]}")
    return str(agent.pk), raw


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def fire(base: str, agent_id: str, key: str, n: int) -> tuple[dict[str, float], dict[str, str], list]:
    """Start n runs at once. Returns {marker: sent at}, {marker: run id}, errors."""
    import httpx

    sent: dict[str, float] = {}
    run_ids: dict[str, str] = {}
    errors: list = []
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120,
                                 headers={"Authorization": f"Bearer {key}"}) as client:
        async def one() -> None:
            marker = f"bench-run-{uuid.uuid4().hex}"
            sent[marker] = time.time()
            try:
                response = await client.post(f"/api/v1/agents/{agent_id}/run?wait=false",
                                             json={"prompt": f"{marker}: what time is it?"})
            except httpx.HTTPError as exc:
                errors.append(repr(exc))
                return
            if response.status_code != 202:
                errors.append((response.status_code, response.text[:200]))
                return
            run_ids[marker] = response.json()["run_id"]

        await asyncio.gather(*(one() for _ in range(n)))
    return sent, run_ids, errors


ORIGIN = "http://bench.example"


def setup_embed(agent_id: str) -> str:
    """A widget on the bench agent (one visitor per socket, limits out of the way). Returns its public key."""
    from agenticos.models import User
    from agents.models import Agent
    from embeds.models import Embed

    agent = Agent.objects.get(pk=agent_id)
    embed, _ = Embed.objects.update_or_create(
        organization=agent.organization, agent=agent, name="bench-scale",
        defaults={"kind": "widget", "allowed_origins": [ORIGIN], "rate_limit_per_minute": 1_000_000,
                  "created_by": User.objects.get(email="bench-scale@example.com")})
    return embed.public_key


async def fire_sockets(url: str, n: int) -> tuple[dict[str, float], dict[str, str], list, dict[str, float]]:
    """Open n widget sockets at once and send one message on each. Returns {marker: sent at},
    {marker: run id}, errors, {marker: completed at}."""
    import websockets

    sent: dict[str, float] = {}
    run_ids: dict[str, str] = {}
    done: dict[str, float] = {}
    errors: list = []

    async def one() -> None:
        marker = f"bench-run-{uuid.uuid4().hex}"
        try:
            async with websockets.connect(url, origin=ORIGIN, open_timeout=120, max_size=None) as ws:
                ready = json.loads(await asyncio.wait_for(ws.recv(), 120))
                if ready.get("type") != "ready":
                    errors.append(f"no ready: {ready}")
                    return
                sent[marker] = time.time()
                await ws.send(json.dumps({"type": "message", "text": f"{marker}: what time is it?"}))
                while True:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 300))
                    run_id = frame.get("run_id") or (frame.get("data") or {}).get("run_id")
                    if run_id:
                        run_ids.setdefault(marker, run_id)
                    if frame.get("type") == "complete":
                        done[marker] = time.time()
                        return
                    if frame.get("type") == "error":
                        errors.append(frame.get("data") or frame)
                        return
        except Exception as exc:  # noqa: BLE001 - every failure is counted and printed, by kind
            errors.append(repr(exc)[:200])

    await asyncio.gather(*(one() for _ in range(n)))
    return sent, run_ids, errors, done


def model_stats(port: int, path: str = "/stats") -> dict:
    import httpx

    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).json()


def service_pids() -> dict[str, list[int]]:
    """The embedded PostgreSQL (its postmaster and the backends of this bench's database) and Redis this bench
    talks to — not those of another data dir on the same machine (the test servers), nor the backends of another
    database on a shared server (other sessions' tests). Redis is one process: shared, it counts theirs too."""
    from django.conf import settings

    database = settings.DATABASES["default"]["NAME"]

    postmaster = int((Path(settings.DATA_DIR) / "pg" / "postmaster.pid").read_text().split()[0])
    socket = str(Path(settings.DATA_DIR) / "redis" / "redis.sock")
    postgres, redis = [postmaster], []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat[1]) == postmaster and f" {database} " in cmdline:
            postgres.append(int(entry.name))
        elif "redis-server" in cmdline and socket in cmdline:
            redis.append(int(entry.name))
    return {"postgres": postgres, "redis": redis}


def measure(n: int, *, base: str, agent_id: str, key: str, model_port: int, procs: dict, timeout: float,
            socket_url: str = "", py_spy: str = "") -> dict:
    from agents.models import Run
    from bench.turn_overhead import cpu_seconds

    model_stats(model_port, "/reset")
    parts = {"web": [procs["web"].pid], "workers": [p.pid for name, p in procs.items() if name.startswith("worker")],
             **service_pids(), "model": [procs["model"].pid]}
    before = {part: cpu_seconds(pids) for part, pids in parts.items()}
    rss = {name: 0.0 for name in procs}
    spies = [] if not py_spy or n < 10 else [
        subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--nonblocking", "-r", "200", "-f", "raw", "-p", str(proc.pid),
                          "-o", f"{py_spy}/{name}-n{n}.txt"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name, proc in procs.items() if name != "model"]
    if spies:
        time.sleep(1)  # attached before the first run
        before = {part: cpu_seconds(pids) for part, pids in parts.items()}
    started = time.time()
    done: dict[str, float] = {}
    if socket_url:
        sent, run_ids, errors, done = asyncio.run(fire_sockets(socket_url, n))
    else:
        sent, run_ids, errors = asyncio.run(fire(base, agent_id, key, n))
    terminal = {"completed", "failed", "cancelled", "budget_exceeded", "awaiting_approval", "awaiting_answer"}
    deadline = time.monotonic() + timeout
    statuses: dict[str, int] = {}
    while time.monotonic() < deadline:
        for name, proc in procs.items():
            rss[name] = max(rss[name], rss_mb(proc.pid))
        rows = Run.objects.filter(pk__in=list(run_ids.values())).values_list("status", flat=True)
        statuses = {}
        for status in rows:
            statuses[status] = statuses.get(status, 0) + 1
        if sum(count for status, count in statuses.items() if status in terminal) >= len(run_ids):
            break
        time.sleep(0.25)
    finished = Run.objects.filter(pk__in=list(run_ids.values()), finished_at__isnull=False)
    last = max((at.timestamp() for at in finished.values_list("finished_at", flat=True) if at), default=float("nan"))
    if socket_url:  # a socket's run ends when its `complete` frame arrives
        last = max(done.values(), default=float("nan"))
        statuses = {"completed": len(done)}
    lost = len(sent) - len(errors) - len(done) if socket_url else 0
    after = {part: cpu_seconds(pids) for part, pids in parts.items()}
    for spy in spies:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
    stats = model_stats(model_port)
    delays = [stats["first_seen"][marker] - sent[marker] for marker in sent if marker in stats["first_seen"]]
    return {
        "n": n, "peak": stats["peak"], "wall": last - started, "p50": percentile(delays, 0.5),
        "p95": percentile(delays, 0.95), "errors": errors, "statuses": statuses,
        "completed": statuses.get("completed", 0), "lost": lost,
        "cpu_ms": {part: (after[part] - before[part]) * 1000 / max(n, 1) for part in parts},
        "rss": rss,
    }


def floor(model_port: int, n: int) -> tuple[float, float]:
    """The same run (tool call, then the answer) made by bare pydantic-ai in this process, n at once, against the
    model server: (wall seconds, CPU ms per run). No platform at all: the agent library and the OpenAI client."""
    import httpx
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def level() -> tuple[float, float]:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=None), timeout=120) as http:
            client = AsyncOpenAI(base_url=f"http://127.0.0.1:{model_port}/v1", api_key="bench", http_client=http)
            agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
                          instructions="Answer after drawing a chart.")

            @agent.tool_plain
            def create_chart(chart_type: str, title: str, x_values: list[str], series: list[dict]) -> dict:
                return {"kind": "chart", "chart_type": chart_type, "title": title, "x_values": x_values,
                        "series": series}

            async def one() -> None:
                async with agent.run_stream(f"bench-run-{uuid.uuid4().hex}: what time is it?") as result:
                    async for _ in result.stream_text(delta=True):
                        pass

            await asyncio.gather(*(one() for _ in range(2)))  # warm
            cpu, wall = time.process_time(), time.time()
            await asyncio.gather(*(one() for _ in range(n)))
            return time.time() - wall, (time.process_time() - cpu) * 1000 / n

    return asyncio.run(level())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", default="50,300,1000")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=2.3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--via", choices=("api", "socket"), default="api")
    parser.add_argument("--shared-tls-context", action="store_true",
                        help="what the proposed netguard patch gives: one TLS context per process instead of one "
                             "per run's HTTP client (loading the CA bundle was most of a run's CPU)")
    parser.add_argument("--floor", type=int, default=300, help="runs at once for the bare pydantic-ai floor (0: skip)")
    parser.add_argument("--py-spy", metavar="DIR", default="",
                        help="record each web and runs-worker process with py-spy (raw collapsed stacks, 200 Hz, "
                             "non-blocking) into DIR during every N >= 10; bench/profile_top.py summarizes them")
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)  # the model server's own process
    args = parser.parse_args()
    if args.serve_model:
        asyncio.run(serve_model(args.serve_model, args.tokens, args.seconds))
        return

    import logging

    import django

    django.setup()
    from django.conf import settings

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown the figures

    from bench.turn_overhead import free_port, start, wait_port, wait_quiet
    from config.launcher import daphne_command, run_worker_command, run_worker_processes

    model_port, web_port = free_port(), free_port()
    agent_id, key = setup_tenant(model_port)
    env = dict(os.environ, PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING", DEBUG="false",
               ALLOWED_HOSTS="127.0.0.1,localhost", SECRET_KEY=settings.SECRET_KEY,
               VAULT_MASTER_KEY=settings.VAULT_MASTER_KEY, MODEL_ALLOWED_PRIVATE_HOSTS="127.0.0.1",
               RATE_LIMIT_RUN_PER_MINUTE="1000000", RATE_LIMIT_EMBED_PER_MINUTE="1000000")
    if args.shared_tls_context:
        patch_dir = Path(tempfile.mkdtemp(prefix="bench-tls-"))
        (patch_dir / "sitecustomize.py").write_text(SHARED_TLS_CONTEXT)
        env["PYTHONPATH"] = os.pathsep.join([str(patch_dir), env.get("PYTHONPATH", "")])
    procs = {
        "model": start([sys.executable, str(Path(__file__)), "--serve-model", str(model_port), "--tokens",
                        str(args.tokens), "--seconds", str(args.seconds)], env, "model"),
        "web": start(daphne_command("config.asgi:application", web_port), env, "web"),
        **{f"worker{i + 1}": start(run_worker_command(i, log_level="WARNING"), env, f"worker{i}")
           for i in range(run_worker_processes())},
    }
    try:
        wait_port(model_port)
        wait_port(web_port)
        wait_quiet([proc.pid for proc in procs.values()])
        base = f"http://127.0.0.1:{web_port}"
        socket_url = (f"ws://127.0.0.1:{web_port}/api/v1/embed/{setup_embed(agent_id)}/ws"
                      if args.via == "socket" else "")
        common = {"base": base, "agent_id": agent_id, "key": key, "model_port": model_port, "procs": procs,
                  "timeout": args.timeout, "socket_url": socket_url}
        if args.py_spy:
            Path(args.py_spy).mkdir(parents=True, exist_ok=True)
        for _ in range(2 * run_worker_processes()):  # warm every worker
            measure(1, **common)
        wait_quiet([proc.pid for proc in procs.values()], limit=10)
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python "
              f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}; {run_worker_processes()} runs workers "
              f"× RUN_MAX_CONCURRENT {settings.RUN_MAX_CONCURRENT}; model: tool call, then {args.tokens} tokens "
              f"over {args.seconds} s; via {args.via}")
        alone = measure(1, **common)
        print(f"one run alone: {alone['wall']:.2f} s")
        for n in [int(value) for value in args.runs.split(",")]:
            wait_quiet([proc.pid for proc in procs.values()], limit=10)
            load = os.getloadavg()[0]
            r = measure(n, **common, py_spy=args.py_spy)
            cpu = ", ".join(f"{part} {ms:.1f}" for part, ms in r["cpu_ms"].items())
            rss = ", ".join(f"{name} {mb:.0f}" for name, mb in r["rss"].items())
            print(f"N={n:>5}: peak streams {r['peak']:>5}, start delay p50 {r['p50']:.2f} s / p95 {r['p95']:.2f} s, "
                  f"wall {r['wall']:.2f} s = {r['wall'] / alone['wall']:.2f}x one run; completed {r['completed']}/{n}, "
                  f"statuses {r['statuses']}, {len(r['errors'])} errors{': ' + str(r['errors'][:3]) if r['errors'] else ''}"
                  f"{', ' + str(r['lost']) + ' sockets lost' if socket_url else ''}; "
                  f"load {load:.1f} before, {os.getloadavg()[0]:.1f} after")
            print(f"         CPU ms/run: {cpu} (all but the model: "
                  f"{sum(ms for part, ms in r['cpu_ms'].items() if part != 'model'):.1f}); peak RSS MB: {rss}")
        if args.floor:
            wait_quiet([proc.pid for proc in procs.values()], limit=10)
            load, k = os.getloadavg()[0], args.floor
            wall, cpu_ms = floor(model_port, k)
            print(f"floor, bare pydantic-ai in one process, {k} at once: {cpu_ms:.1f} CPU ms/run, wall {wall:.2f} s; "
                  f"on {os.cpu_count()} cores no runner can do {k} in under {k * cpu_ms / 1000 / os.cpu_count():.1f} s "
                  f"of CPU alone ({k * cpu_ms / 1000 / os.cpu_count() / alone['wall']:.1f}x one run); load {load:.1f}")
    finally:
        for proc in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in procs.values():
            try:
                proc.wait(60)
            except Exception:  # noqa: BLE001 - a worker still draining: it has had its chance
                os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
