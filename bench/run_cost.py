"""What a runs worker spends per run, measured in one process: N queued runs handed to this process's runs loop
(`agents.runner.start`, what the `runs` worker's Celery task calls) at once, against bench/concurrency.py's model
server (a `create_chart` tool call, then --tokens tokens over --seconds). No daphne, no Celery, no other
process of the platform: what is printed is this process's CPU (every thread: the loop, the ORM pool) per run,
which the full bench (`bench/concurrency.py`) cannot resolve to a few percent on a shared machine.

    .venv/bin/python bench/run_cost.py [--runs 50] [--rounds 3] [--profile FILE.pstats]

--profile records the loop thread under cProfile during the last round (`python -m pstats FILE` reads it).
Runs against the embedded dev services; uses bench/concurrency.py's organization and agent.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import platform
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def setup_agent(model_port: int) -> str:
    """An organization of its own (not bench/concurrency.py's: both may run at once), its profile at this bench's
    model server, and the same agent as bench/concurrency.py's: charts, published."""
    from bench.tenant import owner_and_model, scale_agent

    org, actor, profile = owner_and_model("bench-cost", "Bench cost", model_port)
    agent = scale_agent(org, actor, profile)
    return str(agent.pk)


def queued_runs(agent_id: str, n: int) -> list:
    """n queued REST-like runs of the bench agent (no conversation), written but not sent to the broker."""
    from agenticos.models import User
    from agents.models import Agent, Environment
    from agents.runs import start_run

    agent = Agent.objects.get(pk=agent_id)
    version = Environment.objects.select_related("version").get(agent=agent, name="production").version
    user = User.objects.get(email="bench-cost@example.com")
    return [start_run(agent=agent, version=version, surface="api", user=user, acting_role="owner",
                      prompt=f"bench-run-{uuid.uuid4().hex}: what time is it?", enqueue=False).pk
            for _ in range(n)]


def one_round(agent_id: str, n: int, profile: str = "") -> tuple[float, float, dict[str, int]]:
    """(CPU ms per run of this process, wall seconds, statuses)."""
    from agents.models import Run
    from agents.runner import start
    from agents.runner.loop import runs_loop

    ids = queued_runs(agent_id, n)
    sent_before = _GROUP_SENDS[0]
    profiler = cProfile.Profile() if profile else None
    loop = runs_loop().loop
    if profiler is not None:
        asyncio.run_coroutine_threadsafe(_call(profiler.enable), loop).result()
    threads_before, collected_before = thread_cpu(), dict(_COLLECTOR)
    cpu, wall = time.process_time(), time.monotonic()
    futures = [start(run_id) for run_id in ids]
    for future in futures:
        future.result(timeout=600)
    spent, took = (time.process_time() - cpu) * 1000 / n, time.monotonic() - wall
    threads_after = thread_cpu()
    if profiler is not None:
        asyncio.run_coroutine_threadsafe(_call(profiler.disable), loop).result()
        profiler.dump_stats(profile)
    statuses: dict[str, int] = {}
    for status in Run.objects.filter(pk__in=ids).values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    statuses["collector CPU ms per run (collections)"] = {  # type: ignore[assignment]
        generation: (round((_COLLECTOR[generation][1] - collected_before[generation][1]) * 1000 / n, 1),
                     _COLLECTOR[generation][0] - collected_before[generation][0]) for generation in _COLLECTOR}
    statuses["CPU ms per run by thread"] = {  # type: ignore[assignment]
        name: round((threads_after[name] - threads_before.get(name, 0.0)) * 1000 / n, 1) for name in threads_after}
    statuses["channel-layer messages per run"] = round((_GROUP_SENDS[0] - sent_before) / n, 1)  # type: ignore[assignment]
    return spent, took, statuses


_GROUP_SENDS = [0]


_COLLECTOR: dict[int, tuple[int, float]] = {0: (0, 0.0), 1: (0, 0.0), 2: (0, 0.0)}


def time_collections() -> None:
    """Count the cyclic collector's passes per generation and the CPU they take (on whichever thread runs them)."""
    import gc

    started = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:
            count, spent = _COLLECTOR[info["generation"]]
            _COLLECTOR[info["generation"]] = (count + 1, spent + time.thread_time() - started[0])

    gc.callbacks.append(timed)


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's threads, summed by kind (the runs loop, its ORM threads, the rest):
    which of them a change moves (Linux /proc)."""
    import threading

    kinds = {thread.native_id: ("loop" if thread.name == "runs-loop" else "db" if thread.name.startswith("run-db")
                                else "other") for thread in threading.enumerate()}
    totals: dict[str, float] = {"loop": 0.0, "db": 0.0, "other": 0.0}
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = kinds.get(int(task.name), "other")
        totals[kind] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return totals


def count_group_sends() -> None:
    """Count the channel-layer messages runs publish (one Redis round trip or two each)."""
    from channels.layers import get_channel_layer

    layer_class = type(get_channel_layer())
    original = layer_class.group_send

    async def counted(self, group, message):
        _GROUP_SENDS[0] += 1
        return await original(self, group, message)

    layer_class.group_send = counted


async def _call(fn) -> None:
    fn()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=2.3)
    parser.add_argument("--profile", default="")
    parser.add_argument("--py-spy", default="", help="record this process (every thread) with py-spy into FILE "
                                                     "(raw collapsed stacks) during the last round")
    args = parser.parse_args()

    import logging

    import django

    # What bench/concurrency.py gives its workers: the model server is on a private address, no debug query log.
    from config import devservices

    data = devservices.data_dir()
    os.environ.update(MODEL_ALLOWED_PRIVATE_HOSTS="127.0.0.1", DEBUG="false", LOG_LEVEL="WARNING",
                      ALLOWED_HOSTS="localhost", SECRET_KEY=(data / "secret_key").read_text().strip(),
                      VAULT_MASTER_KEY=(data / "vault_master_key").read_text().strip())
    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from bench.turn_overhead import free_port, start, wait_port

    port = free_port()
    model = start([sys.executable, str(ROOT / "bench" / "concurrency.py"), "--serve-model", str(port), "--tokens",
                   str(args.tokens), "--seconds", str(args.seconds)], dict(os.environ), "model")
    try:
        wait_port(port)
        agent_id = setup_agent(port)
        count_group_sends()
        one_round(agent_id, 2)  # warm: imports, the pool's connections, the model's client
        from agenticos import gc_tuning

        tuned = gc_tuning.tune()  # what a runs worker does once it is ready (config/celery.py)
        time_collections()
        print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python "
              f"{platform.python_version()}; {args.runs} runs at once, in-process runs loop; "
              f"collector thresholds {tuned or 'CPython defaults'}")
        figures = []
        for index in range(args.rounds):
            load = os.getloadavg()[0]
            last = index == args.rounds - 1
            spy = None
            if last and args.py_spy:
                spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--nonblocking", "-r",
                                        "200", "-f", "raw", "-p", str(os.getpid()), "-o", args.py_spy],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
            ms, wall, statuses = one_round(agent_id, args.runs, args.profile if last else "")
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(30)
            figures.append(ms)
            print(f"round {index + 1}: {ms:.1f} CPU ms/run, wall {wall:.2f} s, {statuses}, load {load:.1f}"
                  f"{' (profiled)' if last and (args.profile or args.py_spy) else ''}")
        unprofiled = figures[:-1] if (args.profile or args.py_spy) and len(figures) > 1 else figures
        print(f"CPU ms/run: min {min(unprofiled):.1f}, median {sorted(unprofiled)[len(unprofiled) // 2]:.1f}")
    finally:
        os.killpg(model.pid, signal.SIGTERM)


if __name__ == "__main__":
    main()
