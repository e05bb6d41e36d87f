"""What a run's checkpoint costs per step (agents/runner/checkpoint.py): the worker's CPU to build it (dump the
messages new since the last checkpoint, copy the transcript's parts) and PostgreSQL's time to apply it (the
`jsonb ||` append in the UPDATE the step already makes for its spend), at step 1, 10, 25 and 50 of a run whose
every step is a tool call returning about `--result-kb` KB.

    .venv/bin/python bench/checkpoint_cost.py [--steps 50] [--result-kb 2] [--repeat 200]

The database part runs against DATABASE_URL on a TEMP table (nothing of the project's is touched); without a
reachable database it prints the CPU part only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from agents.runner import checkpoint  # noqa: E402


def conversation(steps: int, result_kb: int) -> list:
    """A run's messages: the prompt, then per step a response calling a tool and the request returning its
    result."""
    messages: list = [ModelRequest(parts=[UserPromptPart(content="Research this for me, step by step.")])]
    for step in range(steps):
        messages.append(ModelResponse(parts=[TextPart(content=f"Step {step}: looking it up."), ToolCallPart(
            tool_name="look_up", args={"query": f"thing {step}"}, tool_call_id=f"call-{step}")]))
        messages.append(ModelRequest(parts=[ToolReturnPart(tool_name="look_up", tool_call_id=f"call-{step}",
                                                           content={"rows": "x" * (result_kb * 1024)})]))
    return messages


def execution() -> SimpleNamespace:
    return SimpleNamespace(checkpointed=None, checkpoints_written=0, read_only=frozenset({"look_up"}),
                           transcript=SimpleNamespace(parts=[]))


def cpu_per_step(messages: list, at_step: int, repeat: int) -> tuple[float, float]:
    """CPU ms of the checkpoint at `at_step` when the previous step's was written (the append), and of a whole
    one (the first of an execution, or after a compaction rewrote the history)."""
    history, response = messages[: 2 * at_step - 1], messages[2 * at_step - 1]
    appends, wholes = [], []
    for _ in range(repeat):
        ex = execution()
        ex.transcript.parts = [{"type": "text", "text": f"Step {n}: looking it up."} for n in range(at_step)]
        if at_step > 1:  # as if step at_step - 1 was checkpointed by this execution
            checkpoint.step_value(ex, history[:-2], history[-2], at_step - 1)
        started = time.process_time()
        checkpoint.step_value(ex, history, response, at_step)
        appends.append(time.process_time() - started)
        whole = execution()
        started = time.process_time()
        checkpoint.step_value(whole, history, response, at_step)
        wholes.append(time.process_time() - started)
    return statistics.median(appends) * 1000, statistics.median(wholes) * 1000


def database_per_step(messages: list, steps: int, marks: list[int]) -> dict[int, float]:
    """PostgreSQL's ms for the append at each marked step, on a TEMP table shaped like the run's column."""
    timings: dict[int, float] = {}
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE bench_checkpoint (id int PRIMARY KEY, checkpoint jsonb)")
        cursor.execute("INSERT INTO bench_checkpoint VALUES (1, NULL)")
        ex = execution()
        for step in range(1, steps + 1):
            history, response = messages[: 2 * step - 1], messages[2 * step - 1]
            value = checkpoint.step_value(ex, history, response, step)
            if isinstance(value, dict):
                sql, params = "UPDATE bench_checkpoint SET checkpoint = %s::jsonb WHERE id = 1", [json.dumps(value)]
            else:
                sql, params = f"UPDATE bench_checkpoint SET checkpoint = {value.sql} WHERE id = 1", list(value.params)
            started = time.perf_counter()
            cursor.execute(sql, params)
            if step in marks:
                timings[step] = (time.perf_counter() - started) * 1000
        cursor.execute("SELECT pg_column_size(checkpoint) FROM bench_checkpoint")
        timings[-1] = cursor.fetchone()[0] / 1024
        cursor.execute("DROP TABLE bench_checkpoint")
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--result-kb", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    messages = conversation(args.steps, args.result_kb)
    marks = [m for m in (1, 10, 25, 50) if m <= args.steps]
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.result_kb} KB per tool result")
    print("step   CPU append ms   CPU whole ms")
    for step in marks:
        append, whole = cpu_per_step(messages, step, args.repeat)
        print(f"{step:>4}   {append:>13.3f}   {whole:>12.3f}")
    try:
        timings = database_per_step(messages, args.steps, marks)
    except Exception as exc:  # no database here: the CPU part stands alone
        print(f"(database part skipped: {type(exc).__name__}: {str(exc)[:120]})")
        return
    print("step   PostgreSQL ms (round trip included)")
    for step in marks:
        print(f"{step:>4}   {timings[step]:>8.3f}")
    print(f"stored checkpoint after {args.steps} steps: {timings[-1]:.0f} KB (TOASTed, compressed)")


if __name__ == "__main__":
    main()
