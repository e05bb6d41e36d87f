"""ApprovalGate: a pydantic-ai capability that wraps the run's whole assembled toolset, so every tool —
from a toolset or brought by a library capability (planning, ask_user, skills…) — passes one gate,
keyed by the name the model calls (a renamed tool keeps its gate: the registry resolved it by id)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset


@dataclass
class ApprovalGate(AbstractCapability[Any]):
    # visible tool name → "required" | "never" | "default"
    approval: dict[str, str] = field(default_factory=dict)

    def get_wrapper_toolset(self, toolset):
        return ApprovalRequiredToolset(toolset, approval_required_func=self._needs_approval)

    def _needs_approval(self, ctx, tool_def, tool_args) -> bool:
        return self.approval.get(tool_def.name) == "required"
