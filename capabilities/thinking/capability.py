"""Reasoning. No tools on purpose: it changes how the model works, not what it can reach.

pydantic-ai's `Thinking` capability sets the unified `thinking` model setting, which each provider
maps to its own nearest level (a level a provider lacks becomes the closest one it has), so a spec
stays portable across models. Unset effort = the provider's own default.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities.thinking import Thinking

from capabilities.base import BuildContext, Built, Capability, enum_labels
from capabilities.lifecycle import RunHooks

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


def model_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    """Reasoning on a model that does not reason is silently ignored by every run: refused at publish."""
    from capabilities.model_support import binding_on_model

    bound = binding_on_model(actor, data, "thinking", ThinkingConfig)
    if bound is None or bound.reasons():
        return []
    return [{"field": f"{format_path(('capabilities', bound.index), data)}.id",
             "message": f"The model of “{bound.label}” ({bound.model.model_name}) is not a reasoning model, so "
                        "Reasoning would change nothing: remove it or choose a model that reasons."}]


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
    hooks=RunHooks(publish_problems=model_problems),
)
