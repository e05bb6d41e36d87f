"""ApprovalGate: a pydantic-ai capability that wraps the run's whole assembled toolset, so every tool —
from a toolset or brought by a library capability (planning, ask_user, skills…) — passes one gate,
keyed by the name the model calls (a renamed tool keeps its gate: the registry resolved it by id).

One pending approval per call: a gated call identical (tool and arguments) to one that already waits for a
person in this conversation — parked by an earlier turn — is not parked again; the model reads that it
waits. A model whose history holds what was said, not the waiting call, otherwise asked again on every
message (a widget visitor's "any news?") and the approvals queue filled with copies of one call."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset
from pydantic_ai.toolsets.wrapper import WrapperToolset

ALREADY_WAITING = ("This exact call is already waiting for a person's decision (asked in an earlier turn of this "
                   "conversation); it was not asked again. Tell the person it is waiting for approval.")


def call_key(tool_name: str, args: Any) -> tuple[str, str]:
    """A call as the gate compares it: its name and its arguments in one canonical spelling."""
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except ValueError:
            pass
    return tool_name, json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def waiting_calls(conversation_id: Any, *, exclude_run: Any) -> frozenset[tuple[str, str]]:
    """The gated calls of this conversation's other parked runs still waiting for a decision (one query)."""
    from agents.models import RunStatus
    from governance.models import Approval

    if not conversation_id:
        return frozenset()
    rows = (Approval.objects.filter(run__conversation_id=conversation_id, run__status=RunStatus.AWAITING_APPROVAL,
                                    status=Approval.Status.PENDING)
            .exclude(run_id=exclude_run).values_list("tool_name", "args"))
    return frozenset(call_key(name, args) for name, args in rows)


@dataclass
class _NotTwice(WrapperToolset[Any]):
    waiting: frozenset[tuple[str, str]] = frozenset()
    gated: frozenset[str] = frozenset()

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        if not ctx.tool_call_approved and name in self.gated and call_key(name, _as_sent(ctx, tool_args)) in self.waiting:
            return ALREADY_WAITING
        return await super().call_tool(name, tool_args, ctx, tool)


def _as_sent(ctx: Any, validated: dict[str, Any]) -> Any:
    """The call's arguments as the model sent them — what an approval records — not as validated (defaults
    filled in): the model's latest ToolCallPart with this call's id."""
    for message in reversed(ctx.messages or []):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == ctx.tool_call_id:
                    return part.args
            break
    return validated


@dataclass
class _AskAgain(WrapperToolset[Any]):
    """An approved call a lost worker left in flight (agents/runner/checkpoint.py, ASK_AGAIN) may or may not have
    happened: it waits for a person's decision again instead of running a second time unasked."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        from agents.runner.checkpoint import ASK_AGAIN

        if (ctx.tool_call_metadata or {}).get(ASK_AGAIN):
            raise ApprovalRequired(metadata={ASK_AGAIN: True})
        return await super().call_tool(name, tool_args, ctx, tool)


@dataclass
class ApprovalGate(AbstractCapability[Any]):
    # visible tool name → "required" | "never" | "default"
    approval: dict[str, str] = field(default_factory=dict)
    # (tool name, canonical args) of calls already waiting in this conversation (`waiting_calls`)
    waiting: Iterable[tuple[str, str]] = ()

    def get_wrapper_toolset(self, toolset):
        gated = ApprovalRequiredToolset(toolset, approval_required_func=self._needs_approval)
        waiting = frozenset(self.waiting)
        names = frozenset(name for name, rule in self.approval.items() if rule == "required")
        return _AskAgain(_NotTwice(gated, waiting=waiting, gated=names) if waiting else gated)

    def _needs_approval(self, ctx, tool_def, tool_args) -> bool:
        return self.approval.get(tool_def.name) == "required"
