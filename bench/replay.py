"""Replays (issue 41): N recorded runs, each of which called a custom REST tool at a local fake API, replayed
against a changed draft through the real runner. A matching tool call is answered from the recording, so the
fake must count 0 new calls.

    .venv/bin/python bench/replay.py [--runs 200] [--concurrency 4]

The model is scripted in process (pydantic-ai's FunctionModel, streamed like a provider's; the runner meters
its usage as any model's): each run calls `lookup_contact` once, then answers. Recording runs execute inline;
the replay set is driven by `evals.replay_driver.run_replay_set` as its Celery task does, its runs executed by
a Celery worker started in this process (threads, queues runs + default), as the tests start one.

Prints the machine and its load, then: the wall and CPU time of the replay (in all, and per replayed run),
the model tokens and requests the replay spent, the tool calls answered from the recording, and the tool calls
executed (the fake API's new requests: 0 when every call matched). Runs against DATABASE_URL / REDIS_URL (the
dev services) and leaves its organization in place ("bench-replay").
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django  # noqa: E402

django.setup()

from celery.contrib.testing.worker import start_worker  # noqa: E402
from django.conf import settings  # noqa: E402
from pydantic_ai.messages import ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import DeltaToolCall, FunctionModel  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from agenticos.tenancy import actor_for_membership  # noqa: E402
from agents import services as agent_services  # noqa: E402
from agents.models import Conversation, ModelProfile, Run  # noqa: E402
from agents.runner import execute  # noqa: E402
from agents.runs import start_run  # noqa: E402
from capabilities.models import CustomTool  # noqa: E402
from config.celery import app as celery_app  # noqa: E402
from evals import replay_driver, replays  # noqa: E402
from evals.models import ReplaySet  # noqa: E402
from governance.models import SpendEntry  # noqa: E402
from tests import factories  # noqa: E402
from tests.fakes.rest_api import FakeRestAPI  # noqa: E402

NUMBER = re.compile(r"customer (\d+)")


def scripted_model() -> FunctionModel:
    """Looks the customer the prompt names up, then answers with what the tool returned."""

    async def stream(messages, info):
        returned = [part for message in messages for part in getattr(message, "parts", [])
                    if isinstance(part, ToolReturnPart)]
        if returned:
            yield f"Found: {str(returned[-1].content)[:60]}"
            return
        prompt = " ".join(str(getattr(part, "content", "")) for message in messages
                          for part in getattr(message, "parts", []))
        found = NUMBER.findall(prompt)
        name = f"customer {found[-1] if found else 0}"
        yield {0: DeltaToolCall(name="lookup_contact", json_args=json.dumps({"name": name}),
                                tool_call_id=f"c-{uuid.uuid4().hex[:8]}")}

    return FunctionModel(stream_function=stream, model_name="scripted-bench")


def setup(fake: FakeRestAPI):
    org, _ = Organization.objects.get_or_create(slug="bench-replay",
                                                defaults={"name": "Bench replay", "monthly_budget_usd": None})
    user, created = User.objects.get_or_create(email="bench-replay@example.com")
    if created:
        user.set_unusable_password()
        user.save()
    membership, _ = Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(pk=membership.pk))
    profile, _ = ModelProfile.objects.get_or_create(organization=org, label="Scripted",
                                                    defaults={"provider": "demo", "model": "demo"})
    # A run of the bench before left its tool: it now points at this run's fake.
    CustomTool.objects.filter(organization=org, alias="lookup_contact").delete()
    tool = factories.custom_tool(org, alias="lookup_contact", method="POST", url=f"{fake.base}/echo",
                                 parameters=[{"name": "name", "location": "body", "type": "string",
                                              "required": True}])
    agent = agent_services.create_agent(actor=actor, name=f"Replay bench {uuid.uuid4().hex[:6]}", spec={
        "name": "Replay bench", "instructions": "Look customers up.", "model_profile_id": str(profile.pk),
        "custom_tool_ids": [str(tool.pk)], "capabilities": [{"id": "custom_tools", "config": {}}]})
    version = agent_services.publish_agent(actor=actor, agent=agent, note="bench")
    return actor, agent, version


def record(actor, agent, version, count: int) -> list[Run]:
    runs = []
    for n in range(count):
        conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=actor.user,
                                                   title=f"bench {n}")
        run = start_run(agent=agent, version=version, surface="api", prompt=f"Who is customer {n}?",
                        user=actor.user, acting_role="owner", conversation=conversation, enqueue=False)
        execute(run.pk)
        run.refresh_from_db()
        if run.status != "completed":
            raise SystemExit(f"recording run {n} ended {run.status}: {run.error}")
        runs.append(run)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4, help="EVAL_MAX_CONCURRENT for the replay")
    args = parser.parse_args()
    logging.getLogger("celery").setLevel(logging.WARNING)  # one line per task would bury the figures
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake REST API listens there
    settings.EVAL_MAX_CONCURRENT = args.concurrency
    settings.EVAL_POLL_SECONDS = 0.05
    import agents.runner.assembly as assembly

    assembly.build_model = lambda profile: scripted_model()  # type: ignore[assignment]

    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    fake = FakeRestAPI().start()
    try:
        actor, agent, version = setup(fake)
        started = time.perf_counter()
        recorded = record(actor, agent, version, args.runs)
        recording_wall = time.perf_counter() - started
        recorded_calls = len(fake.requests)
        agent.refresh_from_db()
        agent_services.update_agent(actor=actor, agent=agent, spec={
            **agent.draft_spec, "instructions": "Look customers up, then answer in one line."})
        celery_app.conf.task_always_eager = False
        with start_worker(celery_app, pool="threads", concurrency=max(4, args.concurrency),
                          perform_ping_check=False, queues=["runs", "default"], loglevel="WARNING"):
            replay_set = replays.start_replay(actor=actor, agent=agent, enqueue=False, data={
                "target": "draft", "cap_usd": "100",
                "selection": {"run_ids": [str(run.pk) for run in recorded]}})
            wall, cpu = time.perf_counter(), time.process_time()
            replay_driver.run_replay_set(replay_set.pk)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        replay_set = ReplaySet.objects.get(pk=replay_set.pk)
        results = list(replay_set.results.all())
        answered = sum(1 for r in results for row in r.tool_calls if row["answered_by"] == "recording")
        runs = [r.replay_run_id for r in results if r.replay_run_id]
        requests = SpendEntry.objects.filter(run_id__in=runs, kind="model_request").count()
        executed = len(fake.requests) - recorded_calls
        done = max(1, replay_set.done)
        print(f"load average after:  {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print(f"recorded {args.runs} runs in {recording_wall:.1f} s ({recorded_calls} tool calls executed at the fake)")
        print(f"replay: {replay_set.status}, {replay_set.done}/{replay_set.total} runs, concurrency {args.concurrency}")
        print(f"  wall {wall:.2f} s ({wall / done * 1000:.0f} ms per replayed run), "
              f"CPU {cpu:.2f} s ({cpu / done * 1000:.0f} ms per replayed run, this process incl. the worker)")
        print(f"  model: {requests} requests, {replay_set.replayed_tokens} tokens "
              f"(recorded: {replay_set.recorded_tokens})")
        print(f"  tool calls answered from the recording: {answered}")
        print(f"  tool calls executed: {executed} (must be 0: every call matched)")
        if executed:
            raise SystemExit(1)
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
