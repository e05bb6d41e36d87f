"""Embed load: N concurrent visitors each holding a widget socket and sending M messages to the offline
demo model, through daphne → Celery → the real runner → PostgreSQL transcript → filtered frames.

    .venv/bin/python bench/embed_load.py [--visitors 100,500] [--messages 3] [--worker-concurrency 48]

Prints p50/p95 time to the first `text_delta` and to `complete`, messages/s, errors by kind, and checks
that every turn is in the transcript (nothing lost). Runs against the dev services
(`python -m config.devservices start`), starting its own daphne and one Celery worker on free ports.

Every visitor connects from 127.0.0.1, so the per-address connection limit (RATE_LIMIT_EMBED_PER_MINUTE)
would refuse most of them by design: the bench's daphne raises it (bench/embed_app.py) and the embed's
per-visitor message limit is set high, so any error left is a real one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import websockets  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from agenticos.tenancy import actor_for_membership  # noqa: E402
from agents import services  # noqa: E402
from agents.models import Agent, Message, ModelProfile, Run  # noqa: E402
from embeds.models import Embed  # noqa: E402

ORIGIN = "http://bench.example"
PROMPTS = ["Hello, what can you do?", "Do you ship to Poland?", "Thanks, that is all."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_embed() -> Embed:
    """A fresh widget on the bench agent (a new embed per run keeps the transcript count exact)."""
    org, _ = Organization.objects.get_or_create(slug="bench", defaults={"name": "Bench", "monthly_budget_usd": None})
    user, created = User.objects.get_or_create(email="bench@example.com")
    if created:
        user.set_unusable_password()
        user.save()
    membership, _ = Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    actor = actor_for_membership(membership)
    profile, _ = ModelProfile.objects.get_or_create(
        organization=org, label="Demo", defaults={"provider": "demo", "model": "demo"}
    )
    agent = Agent.objects.filter(organization=org, slug="bench").first()
    if agent is None:
        agent = services.create_agent(actor=actor, name="Bench", slug="bench", spec={
            "name": "Bench", "instructions": "You are a helpful test agent.", "model_profile_id": str(profile.pk)})
        services.publish_agent(actor=actor, agent=agent)
    return Embed.objects.create(
        organization=org, agent=agent, kind="widget", allowed_origins=[ORIGIN], created_by=user,
        rate_limit_per_minute=100_000, name="bench",
    )


async def visitor(url: str, messages: int, out: dict, delay: float = 0.0) -> None:
    await asyncio.sleep(delay)
    try:
        async with websockets.connect(url, origin=ORIGIN, open_timeout=60, max_size=None) as ws:
            ready = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if ready["type"] != "ready":
                out["errors"][f"no ready: {ready}"] += 1
                return
            for n in range(messages):
                started = time.perf_counter()
                first = None
                await ws.send(json.dumps({"type": "message", "text": PROMPTS[n % len(PROMPTS)]}))
                while True:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 300))
                    if frame["type"] == "text_delta" and first is None:
                        first = time.perf_counter() - started
                    elif frame["type"] == "complete":
                        out["ttft"].append(first if first is not None else time.perf_counter() - started)
                        out["done"].append(time.perf_counter() - started)
                        break
                    elif frame["type"] == "error":
                        out["errors"][frame["data"].get("code") or frame["data"].get("message", "?")] += 1
                        break
    except websockets.ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd else None
        out["errors"][f"closed {code}"] += 1
    except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
        out["errors"][type(exc).__name__] += 1


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_level(url: str, visitors: int, messages: int, ramp: float) -> dict:
    out: dict = {"ttft": [], "done": [], "errors": Counter()}
    started = time.perf_counter()
    # Visitors arrive over `ramp` seconds (a page load each), then all hold their sockets at once.
    await asyncio.gather(*(visitor(url, messages, out, ramp * i / visitors) for i in range(visitors)))
    out["elapsed"] = time.perf_counter() - started
    return out


def start(cmd: list[str], env: dict, name: str) -> subprocess.Popen:
    log = open(f"/tmp/agenticos-bench-embed-{name}.log", "wb")  # noqa: SIM115 — lives as long as the process
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def transcript_counts(embed: Embed) -> tuple[int, int, Counter]:
    prefix = f"embed:{embed.pk}:"
    users = Message.objects.filter(conversation__external_key__startswith=prefix, role="user").count()
    answers = Message.objects.filter(conversation__external_key__startswith=prefix, role="assistant").count()
    statuses = Counter(Run.objects.filter(embed_id=embed.pk).values_list("status", flat=True))
    return users, answers, statuses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--visitors", default="100,500")
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--worker-concurrency", type=int, default=48)
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds over which visitors connect")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING")
    port = free_port()
    procs = [
        start([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.embed_app:application"],
              env, "web"),
        start([sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "runs,default", "-P", "threads",
               "-c", str(args.worker_concurrency), "-l", "WARNING"], env, "worker"),
    ]
    try:
        wait_port(port)
        time.sleep(3)  # let the worker connect to the broker
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
              f"Python {platform.python_version()}; worker threads {args.worker_concurrency}")
        print(f"{'visitors':>8} {'msgs':>6} {'ttft p50':>9} {'ttft p95':>9} {'done p50':>9} {'done p95':>9} "
              f"{'msg/s':>7} {'errors':>7} {'lost':>5}")
        for visitors in [int(v) for v in args.visitors.split(",")]:
            embed = bench_embed()
            url = f"ws://127.0.0.1:{port}/api/v1/embed/{embed.public_key}/ws"
            out = asyncio.run(run_level(url, visitors, args.messages, args.ramp))
            time.sleep(2)  # the last transcripts are written right after `complete`
            users, answers, statuses = transcript_counts(embed)
            sent = visitors * args.messages
            completed = len(out["done"])
            lost = (completed - answers) if answers < completed else 0
            print(f"{visitors:>8} {completed:>6} {pct(out['ttft'], .5)*1000:>8.0f}ms {pct(out['ttft'], .95)*1000:>8.0f}ms "
                  f"{pct(out['done'], .5)*1000:>8.0f}ms {pct(out['done'], .95)*1000:>8.0f}ms "
                  f"{completed / out['elapsed']:>7.1f} {sum(out['errors'].values()):>7} {lost:>5}")
            print(f"         sent {sent}, completed {completed}, transcript: {users} visitor turns, "
                  f"{answers} answers; runs {dict(statuses)}; errors {dict(out['errors']) or 'none'}")
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
        for proc in procs:
            proc.wait(10)


if __name__ == "__main__":
    main()
