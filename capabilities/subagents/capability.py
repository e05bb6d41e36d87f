"""Delegation (`subagents`, scope `agents:delegate`): this agent hands self-contained work to specialists.

Built on subagents-pydantic-ai's `SubAgentToolset` — the task manager, sync/background execution, chat
traces, steering, cancellation, the truncating `wait_tasks` — wrapped where this platform needs more
(`toolset.DelegatingToolset`): the author's mode replaces the model's `mode` argument, the fan-out cap is a
tool result, the offered tools are filtered as the spec says, and every delegate is built by this platform
(`delegates.py`) on the parent run's budget guard, ledger and approval gate instead of by the library.

Who may be delegated to is not in this config: it is `AgentSpec.subagents` (published agents of the same
organization, checked at publish for `agents:run` of the publisher). This config carries the specialists
written inline, the mode, the caps and what the delegates borrow from this agent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.base import BuildContext, Built, Capability, ToolDecl, enum_labels, tool_text
from capabilities.lifecycle import RunHandle, RunHooks

Mode = Literal["sync", "async", "auto"]

MODE_LABELS = {"sync": "Wait for the answer", "async": "In the background", "auto": "Let the agent decide per task"}

_TASK_ID = "task_id: the id a background delegation returned when it started."
_MISSING = "An unknown task id (or another run's) comes back as text saying it was not found."

# A delegation is side-effecting: the delegate (or remote agent) acts and spends. A run resumed after its worker
# died must not run one that was in flight again (agents/runner/checkpoint.py reads this flag).
TASK = ToolDecl(
    id="task",
    side_effecting=True,
    description=tool_text(
        what="Hand a self-contained piece of work to one of this agent's specialists, by name.",
        when="When a named specialist (listed in your instructions) is better placed to do part of the job. "
        "Write the task so it stands on its own: the specialist does not see this conversation. The author "
        "decides whether a delegation is waited for or runs in the background; your instructions say which "
        "for each specialist, whatever you pass as mode.",
        args="description: the complete task. subagent_type: the specialist's name. mode: ignored, the "
        "author's setting applies (default sync). priority: low, normal (default), high or critical, for "
        "background work. complexity: simple, moderate or complex (default: the specialist's own). "
        "requires_user_context and may_need_clarification: default false. chat_trace_id: continue an "
        "earlier conversation with the same specialist (default: a new one).",
        returns="The specialist's answer followed by a 'Chat Trace ID' line, or for a background delegation "
        "the task id to follow with check_task or wait_tasks. An unknown name lists the specialists; past "
        "the fan-out cap it says so and starts nothing (wait, or do the work yourself).",
    ),
)

CHECK_TASK = ToolDecl(
    id="check_task",
    description=tool_text(
        what="Read the status of a background delegation, and its full answer once it is done.",
        when="To look at one task without waiting. To wait for several, use wait_tasks.",
        args=_TASK_ID,
        returns="The task's specialist, status and description, then its complete answer, its error or how "
        f"long it has run. {_MISSING}",
    ),
)

WAIT_TASKS = ToolDecl(
    id="wait_tasks",
    description=tool_text(
        what="Wait for background delegations to finish and read their answers.",
        when="After starting background work, when you need the results before going on.",
        args="task_ids: the ids to wait for. timeout: seconds, default 300.0. mode: all (default) waits for "
        "every task, any returns at the first that finishes.",
        returns="A header counting finished, running and missing tasks, then each task's outcome. An answer "
        "longer than this agent's max_result_chars is cut with a marker: check_task returns it whole.",
    ),
)

LIST_ACTIVE = ToolDecl(
    id="list_active_tasks",
    description=tool_text(
        what="List the background delegations of this run that are still going.",
        when="When you have lost track of which tasks are running.",
        returns="One line per running task (id, specialist, status, start of its description), or "
        "'No active background tasks.'",
    ),
)

ANSWER = ToolDecl(
    id="answer_subagent",
    description=tool_text(
        what="Answer a question a background delegation is waiting on.",
        when="Never offered here: a sync delegate's question goes to the person, a background one cannot ask.",
        args=f"{_TASK_ID} answer: the answer.",
        returns="Whether the answer was delivered, or that the task is not waiting for one.",
    ),
)

SEND_MESSAGE = ToolDecl(
    id="send_message_to_subagent",
    side_effecting=True,
    description=tool_text(
        what="Steer a running background delegation with a new instruction.",
        when="When the specialist should change course without losing what it has done so far.",
        args=f"{_TASK_ID} message: the instruction, applied at its next step.",
        returns="That the message was delivered, or that the task is no longer running. " + _MISSING,
    ),
)

SOFT_CANCEL = ToolDecl(
    id="soft_cancel_task",
    side_effecting=True,
    description=tool_text(
        what="Ask a background delegation to stop at its next clean step.",
        when="When its work is no longer needed; what it already spent stays spent.",
        args=_TASK_ID,
        returns=f"That cancellation was requested, or that the task had already finished. {_MISSING}",
    ),
)

HARD_CANCEL = ToolDecl(
    id="hard_cancel_task",
    side_effecting=True,
    description=tool_text(
        what="Stop a background delegation at once.",
        when="When it must stop now (a soft cancel waits for a clean step); its unfinished work is lost.",
        args=_TASK_ID,
        returns=f"That the task was cancelled, or that it had already finished. {_MISSING}",
    ),
)

CREATE_AGENT = ToolDecl(
    id="create_agent",
    description=tool_text(
        what="Write a specialist for this run: a name, a description, instructions and a model.",
        when="When no named specialist fits and the work deserves its own instructions. It lasts for this "
        "run only; if task says the name is unknown in a later message, create it again. It gets no tools, "
        "knowledge or delegates of its own, and never asks the person anything.",
        args="name: letters, digits and hyphens. description: one line. instructions: its system prompt. "
        "model: one of the model profiles listed in your instructions (required). capabilities: not "
        "allowed, leave empty. can_ask_questions: ignored (it never asks).",
        returns="That the specialist was created (call task with its name), or why not: a model outside "
        "the list, a name in use, or this run's cap on specialists reached.",
    ),
)

DELEGATE = ToolDecl(
    id="delegate",
    side_effecting=True,
    description=tool_text(
        what="Write a one-off specialist and hand it a task in one call.",
        when="For a single piece of work no named specialist fits; it is not kept (use create_agent to "
        "reuse one). It gets no tools, knowledge or delegates, and never asks the person anything.",
        args="description: the complete task. instructions: its system prompt. name: a label (letters, "
        "digits, hyphens). model: one of the model profiles listed in your instructions (required). "
        "capabilities: not allowed. can_ask_questions: ignored. mode: ignored, the author's setting applies. "
        "priority, complexity, requires_user_context, may_need_clarification: as for task.",
        returns="The specialist's answer, or for a background delegation its task id; or why it could not "
        "start (a model outside the list, the fan-out cap).",
    ),
)

TOOLS = (TASK, CHECK_TASK, WAIT_TASKS, LIST_ACTIVE, ANSWER, SEND_MESSAGE, SOFT_CANCEL, HARD_CANCEL,
         CREATE_AGENT, DELEGATE)

# The six that take or report a task id: offered only where a background delegation is reachable.
LIFECYCLE = frozenset({"check_task", "wait_tasks", "list_active_tasks", "send_message_to_subagent",
                       "soft_cancel_task", "hard_cancel_task"})
DYNAMIC = frozenset({"create_agent", "delegate"})
# Declared (so a policy can gate or rename it) and offered to nobody: see the catalog's "answer_subagent".
NEVER_OFFERED = frozenset({"answer_subagent"})


class InlineSpecialist(BaseModel):
    """A specialist written inside this agent: reviewed, versioned and billed with it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")
    description: str = Field(min_length=1, max_length=1000)
    instructions: str = Field(min_length=1, max_length=50_000)
    # Required: a specialist that names no model is refused (the library no longer picks one either).
    model_profile_id: str = Field(min_length=1)
    mode: Mode | None = Field(default=None, description="Overrides the delegation's mode for this one.")
    max_steps: int = Field(default=10, ge=1, le=200)


class SubagentsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inline: list[InlineSpecialist] = Field(default_factory=list, max_length=20,
                                           description="Specialists defined inside this agent.")
    mode: Mode = Field(default="sync", description="Whether the agent waits for a delegate's answer.",
                       json_schema_extra=enum_labels(MODE_LABELS))
    allow_questions: bool = Field(default=False,
                                  description="A sync delegate may ask the person of this agent's run.")
    allow_dynamic: bool = Field(default=False,
                                description="The agent may write specialists of its own for this run.")
    max_depth: int = Field(default=1, ge=1, le=3, description="Levels of delegation, this agent's included.")
    max_fanout: int = Field(default=3, ge=1, le=10, description="Delegations running at once.")
    max_result_chars: int = Field(default=2000, ge=200, le=20_000,
                                  description="How much of a delegate's answer the agent reads at first (it can read the rest).")
    share_with_delegates: list[str] = Field(default_factory=list,
                                            description="Toolbox entries of this agent its delegates may use too.")

    @field_validator("inline")
    @classmethod
    def _unique_names(cls, value: list[InlineSpecialist]) -> list[InlineSpecialist]:
        names = [s.name for s in value]
        if len(names) != len(set(names)):
            raise ValueError("Two inline specialists share a name.")
        return value

    def background_reachable(self, delegate_modes: list[Mode | None]) -> bool:
        """Whether any delegation of this agent can run in the background (then the lifecycle tools are
        offered): mode async or auto, a delegate preferring either, or specialists the model writes."""
        modes = {self.mode, *(m for m in delegate_modes if m), *(s.mode for s in self.inline if s.mode)}
        return self.allow_dynamic or bool(modes & {"async", "auto"})


