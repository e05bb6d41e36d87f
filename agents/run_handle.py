"""What a capability (a tool, a lifecycle hook) may use of the run it serves, without importing the runner.

The runner (agents/runner) sits above the capabilities, and the capabilities above knowledge and governance;
this module sits below them all, beside the models (the layers in pyproject.toml's import-linter contract).
It holds the plain data every tool sees (`RunDeps`), the protocol of the running execution (`RunHandle`: its
row, its spec, its meter, a way to send a frame and a way onto its database thread), and the small helpers a
capability needs to speak the runner's language: a frame and the group it goes to, the runner's database
threads, what a stored tool result looks like, the error that stops a run before it starts — and what the runner
lends the layers below it: the models it builds for a model profile, the way a queued run reaches a worker. (Not named RunContext: pydantic-ai's `RunContext` is already every tool's
`ctx`.)
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.db import connection
from django.utils import timezone
from pydantic_ai.capabilities import AbstractCapability

from agents.models import ToolCall

if TYPE_CHECKING:
    from agents.models import ModelProfile, Run
    from agents.spec import AgentSpec


class RunHandle(Protocol):
    """The running execution (agents.runner.execute.RunExecution), as a hook or a tool may use it."""

    run: Run
    spec: AgentSpec
    deps: RunDeps | None
    # The pydantic-ai capabilities this run built (a hook finds its own among them, e.g. media's threshold).
    built_capabilities: list[Any]
    # The meter: ledger rows (governance.SpendEntry — governance sits above this module) priced but not written
    # yet, written by `record_spend`.
    unrecorded_spend: list[Any]

    async def emit(self, payload: dict[str, Any]) -> None: ...

    async def db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    async def reaching_model(self) -> None: ...

    def record_spend(self) -> None: ...


@dataclass
class RunDeps:
    """What every tool sees about the run it serves (pydantic-ai `RunContext[RunDeps].deps`).

    Identifiers only: tools load what they need through tenant-scoped queries keyed on `organization_id`.
    """

    run_id: str
    organization_id: str
    agent_id: str
    version_id: str
    surface: str
    conversation_id: str | None = None
    # The person whose authority the run has (None for anonymous visitors / system runs).
    user_id: int | None = None
    # Only web chat has someone who can answer an ask_user card.
    can_ask_user: bool = False
    # The running execution, for a tool that emits frames or meters on the run (subagents, coding agent, the
    # missing-capability card); None outside a run (a delegate's own deps name their parent's).
    execution: RunHandle | None = None
    # Free scratch space for capabilities during one run (never persisted as such).
    scratch: dict[str, Any] = field(default_factory=dict)


class AssemblyError(Exception):
    """The run cannot be assembled (missing model profile, unloadable version…). Readable message."""


class MeteredRequests(AbstractCapability[Any]):
    """The runner's capability around every model request that checks the caps and writes the spend
    (agents.runner.guard.BudgetGuard). A capability that must sit outside it orders itself by this type
    (`CapabilityOrdering(wraps=[MeteredRequests])`: pydantic-ai matches a type by issubclass)."""


# Frames: `{type, data}` messages a run emits to the channel-layer group of the run (agents/runner/frames.py).
def frame(type_: str, **data: Any) -> dict[str, Any]:
    return {"type": type_, "data": data}


def group_name(run_id: Any) -> str:
    return f"run-{run_id}"


# The runner's database threads: sync work (ORM, Redis) of a run never runs on its event loop.
_db_pool: ThreadPoolExecutor | None = None
_db_pool_lock = threading.Lock()


def db_pool() -> ThreadPoolExecutor:
    global _db_pool
    with _db_pool_lock:
        if _db_pool is None:
            _db_pool = ThreadPoolExecutor(max_workers=settings.RUN_DB_THREADS, thread_name_prefix="run-db")
        return _db_pool


async def on_db_thread(fn, *args, **kwargs):
    """Run sync work (ORM, Redis) on the runner's DB threads: never on the loop."""
    # In a copy of the caller's context, as asyncio.to_thread does (the run's secret uses: agenticos.secret_access).
    work = partial(contextvars.copy_context().run, pooled, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(db_pool(), work)


def connection_pooled() -> bool:
    return bool(settings.DATABASES["default"].get("OPTIONS", {}).get("pool"))


def pooled(fn, *args, **kwargs):
    """With a connection pool, hand the connection back after each piece of work: a thread of the shared
    pool must not sit on one between a run's steps. Without one, the thread keeps its connection."""
    try:
        return fn(*args, **kwargs)
    finally:
        if connection_pooled():
            connection.close()


# A tool call's result as the transcript stores it (agents/runner/transcript.py).
MAX_RESULT_CHARS = 50_000


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def result_for_storage(content: Any) -> Any:
    value = jsonable(content)
    if isinstance(value, str) and len(value) > MAX_RESULT_CHARS:
        return value[:MAX_RESULT_CHARS] + f"\n[… cut: {len(value) - MAX_RESULT_CHARS} more characters]"
    return value


def started_in_background(tool_call_id: str, content: Any) -> bool:
    """Whether a tool's reply is pydantic-ai-harness BackgroundTools' "started" message for this call, not its
    result ("Tool 'x' is running in background (task <call id>). This call is pending. …")."""
    return isinstance(content, str) and content.startswith("Tool '") and \
        f" is running in background (task {tool_call_id})." in content


def background_result(run_id: Any, tool_call_id: str, content: Any, *, ok: bool) -> None:
    """A tool call that ran in the background got its result (capabilities/browser/background.py): the stored
    call holds it, as a foreground call's does, so a reopened chat shows the result and not "running in
    background". It is the result the model reads, past the same tool-result hooks (guardrails, output limits)."""
    ToolCall.objects.filter(run_id=run_id, tool_call_id=tool_call_id).update(
        result=result_for_storage(content),
        status=ToolCall.Status.OK if ok else ToolCall.Status.ERROR,
        finished_at=timezone.now(),
    )


# What the runner lends the layers below it, registered from agents' AppConfig.ready() (the runner imports them;
# they never import it): how a model profile becomes a model, and how a queued run reaches a worker.
class ModelSource(Protocol):
    """How the runner turns a spec's model profile into a pydantic-ai model (agents.runner.assembly)."""

    def model_profile(self, run: Any, spec: Any) -> ModelProfile: ...

    def build_model(self, profile: ModelProfile) -> Any: ...

    def model_settings(self, profile: ModelProfile, spec: Any) -> Any: ...


_model_source: ModelSource | None = None


def register_model_source(source: ModelSource) -> None:
    """Called from agents' AppConfig.ready() with the runner's assembly module: a delegate (capabilities/
    subagents) builds its model the way its parent run's was built, without importing the runner."""
    global _model_source
    _model_source = source


def model_source() -> ModelSource:
    if _model_source is None:
        raise RuntimeError("No model source registered: agents' AppConfig.ready() has not run.")
    return _model_source


_run_delivery: Callable[[Any], None] | None = None


def register_run_delivery(deliver_after_commit: Callable[[Any], None]) -> None:
    """Called from agents' AppConfig.ready() with agents.runs.deliver_after_commit: a run a lower layer queued
    again (governance: an approval decided, a question answered) goes to the broker once its transaction commits."""
    global _run_delivery
    _run_delivery = deliver_after_commit


def deliver_after_commit(run_id: Any) -> None:
    if _run_delivery is None:
        raise RuntimeError("No run delivery registered: agents' AppConfig.ready() has not run.")
    _run_delivery(run_id)
