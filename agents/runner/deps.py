"""What every tool sees about the run it serves (pydantic-ai `RunContext[RunDeps].deps`).

Identifiers only: tools load what they need through tenant-scoped queries keyed on `organization_id`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capabilities.lifecycle import RunHandle


@dataclass
class RunDeps:
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
