"""Calculations: `run_python` runs a small program and forgets it. Time and memory are the only limits
worth setting, because there is no network and no file system to speak of (see `sandbox.py`).

Limits are per agent, not per deployment: an author who raises one for a data-heavy agent needs no
operator, and the caps are bounded rather than open.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from capabilities.code_execution import identity, sandbox

logger = logging.getLogger(__name__)

MAX_CODE_CHARS = 100_000


class CodeExecutionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Defaults are the catalog's (10 s / 256 MB); the caps are issue 3's and the catalog's.
    timeout_secs: int = Field(default=10, gt=0, le=120, description="CPU and wall-clock seconds per program.")
    max_memory_mb: int = Field(default=256, ge=16, le=4096, description="Memory a program may use, in MB.")


async def run_python(ctx: RunContext[Any], code: str) -> str:
    """Run a small Python program to calculate something, and get what it printed.

    Use it for arithmetic, statistics, dates, unit conversions and data shaping where a mental estimate
    could be wrong. Standard library only (math, statistics, decimal, fractions, datetime, json, re,
    itertools...). There is no network and no file system beyond a scratch directory that is deleted
    afterwards, so it cannot fetch anything or keep files between calls: pass the data in the code.
    To draw the result, call create_chart with the numbers afterwards.

    Args:
        code: The whole program. A trailing expression's value is printed, like in a REPL, so `2**64`
            needs no print(). At most 100,000 characters. Time and memory are capped by the agent's
            settings (default 10 seconds, 256 MB).

    Returns:
        What the program printed: stdout, then stderr under a `[stderr]` line, cut at 8,000 characters
        with a `…[output truncated: N more characters not shown]` marker. A program that exits with a
        non-zero code returns its output and the code. An exception in the program, or running past the
        time or memory limit, comes back as a request to fix the code and call again, with the traceback.
        Trying the network, starting processes or writing outside the scratch directory is refused.
    """
    limits: CodeExecutionConfig = ctx.deps.scratch.get("code_execution_config") or CodeExecutionConfig()
    if len(code) > MAX_CODE_CHARS:
        return failures.retry(ctx, f"The program is {len(code)} characters; the cap is {MAX_CODE_CHARS}.")
    if not code.strip():
        return failures.retry(ctx, "The program is empty: pass the Python code to run.")
    organization_id = ctx.deps.organization_id

    def jailed() -> sandbox.Outcome:
        uid = identity.host_uid(organization_id) if os.geteuid() == 0 else None
        return sandbox.run_program(
            code, timeout_secs=limits.timeout_secs, max_memory_mb=limits.max_memory_mb, uid=uid
        )

    try:
        outcome = await anyio.to_thread.run_sync(jailed)
    except sandbox.Unavailable as exc:
        logger.error("run_python cannot jail a program on this host: %s", exc)
        return failures.refuse(
            "run_python is not available on this deployment: its isolation (bubblewrap) is missing or "
            "cannot start here. Do the calculation another way, and tell the person if it matters."
        )
    except OSError as exc:
        return failures.transient(ctx, f"The Python sandbox could not start ({type(exc).__name__}).")
    return render(ctx, outcome, limits)


def render(ctx: RunContext[Any], outcome: sandbox.Outcome, limits: CodeExecutionConfig) -> str:
    """Map a sandbox outcome onto retry / result / refusal (see capabilities.failures)."""
    output = outcome.output
    if outcome.status == "ok":
        return (
            output
            if output.strip()
            else "The program ran and printed nothing. End with an expression or print()."
        )
    if outcome.status == "refused":
        return failures.refuse(
            "run_python has no network, cannot start processes and can only write in its scratch directory.\n"
            + output
        )
    if outcome.status == "error":
        return failures.retry(
            ctx, f"The program raised {outcome.error_type}. Fix the code and call again.\n{output}"
        )
    if outcome.status == "timeout":
        return failures.retry(
            ctx,
            f"The program ran past the time limit of {limits.timeout_secs} seconds and was stopped. "
            "Make it do less work (smaller input, a better algorithm) and call again."
            + (f"\n{output}" if output else ""),
        )
    if outcome.status == "memory":
        return failures.retry(
            ctx,
            f"The program ran past the memory limit of {limits.max_memory_mb} MB. Use less memory and call again.\n"
            + output,
        )
    if outcome.status == "exit":
        return failures.bad_news(f"The program exited with code {outcome.exit_code}.\n{output}".rstrip())
    return failures.bad_news(
        f"The program was killed by signal {-(outcome.exit_code or 0)}.\n{output}".rstrip()
    )


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, CodeExecutionConfig)
    ctx.deps.scratch["code_execution_config"] = ctx.config
    return [function_toolset([run_python])]


CAPABILITY = Capability(
    id="code_execution",
    name="Calculations",
    category="analysis",
    description="Runs small Python programs to calculate exactly: no network, no files kept, capped time and memory.",
    offers="exact calculations with small Python programs",
    examples=(
        "What is the compound interest on 10,000 at 4% over 7 years?",
        "Median of these numbers",
        "How many weekdays are there between 3 March and 17 June?",
    ),
    never_does=(
        "It never reaches the network, starts other programs or keeps files between calls: each program "
        "runs alone on the standard library, within the agent's time and memory limits."
    ),
    tools=(ToolDecl.from_function(run_python, side_effecting=False),),
    scopes=("code:execute",),
    config_model=CodeExecutionConfig,
    voice="live",
    recommended=True,
    build=build,
)
