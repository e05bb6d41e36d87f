"""Channel storm: 1,000 Slack events (10% redelivered twice) through the Events API route, answered by the
offline demo model through Celery and the real runner, live replies on a local fake Slack Web API.

    .venv/bin/python bench/channel_storm.py [--events 1000] [--redeliver 0.1] [--senders 16]
                                            [--delivery-threads 48] [--run-threads 16]

Prints the ack latency of the route (p50/p95/max: verify + parse + claim + enqueue — the 200 never waits for
the run), then waits for the answers and checks answers posted == distinct messages exactly (no duplicate,
no loss). Runs against the dev services (`python -m config.devservices start`), with two Celery workers
in their own processes, as `make run` starts them: one for "default" (deliveries) and one for "runs". A
delivery no longer holds its thread while the run it follows executes: the follow is a task of the default
worker's follows loop (channelbots/follows.py, up to CHANNELBOTS_MAX_FOLLOWS), so a few delivery threads
are enough (`--delivery-threads`; this bench's figures were taken before that change). (Two workers inside
this one process lost their broker consumer under the storm — "Unrecoverable error" on a Redis connection
— which is not how anything here is deployed.) Worker logs: /tmp/agenticos-storm-*.log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from agenticos.tenancy import actor_for_membership  # noqa: E402
from agents import services as agent_services  # noqa: E402
from agents.models import ModelProfile, Run  # noqa: E402
from channelbots import services  # noqa: E402
from channelbots.slack.verify import sign  # noqa: E402
from config.celery import app as celery_app  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402

SIGNING_SECRET = "bench-signing-secret-0123456789ab"


def setup(fake: FakeSlack) -> str:
    org, _ = Organization.objects.get_or_create(slug="bench-channels",
                                                defaults={"name": "Bench channels", "monthly_budget_usd": None})
    user, created = User.objects.get_or_create(email="bench-channels@example.com")
    if created:
        user.set_unusable_password()
        user.save()
    membership, _ = Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(pk=membership.pk))
    profile, _ = ModelProfile.objects.get_or_create(organization=org, label="Demo",
                                                    defaults={"provider": "demo", "model": "demo"})
    agent = agent_services.create_agent(actor=actor, name=f"Storm {uuid.uuid4().hex[:6]}", spec={
        "name": "Storm", "instructions": "Answer briefly.", "model_profile_id": str(profile.pk)})
    agent_services.publish_agent(actor=actor, agent=agent, note="bench")
    bot = services.create_bot(actor=actor, data={
        "platform": "slack", "name": "Storm", "token": "xoxb-test-token-0001", "signing_secret": SIGNING_SECRET,
        "api_base_url": fake.base_url, "access_policy": {"mode": "open", "rate_limit_rpm": 600}})
    services.create_binding(actor=actor, agent=agent, data={"bot_id": str(bot.pk), "footer_mode": "log_only"})
    return str(bot.pk)


def event_body(i: int, ts: str) -> bytes:
    event = {"type": "message", "user": f"U{i % 100:03d}", "channel": f"C{i % 20:02d}", "channel_type": "channel",
             "text": f"<@UBOT> question number {i}", "ts": ts}
    return json.dumps({"type": "event_callback", "team_id": "T1", "event_id": f"Ev{i}", "event": event,
                       "authorizations": [{"user_id": "UBOT", "is_bot": True}]}).encode()


def start_worker_process(queue: str, threads: int, log_level: str = "WARNING") -> subprocess.Popen:
    # The pool covers the worker's threads and the runner's DB threads (settings: at least the ORM threads).
    env = dict(os.environ, DB_POOL_MAX_SIZE=str(threads + 24), PYTHONUNBUFFERED="1")
    log = open(f"/tmp/agenticos-storm-{queue}.log", "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-n", f"storm-{queue}@%h",
         "-P", "threads", "-c", str(threads), "-l", log_level],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def wait_for_workers(count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(celery_app.control.ping(timeout=1) or []) >= count:
            return
    raise RuntimeError("the storm's Celery workers did not answer a ping")


def stop_worker_process(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--redeliver", type=float, default=0.1)
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--delivery-threads", type=int, default=48)
    parser.add_argument("--run-threads", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--worker-log-level", default="WARNING",
                        help="INFO also logs each reply whose frame reader needed a second cancel")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["*"]
    from django.urls import NoReverseMatch, reverse

    try:
        reverse("slack-events", args=["x"])
    except NoReverseMatch:  # until config/urls.py includes channelbots.urls
        settings.ROOT_URLCONF = "tests.channelbots.urls"
    celery_app.conf.task_always_eager = False

    fake = FakeSlack().start()
    bot_id = setup(fake)
    path = f"/api/v1/slack/{bot_id}/events"
    base = int(time.time())
    bodies = [event_body(i, f"{base}.{i:06d}") for i in range(args.events)]
    deliveries = list(range(args.events))
    for i in random.Random(7).sample(range(args.events), int(args.events * args.redeliver)):
        deliveries += [i, i]  # redelivered twice
    random.Random(11).shuffle(deliveries)

    def post(i: int) -> tuple[float, int]:
        body = bodies[i]
        stamp = str(int(time.time()))
        client = Client()
        started = time.perf_counter()
        response = client.post(path, data=body, content_type="application/json",
                               HTTP_X_SLACK_REQUEST_TIMESTAMP=stamp,
                               HTTP_X_SLACK_SIGNATURE=sign(SIGNING_SECRET, body, stamp))
        return time.perf_counter() - started, response.status_code

    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"events: {args.events} distinct, {len(deliveries)} deliveries ({args.redeliver:.0%} redelivered twice)")
    workers = [start_worker_process("default", args.delivery_threads, args.worker_log_level),
               start_worker_process("runs", args.run_threads, args.worker_log_level)]
    try:
        wait_for_workers(2)
        started = time.perf_counter()
        with ThreadPoolExecutor(args.senders) as pool:
            results = list(pool.map(post, deliveries))
        sent_in = time.perf_counter() - started
        acks = sorted(r[0] * 1000 for r in results)
        statuses = {s for _, s in results}
        print(f"acks: {len(acks)} in {sent_in:.1f} s, statuses {sorted(statuses)}; "
              f"p50 {statistics.median(acks):.1f} ms, p95 {acks[int(len(acks) * 0.95) - 1]:.1f} ms, "
              f"max {acks[-1]:.1f} ms")
        deadline = time.monotonic() + args.timeout

        storm_runs = Run.objects.filter(agent__channel_bindings__bot_id=bot_id)

        def answered() -> tuple[dict[str, int], set[str]]:
            """Replies per thread (anything but the bare placeholder), and the threads whose reply reads
            exactly its completed run's answer — a live edit with the text so far is not a delivered
            answer (a reply stuck after its run ended once passed for one here)."""
            outputs = {row["options"].get("channel", {}).get("thread"): (row["output"] or "").strip()
                       for row in storm_runs.filter(status="completed").values("options", "output")}
            counts: dict[str, int] = {}
            finished: set[str] = set()
            for p in fake.answers():
                if p.final != "…":
                    counts[p.thread_ts] = counts.get(p.thread_ts, 0) + 1
                    if outputs.get(p.thread_ts) and p.final.strip() == outputs[p.thread_ts]:
                        finished.add(p.thread_ts)
            return counts, finished

        while time.monotonic() < deadline:
            counts, finished = answered()
            if len(finished) >= args.events and not storm_runs.filter(status__in=["queued", "running"]).exists():
                break
            time.sleep(1)
        total = time.perf_counter() - started
        time.sleep(3)  # anything late (a duplicate) would show up now
        counts, finished = answered()
        runs = storm_runs.count()
        duplicates = sum(1 for c in counts.values() if c > 1)
        missing = args.events - len(finished)
        print(f"answers: {sum(counts.values())} posted for {len(counts)} threads, {len(finished)} of them the "
              f"run's final answer; runs {runs}; duplicates {duplicates}; missing {missing}; "
              f"all answered in {total:.1f} s")
        print("OK" if duplicates == 0 and missing == 0 and runs == args.events and len(counts) == args.events
              else "MISMATCH")
    finally:
        for process in workers:
            stop_worker_process(process)
        fake.stop()


if __name__ == "__main__":
    main()
