"""Planning: a checklist the model keeps for itself while it works — what is done, what is in progress,
what is left. Built on pydantic-ai-harness `Planning`: the plan reaches the model as a cache-safe tail
reminder, never the system prompt. The store is the conversation's (see `store.py`).

None of the nine tools acts on the world (side_effecting=False). The three subtask tools are declared
even when a flat list does not offer them, because a tool missing from the declaration could not be put
behind an approval gate or renamed by a binding. Their text is this repository's, not the library's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai_harness.planning import Planning

from capabilities.base import BuildContext, Built, Capability, ToolDecl, enum_labels, tool_text
from capabilities.lifecycle import RunHooks
from capabilities.planning.store import ConversationPlanStore, reset_in_progress_steps

_STATUSES = "pending, in_progress, completed or cancelled (blocked too when subtasks are on)"
_NOT_FOUND = "An unknown step id comes back as text saying it was not found; call read_plan for the ids."

TOOLS = (
    ToolDecl(
        id="write_plan",
        description=tool_text(
            what="Lay out, or replace, the whole plan for multi-step work.",
            when="Call it first when a request needs several steps, then again as steps start and finish. "
            "For one change to an existing plan use add_task or update_task_status instead.",
            args=f"items: the complete ordered list, every time (unchanged and finished steps too); each step has "
            f"content (imperative, e.g. 'Add the migration'), status ({_STATUSES}), optional active_form "
            "(e.g. 'Adding the migration') and optional id (kept when given, generated otherwise). "
            "Keep exactly one step in_progress.",
            returns="'Plan updated: N step(s).' and the rendered plan with ids. A duplicate id or a status "
            "that is not allowed returns 'Plan not updated: ...' and changes nothing.",
        ),
    ),
    ToolDecl(
        id="read_plan",
        description=tool_text(
            what="Read the current plan: each step's id, content and status, plus progress counts.",
            when="Before a granular edit (the ids come from here) or to check what is left. The plan is "
            "already shown to you each turn, so do not call it just to remember.",
            returns="The steps as '[ ] [id] content' lines with a summary line, or 'No plan yet.'",
        ),
    ),
    ToolDecl(
        id="add_task",
        description=tool_text(
            what="Append one new pending step without replacing the plan.",
            when="When you discover one more step. To restructure the plan use write_plan.",
            args="content: the step, imperative. active_form: optional present-continuous label; default empty.",
            returns="'Added step ... with id: <id>'.",
        ),
    ),
    ToolDecl(
        id="update_task_status",
        description=tool_text(
            what="Change one step's status by id.",
            when="Set in_progress when you start a step and completed only when it is fully done; "
            "cancelled for a step no longer needed. For several at once use update_task_statuses.",
            args=f"task_id: the step id from read_plan. status: {_STATUSES}.",
            returns=f"'Updated step ... status to ...' (the status actually stored). {_NOT_FOUND}",
        ),
    ),
    ToolDecl(
        id="update_task_statuses",
        description=tool_text(
            what="Change several steps' statuses in one call.",
            when="Handing off from a finished step to the next. List a prerequisite's completion before "
            "starting its dependent: entries apply in order.",
            args=f"updates: a list of {{task_id, status}}; status is {_STATUSES}.",
            returns="What changed. The batch is checked first: if any entry is invalid nothing is applied "
            "and the errors are returned.",
        ),
    ),
    ToolDecl(
        id="remove_task",
        description=tool_text(
            what="Delete a step for good.",
            when="For a step created in error or no longer relevant. To mark work done use "
            "update_task_status with completed.",
            args="task_id: the step id from read_plan.",
            returns=f"'Removed step ...' (with its subtasks, if any). {_NOT_FOUND}",
        ),
    ),
    ToolDecl(
        id="add_subtask",
        description=tool_text(
            what="Add a pending subtask under an existing step.",
            when="Break a complex step into a few independently completable pieces; complete them "
            "before the parent.",
            args="parent_id: id of the parent step. content: the subtask, imperative. active_form: optional label.",
            returns="'Added subtask ... with id: <id> (parent: <parent_id>)', or text saying the parent was not found.",
        ),
    ),
    ToolDecl(
        id="set_dependency",
        description=tool_text(
            what="Record that one step must wait for another.",
            when="When order matters. The dependent step is blocked until its prerequisite is completed or "
            "cancelled. Self-dependencies, cycles and duplicates are refused.",
            args="task_id: the step that waits. depends_on_id: the step that must finish first.",
            returns=f"'Added dependency: ...' and whether the step was blocked, or why not. {_NOT_FOUND}",
        ),
    ),
    ToolDecl(
        id="get_available_tasks",
        description=tool_text(
            what="List the steps that can start now: not completed, not blocked, no unfinished dependency.",
            when="To pick the next step when dependencies are involved.",
            returns="Numbered '[id] content' lines, or a sentence saying nothing is available.",
        ),
    ),
)

TTL_LABELS = {"5m": "5 minutes", "1h": "1 hour"}


class PlanningConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enable_subtasks: bool = Field(
        default=False, description="Adds the subtask and dependency tools and the blocked status."
    )
    cache_ttl: Literal["5m", "1h"] = Field(
        default="5m",
        description="How long the prompt before the plan reminder may be cached.",
        json_schema_extra=enum_labels(TTL_LABELS),
    )


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, PlanningConfig)
    conversation_id = ctx.deps.conversation_id
    store = ConversationPlanStore(conversation_id, ctx.organization_id) if conversation_id else None
    planning = Planning(
        store=store, enable_subtasks=ctx.config.enable_subtasks, cache_ttl=ctx.config.cache_ttl
    )
    renames = {t: o.name for t, o in ctx.binding.tool_overrides.items() if o.name}
    if renames:
        # The library's guidance names its tools; a renamed tool must be named as the model sees it.
        guidance = str(planning.get_instructions() or "")
        for old, new in renames.items():
            guidance = guidance.replace(f"`{old}`", f"`{new}`")
        planning.guidance = guidance
    return [planning]


def _on_failed(run: Any) -> None:
    """A failed, stopped or over-budget run is working on nothing: its in-progress steps go back to pending."""
    if run.conversation_id:
        reset_in_progress_steps(str(run.conversation_id))


CAPABILITY = Capability(
    id="planning",
    name="Planning",
    category="reasoning",
    description="Keeps a checklist of the steps of a multi-step task, carried from one message to the next.",
    offers="a checklist for multi-step work that survives between messages",
    examples=(
        "Plan and carry out a three-part research task",
        "Break the website migration into steps and work through them.",
        "Where are we on the checklist from earlier?",
    ),
    never_does=(
        "It never acts on the world: its tools only edit the agent's own checklist, which belongs to this "
        "one conversation."
    ),
    tools=TOOLS,
    config_model=PlanningConfig,
    voice="live",
    recommended=True,
    build=build,
    hooks=RunHooks(on_failed=_on_failed),
)
