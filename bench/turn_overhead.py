"""Turn overhead: the full path (WebSocket → Celery → runner → PostgreSQL transcript → frames) against
the floor (the same demo model behind a minimal consumer, no database), at 1 and 50 concurrent sockets,
plus a turn in a 10,000-message conversation against one in a 10-message conversation.

    .venv/bin/python bench/turn_overhead.py [--turns 20] [--sockets 1,50]

Runs against the embedded dev services (`python -m config.devservices start`), starting its own daphne
servers on free ports and the `runs` workers `make run` starts (one per core, threads pool; --worker-processes
and --worker-concurrency change them), and prints p50/p95 latency and turns/s. Floor and full path alternate
over --rounds rounds (this VM's speed drifts within minutes; ratios of runs taken minutes apart measure that).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from importlib import import_module  # noqa: E402

import websockets  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from agenticos.tenancy import SESSION_KEY as ORG_KEY  # noqa: E402
from agenticos.tenancy import actor_for_membership  # noqa: E402
from agents import services  # noqa: E402
from agents.models import Agent, Conversation, Message, ModelProfile  # noqa: E402
from config.launcher import run_worker_command, run_worker_processes  # noqa: E402

PROMPT = "Tell me briefly what you can do."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_bench_tenant() -> tuple[str, str, str]:
    org, _ = Organization.objects.get_or_create(slug="bench", defaults={"name": "Bench", "monthly_budget_usd": None})
    user, created = User.objects.get_or_create(email="bench@example.com")
    if created:
        user.set_unusable_password()
        user.save()
    membership, _ = Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    actor = actor_for_membership(membership)
    profile, _ = ModelProfile.objects.get_or_create(organization=org, label="Demo", defaults={"provider": "demo", "model": "demo"})
    agent = Agent.objects.filter(organization=org, slug="bench").first()
    if agent is None:
        agent = services.create_agent(actor=actor, name="Bench", slug="bench", spec={
            "name": "Bench", "instructions": "You are a helpful test agent.", "model_profile_id": str(profile.pk)})
        services.publish_agent(actor=actor, agent=agent)
    engine = import_module(settings.SESSION_ENGINE)
    session = engine.SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]  # as a password sign-in stores it
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[ORG_KEY] = str(org.pk)
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}", str(agent.pk), str(user.pk)


def conversation_with(agent_id: str, user_id: str, size: int) -> str:
    agent = Agent.objects.get(pk=agent_id)
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner_id=user_id)
    Message.objects.bulk_create(
        (Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"message {i} " * 8)
         for i in range(size)),
        batch_size=2000,
    )
    return str(conversation.pk)


async def one_turn(url: str, payload: dict, headers: dict) -> float:
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(json.dumps(payload))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] in ("complete", "error"):
                if frame["type"] == "error":
                    raise RuntimeError(frame["data"])
                return time.perf_counter() - started


TURN_TIMEOUT = 120


async def socket_worker(url, payload, headers, turns, out, errors):
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        for _ in range(turns):
            started = time.perf_counter()
            await ws.send(json.dumps(payload))
            seen: list[str] = []
            try:
                async with asyncio.timeout(TURN_TIMEOUT):
                    while True:
                        frame = json.loads(await ws.recv())
                        seen.append(frame["type"])
                        if frame["type"] == "error":
                            errors.append(frame["data"])
                            break
                        if frame["type"] == "complete":
                            out.append(time.perf_counter() - started)
                            break
            except TimeoutError:
                errors.append({"message": f"no complete frame within {TURN_TIMEOUT}s",
                               "frames": len(seen), "last": seen[-3:]})
                return


async def measure(url, payload, headers, sockets, turns_per_socket):
    latencies: list[float] = []
    errors: list[dict] = []
    started = time.perf_counter()
    await asyncio.gather(*(socket_worker(url, payload, headers, turns_per_socket, latencies, errors)
                           for _ in range(sockets)))
    return summary(latencies, time.perf_counter() - started, errors)


def summary(latencies: list[float], elapsed: float, errors: list) -> dict:
    latencies = sorted(latencies)
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")  # noqa: E731
    return {"p50": p(0.5), "p95": p(0.95), "tps": len(latencies) / elapsed, "n": len(latencies), "errors": errors,
            "latencies": latencies, "elapsed": elapsed}


def merged(parts: list[dict]) -> dict:
    return summary([x for r in parts for x in r["latencies"]], sum(r["elapsed"] for r in parts),
                   [e for r in parts for e in r["errors"]])


def cpu_seconds(pids) -> float:
    """User + system CPU of these processes so far (Linux /proc; 0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def pids_named(*names: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in names:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def cpu_split(procs) -> dict[str, float]:
    """CPU seconds so far of each part of the full path: the web process, the worker, PostgreSQL, Redis."""
    return {"web": cpu_seconds([procs[0].pid]), "worker": cpu_seconds([p.pid for p in procs[2:]]),
            "postgres": cpu_seconds(pids_named("postgres")), "redis": cpu_seconds(pids_named("redis-server"))}


def wait_quiet(pids, limit=60.0) -> None:
    """Until these processes stop using CPU (workers warm up when they start): at most `limit` seconds."""
    deadline = time.time() + limit
    while time.time() < deadline:
        before = cpu_seconds(pids)
        time.sleep(1)
        if cpu_seconds(pids) - before < 0.05:
            return


def start(cmd, env, name):
    # The servers run in sessions of their own (a SIGKILL of one takes its children); a bench stopped with SIGTERM
    # (`pkill -f bench/…`) must still reach its `finally` and stop them, or they outlive it and take the next
    # bench's messages from the same Redis queue.
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    log = open(f"/tmp/agenticos-bench-{name}.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20, help="turns per socket")
    parser.add_argument("--rounds", type=int, default=4, help="floor and full path alternate this many times")
    parser.add_argument("--sockets", default="1,50")
    # As `make run` starts them (config/launcher.py): one `runs` worker per core, 32 threads each.
    parser.add_argument("--worker-concurrency", type=int, default=32)
    parser.add_argument("--worker-processes", type=int, default=run_worker_processes())
    parser.add_argument("--skip-long-conversation", action="store_true")
    args = parser.parse_args()
    per_round = max(1, args.turns // args.rounds)
    cookie, agent_id, user_id = setup_bench_tenant()
    # Production settings, as docker-compose runs them: DEBUG on makes Django log every query in memory.
    env = dict(os.environ, PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING", DEBUG="false",
               ALLOWED_HOSTS="127.0.0.1,localhost", SECRET_KEY=settings.SECRET_KEY,
               VAULT_MASTER_KEY=settings.VAULT_MASTER_KEY)
    full_port, floor_port = free_port(), free_port()
    procs = [
        start([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(full_port), "config.asgi:application"], env, "web"),
        start([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(floor_port), "bench.floor_app:application"], env, "floor"),
        *(start(run_worker_command(i, str(args.worker_concurrency), "WARNING"), env, f"worker{i}")
          for i in range(args.worker_processes)),
    ]
    try:
        wait_port(full_port)
        wait_port(floor_port)
        wait_quiet([proc.pid for proc in procs])  # connected and warmed up
        full_url = f"ws://127.0.0.1:{full_port}/ws/chat/"
        floor_url = f"ws://127.0.0.1:{floor_port}/ws/floor/"
        headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{full_port}"}
        payload = {"type": "message", "agent_id": agent_id, "text": PROMPT}
        for _ in range(2 * args.worker_processes):  # warm up both paths, every worker
            asyncio.run(one_turn(full_url, payload, headers))
        asyncio.run(one_turn(floor_url, {"type": "message", "text": PROMPT}, {}))
        wait_quiet([proc.pid for proc in procs], limit=10)
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
        print(f"{'sockets':>7} {'path':>6} {'p50 ms':>8} {'p95 ms':>8} {'turns/s':>8}")
        results = {}
        for sockets in [int(s) for s in args.sockets.split(",")]:
            # Floor and full path take turns, round by round: this machine's speed drifts by tens of percent
            # within minutes, and a ratio of two measurements taken minutes apart would mostly measure that.
            floors, fulls, floor_cpu_s = [], [], 0.0
            spent = {part: 0.0 for part in cpu_split(procs)}
            for _ in range(args.rounds):
                floor_before = cpu_seconds([procs[1].pid])
                floors.append(asyncio.run(measure(floor_url, {"type": "message", "text": PROMPT}, {}, sockets,
                                                  per_round)))
                floor_cpu_s += cpu_seconds([procs[1].pid]) - floor_before
                before = cpu_split(procs)
                fulls.append(asyncio.run(measure(full_url, payload, headers, sockets, per_round)))
                after = cpu_split(procs)
                spent = {part: spent[part] + after[part] - before[part] for part in spent}
            floor, full = merged(floors), merged(fulls)
            floor_cpu = floor_cpu_s * 1000 / max(floor["n"], 1)
            results[sockets] = (floor, full)
            for name, r in (("floor", floor), ("full", full)):
                print(f"{sockets:>7} {name:>6} {r['p50']*1000:>8.1f} {r['p95']*1000:>8.1f} {r['tps']:>8.1f}"
                      f"  ({r['n']} turns, {len(r['errors'])} errors{': ' + str(r['errors'][:2]) if r['errors'] else ''})")
            print(f"{sockets:>7} ratio  p50 full/floor = {full['p50']/floor['p50']:.2f}x, "
                  f"throughput full/floor = {full['tps']/floor['tps']:.2f}x")
            per_turn = {part: seconds * 1000 / max(full["n"], 1) for part, seconds in spent.items()}
            print(f"{sockets:>7} full-path CPU ms/turn: " + ", ".join(f"{part} {ms:.1f}" for part, ms in per_turn.items())
                  + f" (total {sum(per_turn.values()):.1f}); floor {floor_cpu:.1f}")
        if args.skip_long_conversation:
            return
        small = conversation_with(agent_id, user_id, 10)
        large = conversation_with(agent_id, user_id, 10_000)
        smalls, larges = [], []
        for _ in range(args.rounds):
            smalls.append(asyncio.run(measure(full_url, {**payload, "conversation_id": small}, headers, 1, per_round)))
            larges.append(asyncio.run(measure(full_url, {**payload, "conversation_id": large}, headers, 1, per_round)))
        small_r, large_r = merged(smalls), merged(larges)
        print(f"10-message conversation p50 {small_r['p50']*1000:.1f} ms; 10,000-message conversation p50 "
              f"{large_r['p50']*1000:.1f} ms; ratio {large_r['p50']/small_r['p50']:.2f}x")
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:  # a worker still draining: it has had its chance
                os.killpg(proc.pid, 9)


if __name__ == "__main__":
    main()