def publish_check(config: SubagentsConfig) -> list[tuple[str, str]]:
    problems = []
    if "subagents" in config.share_with_delegates:
        problems.append(("share_with_delegates", "Delegation itself cannot be shared with delegates."))
    return problems


def build(ctx: BuildContext) -> list[Built]:
    from capabilities.subagents.toolset import build_delegation

    return build_delegation(ctx)


def _on_park(handle: RunHandle, tree: Any) -> tuple[Any, dict[str, Any]]:
    """Specialists the model wrote in this run are kept with the park, so the resumed run knows them."""
    from capabilities.subagents.toolset import parked_extras

    return tree, parked_extras(handle.run.pk)


def _publish_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    from capabilities.subagents.publish import delegate_problems

    return delegate_problems(actor, data, format_path)


CAPABILITY = Capability(
    id="subagents",
    name="Subagents",
    category="reasoning",
    description="Hands self-contained work to specialists — other published agents or ones written here — "
    "each with its own model, knowledge and step limit.",
    offers="handing parts of a job to specialist agents by name",
    examples=(
        "Have the researcher gather the sources, then write the summary yourself.",
        "Ask the three regional analysts for their numbers at once.",
        "Get the legal reviewer's opinion on this clause.",
    ),
    never_does=(
        "It never lends a delegate this agent's capabilities or keys beyond what “Share with delegates” names, "
        "never lets a delegate go deeper than “Most levels of delegation” or more run at once than “Most "
        "delegates at once”, and never "
        "keeps a specialist the model wrote beyond the run."
    ),
    tools=TOOLS,
    scopes=("agents:delegate",),
    config_model=SubagentsConfig,
    voice="hand_off",
    publish_check=publish_check,
    build=build,
    hooks=RunHooks(on_park=_on_park, publish_problems=_publish_problems),
)
