"""Reasoning. No tools on purpose: it changes how the model works, not what it can reach.

pydantic-ai's `Thinking` capability sets the unified `thinking` model setting, which each provider
maps to its own nearest level (a level a provider lacks becomes the closest one it has), so a spec
stays portable across models. Unset effort = the provider's own default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities.thinking import Thinking

from capabilities.base import BuildContext, Built, Capability, enum_labels

Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]

EFFORT_LABELS = {
    "minimal": "Minimal",
    "low": "Low",
    "medium": "Medium",
    "high": "High",
    "xhigh": "Extra high",
    "max": "Maximum",
}


class ThinkingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    effort: Effort | None = Field(
        default=None,
        description="How hard the model thinks. Unset = the provider's default; a level the provider "
        "lacks maps to its nearest one.",
        json_schema_extra=enum_labels(EFFORT_LABELS),
    )


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ThinkingConfig)
    return [Thinking(effort=ctx.config.effort if ctx.config.effort is not None else True)]


CAPABILITY = Capability(
    id="thinking",
    name="Reasoning",
    category="reasoning",
    description="Reasons step by step before answering: slower and dearer, better on multi-step problems.",
    offers="deliberate step-by-step reasoning before answering",
    examples=(
        "Which of these three pricing options is cheapest over two years?",
        "Find the flaw in this argument, step by step.",
        "Work out the order of these dependent migration steps.",
    ),
    never_does=(
        "It never gives the agent a tool or anything new to reach: it only changes how the model works (a "
        "level the provider lacks becomes its nearest one)."
    ),
    tools=(),
    tools_note="No tools, on purpose: it changes how the model works, not what it can reach.",
    config_model=ThinkingConfig,
    voice="live",
    build=build,
)
