"""How a capability takes part in a run beyond its tools: lifecycle hooks and the run handle they are given.

The runner (agents/runner) names no capability. At each turning point of a run it calls the matching hook of
every capability in the registry that declares one (`Capability.hooks`), in registry order — Saleor's plugin
hooks are the model. A hook is called whether or not the agent binds the capability in this run: a parked
history may hold what a since-unbound capability put there (media references), and a failed run's state may
belong to one (a plan step in progress). Each hook decides from the run whether it applies and is cheap when it
does not (no query).

| hook               | when (which thread)                                              | used by            |
|--------------------|------------------------------------------------------------------|--------------------|
| `on_resume`        | assembling a resumed run, before its capabilities are built (DB)   | compaction         |
| `restore_history`  | assembling a resumed run: the parked messages as stored → as the model saw them (DB) | media |
| `on_park`          | a run parks, before its transaction (storage IO, no row lock) (DB) | media, subagents, compaction |
| `keep_history`     | a run completed, before its answer is announced (DB)               | compaction         |
| `after_answer`     | the answer is committed and announced (DB)                         | follow_ups         |
| `on_interrupted`   | resuming a run whose worker died: the calls it left in flight (their rows), before the model hears (DB) | coding_agent |
| `on_failed`        | a failed / cancelled / over-budget / blocked run ends, in its ending transaction (DB) | planning |
| `publish_problems` | publishing a draft, with the person publishing (DB)               | subagents, coding_agent, web_research, tool_search, thinking, browser |

`RunHandle` (agents/run_handle.py, below the capabilities) is what a hook (or a tool, through
`RunDeps.execution`) may use of the running execution: its row, its dependencies, what it built, its meter (spend
not yet written and a way to write it), a way to send a frame to the surface and a way onto its database thread.
It is a Protocol so capabilities depend on it, not on the runner's modules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.run_handle import RunHandle

if TYPE_CHECKING:
    from agenticos.tenancy import Actor
    from agents.models import Run


# The run's scratch key a binding sets to override the context window the run's fill is measured by (compaction's
# `context_window`: "contra qué se dispara esto y entre qué divide el indicador del chat"); read by the runner.
CONTEXT_WINDOW = "context_window"


# A publish check that needs the person: (actor, the draft as data, format_path) → [{"field", "message"}].
PublishProblems = Callable[["Actor", dict[str, Any], Callable[..., str]], list[dict[str, str]]]


@dataclass(frozen=True)
class RunHooks:
    # Resuming: set what the run's scratch must say before its capabilities are built (deps.scratch).
    on_resume: Callable[[Run, dict[str, Any]], None] | None = None
    # Resuming: the parked messages (JSON tree as stored) → the tree to load.
    restore_history: Callable[[Run, Any], Any] | None = None
    # Parking: (handle, the JSON tree to store) → (the tree to store, keys to add to the run's parked_state).
    on_park: Callable[[RunHandle, Any], tuple[Any, dict[str, Any]]] | None = None
    # Completed: (handle, the run's messages, the answer's message id or None). Never raises (logs).
    keep_history: Callable[[RunHandle, list[Any], int | None], None] | None = None
    # Answered: (handle, the committed answer's message id).
    after_answer: Callable[[RunHandle, int], None] | None = None
    # Resuming after a lost worker: (the run row, its ToolCall rows left running) — stop what such a call left
    # going outside this process (a sandboxd task). Never raises (logs): the run goes on either way.
    on_interrupted: Callable[[Run, list[Any]], None] | None = None
    # Failed: (the run row), inside the ending's transaction.
    on_failed: Callable[[Run], None] | None = None
    publish_problems: PublishProblems | None = None


NO_HOOKS = RunHooks()
logger = logging.getLogger(__name__)


def hooks(name: str) -> Iterator[Callable[..., Any]]:
    """Every registered capability's `name` hook, in registry order."""
    from capabilities import registry

    for capability in registry.all_capabilities():
        hook = getattr(capability.hooks, name)
        if hook is not None:
            yield hook


def on_resume(run: Run, scratch: dict[str, Any]) -> None:
    for hook in hooks("on_resume"):
        hook(run, scratch)


def restore_history(run: Run, stored: Any) -> Any:
    for hook in hooks("restore_history"):
        stored = hook(run, stored)
    return stored


def on_park(handle: RunHandle, tree: Any) -> tuple[Any, dict[str, Any]]:
    kept: dict[str, Any] = {}
    for hook in hooks("on_park"):
        tree, extra = hook(handle, tree)
        kept.update(extra)
    return tree, kept


def keep_history(handle: RunHandle, messages: list[Any], message_id: int | None) -> None:
    for hook in hooks("keep_history"):
        hook(handle, messages, message_id)


def after_answer(handle: RunHandle, message_id: int) -> None:
    for hook in hooks("after_answer"):
        hook(handle, message_id)


def on_interrupted(run: Run, calls: list[Any]) -> None:
    for hook in hooks("on_interrupted"):
        try:
            hook(run, calls)
        except Exception:  # the resumed run must go on; what was not stopped ends at its own timeout
            logger.exception("on_interrupted hook failed for run %s", run.pk)


def on_failed(run: Run) -> None:
    for hook in hooks("on_failed"):
        hook(run)


