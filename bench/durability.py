"""Runs that survive their worker, at scale: N runs started at once on two `runs` workers (the launcher's own
command), a worker killed with SIGKILL every --kill-every seconds (the one holding the most runs) and started again
at once, told the dead one's name (as `make run`'s launcher restarts it: its runs go back to the queue as the new
one starts), and the beat's sweep (`finish.sweep_stale_runs`,
`requeue_lost_runs`) run every 10 s from this process, as beat's schedule does (CELERY_BEAT_SCHEDULE).

    .venv/bin/python bench/durability.py [--runs 200] [--kill-every 10] [--kills 6] [--steps 4] [--tool-seconds 2]

Each run asks a local OpenAI-compatible model server (a process of its own, streaming at a model's pace) for
--steps tool calls in turn, each a custom REST tool POSTing `?key=<run>-<step>` to a counting server in this
process that takes --tool-seconds to answer, then for an answer of --tokens tokens. A key that reaches the server
twice is a side effect done twice. Printed: runs completed / failed / still open, runs resumed and interruptions,
time from a worker's death to each of its runs resuming on another (p50 / p95, and the `waited_seconds` the run
records: since the lost worker's last heartbeat), tool calls executed twice (must be 0), in flight at a death
(not repeated: the model is told), and what a checkpoint costs per step: its stored bytes (sampled from live runs)
and the worker CPU and PostgreSQL ms of writing one (bench/checkpoint_cost.py's measures, on a real run's
checkpoint). With the production timings (heartbeat 10 s, stale after 40 s, sweep every 10 s) unless
RUN_HEARTBEAT_SECONDS / RUN_HEARTBEAT_STALE_SECONDS say otherwise.

Against DATABASE_URL / REDIS_URL (a migrated database of its own: it adds an organization `bench-durability`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.tenant import owner_and_model  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

MARKER = re.compile(r"dur-[0-9a-f]{12}")


# ------------------------------------------------------------------ the model (a process of its own)


async def serve_model(port: int, steps: int, tokens: int, seconds: float) -> None:
    """chat.completions over SSE: while the request holds fewer than `steps` tool results, a call of `effect` for
    the next step (key `<marker>-<n>`), else the answer, `tokens` words over `seconds`. Stateless: a request sent
    again (a resumed run) gets the same answer."""
    pace = seconds / max(tokens, 1)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0") or 0)) or b"{}")
            messages = body.get("messages") or []
            found = MARKER.search(json.dumps(messages))
            done = sum(1 for m in messages if m.get("role") == "tool")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")

            async def send(delta: dict, finish: str | None = None) -> None:
                event = {"id": "chatcmpl-dur", "object": "chat.completion.chunk", "created": 1764000000,
                         "model": body.get("model", "gpt-4o-mini"),
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                writer.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                await writer.drain()

            await send({"role": "assistant", "content": ""})
            if done < steps and found:
                await asyncio.sleep(pace)
                arguments = json.dumps({"key": f"{found.group(0)}-{done}"})
                await send({"tool_calls": [{"index": 0, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                                            "function": {"name": "effect", "arguments": arguments}}]})
                finish = "tool_calls"
            else:
                for n in range(tokens):
                    await asyncio.sleep(pace)
                    await send({"content": f" word{n}"})
                finish = "stop"
            await send({}, finish)
            usage = {"prompt_tokens": len(json.dumps(messages)) // 4, "completion_tokens": 10}
            usage["total_tokens"] = usage["prompt_tokens"] + 10
            writer.write(b"data: " + json.dumps({"id": "chatcmpl-dur", "object": "chat.completion.chunk",
                                                 "created": 1764000000, "model": "gpt-4o-mini", "choices": [],
                                                 "usage": usage}).encode() + b"\n\ndata: [DONE]\n\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


# ------------------------------------------------------------------ the side effects (a thread of this process)


class Effects:
    """POST /effect?key=K: counted as it arrives (a side effect is done when its request reaches the server),
    answered after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        effects = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                key = parse_qs(urlparse(self.path).query).get("key", [""])[0]
                with effects.lock:
                    effects.counts[key] += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                time.sleep(effects.seconds)
                data = json.dumps({"done": key}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # its worker died meanwhile
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# ------------------------------------------------------------------ the bench


def setup_tenant(model_port: int, effects_port: int):
    """An organization without a cap, a profile at the model server, an agent with the `effect` REST tool."""
    from agents import services
    from capabilities.models import CustomTool

    org, actor, profile = owner_and_model("bench-durability", "Bench durability", model_port)
    tool, _ = CustomTool.objects.update_or_create(organization=org, alias="effect", defaults={
        "name": "Effect", "method": "POST", "url": f"http://127.0.0.1:{effects_port}/effect",
        "auth": {"family": "none"}, "parameters": [{"name": "key", "location": "query", "required": True}]})
    agent = services.create_agent(actor=actor, name=f"Durable {uuid.uuid4().hex[:6]}", spec={
        "name": "Durable", "instructions": "Do each step with the effect tool.", "model_profile_id": str(profile.pk),
        "custom_tool_ids": [str(tool.pk)], "capabilities": [{"id": "custom_tools", "config": {}}]})
    version = services.publish_agent(actor=actor, agent=agent)
    return agent, version, actor.user


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class Workers:
    """The `runs` workers, each started again at once when this bench kills it."""

    def __init__(self, count: int, env: dict[str, str]) -> None:
        from bench.turn_overhead import start
        from config.launcher import run_worker_command

        self.env = env
        from config.supervision import PREDECESSOR_ENV

        # Started again as the launcher does (config.supervision): told the name of the worker it replaces.
        self.start = lambda index, dead="": start(run_worker_command(index, log_level="WARNING"),
                                                  {**env, PREDECESSOR_ENV: dead} if dead else env, f"durable-w{index}")
        self.procs = {index: self.start(index) for index in range(count)}
        self.killed_at: dict[int, float] = {}  # pid → when it was killed

    def kill_busiest(self) -> int:
        """SIGKILL the worker holding the most running runs, and start it again. Returns how many runs it held
        (none held: nobody is killed, 0)."""
        import socket

        from agents.models import Run, RunStatus

        host = socket.gethostname()
        held = Counter(Run.objects.filter(status=RunStatus.RUNNING).values_list("worker", flat=True))
        index = max(self.procs, key=lambda i: held.get(f"{host}:{self.procs[i].pid}", 0))
        proc = self.procs[index]
        if not held.get(f"{host}:{proc.pid}"):
            return 0
        os.killpg(proc.pid, signal.SIGKILL)
        self.killed_at[proc.pid] = time.time()
        proc.wait(30)
        self.procs[index] = self.start(index, f"{host}:{proc.pid}")
        return held.get(f"{host}:{proc.pid}", 0)

    def stop(self) -> None:
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def sweeper(stop: threading.Event, every: float) -> None:
    """What beat's `sweep-stale-runs` does (agents.tasks.sweep_stale_runs): hand back stale runs, resend lost
    queued ones."""
    from django.db import close_old_connections

    from agents.runner.finish import requeue_lost_runs, sweep_stale_runs

    while not stop.wait(every):
        try:
            sweep_stale_runs()
            requeue_lost_runs()
        finally:
            close_old_connections()


def sample_checkpoints(stop: threading.Event, sizes: dict, largest: dict) -> None:
    """Every 0.5 s, the stored size of each live run's checkpoint and its step count (the deepest one kept)."""
    from django.db import close_old_connections, connection

    while not stop.wait(0.5):
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, (checkpoint->>'steps')::int, pg_column_size(checkpoint), "
                           "octet_length(checkpoint::text) FROM agents_run WHERE status = 'running' "
                           "AND checkpoint IS NOT NULL")
            for run_id, steps, stored, text in cursor.fetchall():
                sizes[run_id] = (steps, stored, text)
            deepest = max((steps for steps, _, _ in sizes.values() if steps), default=0)
            if deepest > largest.get("steps", 0):
                cursor.execute("SELECT checkpoint FROM agents_run WHERE status = 'running' AND "
                               "(checkpoint->>'steps')::int = %s LIMIT 1", [deepest])
                row = cursor.fetchone()
                if row and row[0]:
                    largest.clear()
                    largest.update(row[0] if isinstance(row[0], dict) else json.loads(row[0]))
        close_old_connections()


def checkpoint_ms(stored: dict) -> tuple[float, float, float]:
    """CPU ms to build the checkpoint of that run's last step (appended to the previous, and whole), and
    PostgreSQL ms to apply the append: bench/checkpoint_cost.py's measures, on this real checkpoint."""
    from agents.runner import checkpoint
    from bench.checkpoint_cost import cpu_per_step, database_per_step

    messages = checkpoint.restore(stored)
    steps = len(messages) // 2
    append, whole = cpu_per_step(messages, steps, 50)
    database = database_per_step(messages, steps, [steps])[steps]
    return append, whole, database


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-every", type=float, default=10)
    parser.add_argument("--kills", type=int, default=6)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tool-seconds", type=float, default=2.0)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        asyncio.run(serve_model(args.serve_model, args.steps, args.tokens, args.seconds))
        return

    import logging

    import django

    django.setup()
    from django.conf import settings

    logging.getLogger("httpx").setLevel(logging.WARNING)
    from agents.models import Run, RunStatus, ToolCall
    from agents.runs import start_run
    from bench.turn_overhead import free_port, start, wait_port, wait_quiet

    sweep_every = settings.CELERY_BEAT_SCHEDULE["sweep-stale-runs"]["schedule"]
    effects = Effects(args.tool_seconds)
    model_port = free_port()
    agent, version, user = setup_tenant(model_port, effects.port)
    env = dict(os.environ, PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING", SECRET_KEY=settings.SECRET_KEY,
               VAULT_MASTER_KEY=settings.VAULT_MASTER_KEY, MODEL_ALLOWED_PRIVATE_HOSTS="127.0.0.1",
               TOOL_ALLOWED_PRIVATE_HOSTS="127.0.0.1")
    model = start([sys.executable, str(Path(__file__)), "--serve-model", str(model_port), "--steps",
                   str(args.steps), "--tokens", str(args.tokens), "--seconds", str(args.seconds)], env, "dur-model")
    workers = Workers(args.workers, env)
    stop = threading.Event()
    sizes: dict = {}
    largest: dict = {}
    threads = [threading.Thread(target=sweeper, args=(stop, sweep_every), daemon=True),
               threading.Thread(target=sample_checkpoints, args=(stop, sizes, largest), daemon=True)]
    try:
        wait_port(model_port)
        wait_quiet([p.pid for p in workers.procs.values()], limit=60)
        load = os.getloadavg()[0]
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python "
              f"{platform.python_version()}, load {load:.1f} before; {args.workers} runs workers; {args.runs} runs "
              f"of {args.steps} side-effecting REST steps ({args.tool_seconds} s each) and {args.tokens} tokens over "
              f"{args.seconds} s; a worker SIGKILLed every {args.kill_every} s, {args.kills} times; heartbeat "
              f"{settings.RUN_HEARTBEAT_SECONDS} s, stale after {settings.RUN_HEARTBEAT_STALE_AFTER.seconds} s, "
              f"sweep every {sweep_every:.0f} s, at most {settings.RUN_MAX_RESUMES} resumes")
        for thread in threads:
            thread.start()
        started = time.time()
        ids = [start_run(agent=agent, version=version, surface="api", user=user, acting_role="owner",
                         prompt=f"dur-{uuid.uuid4().hex[:12]}: do the steps").pk for _ in range(args.runs)]
        kills, held = 0, []
        next_kill = time.time() + args.kill_every
        deadline = time.monotonic() + args.timeout
        open_states = (RunStatus.QUEUED, RunStatus.RUNNING)
        while time.monotonic() < deadline:
            if kills < args.kills and time.time() >= next_kill:
                # A worker holding no run yet (its runs wait for the sweep) is not worth killing: try again soon.
                taken = workers.kill_busiest()
                if taken:
                    held.append(taken)
                    kills += 1
                    next_kill += args.kill_every
                else:
                    next_kill = time.time() + 1
            if not Run.objects.filter(pk__in=ids, status__in=open_states).exists():
                break
            time.sleep(0.5)
        wall = time.time() - started
        load_after = os.getloadavg()[0]
        stop.set()

        runs = list(Run.objects.filter(pk__in=ids).only("status", "events"))
        statuses = Counter(run.status for run in runs)
        to_resume, claimed, waited, resumed_runs, interruptions = [], [], [], 0, 0
        for run in runs:
            events = run.events or []
            resumed_runs += any(e["type"] == "run_resumed" for e in events)
            for before, after in zip(events, events[1:], strict=False):
                if before["type"] != "run_interrupted" or after["type"] != "run_resumed":
                    continue
                interruptions += 1
                claimed.append((datetime.fromisoformat(after["at"]) - datetime.fromisoformat(before["at"]))
                               .total_seconds())
                pid = int(str(before.get("worker") or ":0").rsplit(":", 1)[1] or 0)
                if pid in workers.killed_at:
                    to_resume.append(datetime.fromisoformat(after["at"]).timestamp() - workers.killed_at[pid])
                if after.get("waited_seconds") is not None:
                    waited.append(after["waited_seconds"])
        twice = {key: n for key, n in effects.counts.items() if n > 1}
        in_flight = ToolCall.objects.filter(run_id__in=ids, status=ToolCall.Status.ERROR,
                                            result__icontains="interrupted").count()
        print(f"wall {wall:.0f} s; {kills} workers killed holding {sum(held)} runs ({held}); load {load_after:.1f} "
              f"after")
        print(f"runs: {statuses.get(RunStatus.COMPLETED, 0)}/{args.runs} completed, statuses {dict(statuses)}; "
              f"{resumed_runs} resumed ({interruptions} resumes)")
        print(f"death → resumed on another worker: p50 {percentile(to_resume, 0.5):.1f} s / p95 "
              f"{percentile(to_resume, 0.95):.1f} s / max {max(to_resume, default=float('nan')):.1f} s "
              f"({len(to_resume)} resumes); since the last heartbeat: p50 {percentile(waited, 0.5):.1f} s / p95 "
              f"{percentile(waited, 0.95):.1f} s; handed back → taken by a worker: p50 {percentile(claimed, 0.5):.1f} "
              f"s / p95 {percentile(claimed, 0.95):.1f} s")
        print(f"side effects: {sum(effects.counts.values())} REST calls for {len(effects.counts)} keys; executed "
              f"twice: {len(twice)}{' ' + str(list(twice.items())[:5]) if twice else ''}; in flight at a death, "
              f"not repeated (the model told it was interrupted): {in_flight}")
        if sizes:
            per_step = [stored / steps for steps, stored, _ in sizes.values() if steps]
            text_per_step = [text / steps for steps, _, text in sizes.values() if steps]
            print(f"checkpoint: {statistics.median(per_step):.0f} B stored per step (TOASTed; JSON "
                  f"{statistics.median(text_per_step):.0f} B), sampled over {len(sizes)} live runs")
        if largest.get("messages"):
            append, whole, database = checkpoint_ms(largest)
            print(f"checkpoint at step {largest.get('steps')}: worker CPU {append:.3f} ms (append; {whole:.3f} ms "
                  f"whole), PostgreSQL {database:.3f} ms (round trip included) — per step, riding in the "
                  f"statement that records the step's spend")
    finally:
        stop.set()
        workers.stop()
        try:
            os.killpg(model.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        effects.server.shutdown()


if __name__ == "__main__":
    main()
