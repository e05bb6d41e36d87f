"""Guardrails (spec "Reglas de protección"): no tools. Redacts or blocks what flows through a run at four edges
— input, output, tool result, tool arguments — with pydantic-ai-harness's detectors plus a phone detector
(`phonenumbers`). A binding with no edge configured attaches nothing."""

from __future__ import annotations

from capabilities.base import BuildContext, Built, Capability, NotBuilt
from capabilities.guardrails.capability import RequestGuardrails, StreamGuardrails, ToolResultGuardrail
from capabilities.guardrails.config import EDGES, GuardrailsConfig
from capabilities.guardrails.screen import WITHHELD_REASONING, GuardrailBlocked, Screen


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, GuardrailsConfig)
    screens = {edge: Screen.for_edge(ctx.config, edge) for edge in EDGES}
    if not any(screens.values()):
        raise NotBuilt("no edge has a check configured")
    built: list[Built] = []
    if screens["in"] or screens["out"] or screens["args"]:
        kind = StreamGuardrails if screens["out"] or screens["args"] else RequestGuardrails
        built.append(kind(inp=screens["in"], out=screens["out"], args=screens["args"]))
    tool = screens["tool"]
    if tool is not None:
        built.append(ToolResultGuardrail(screen=tool))
    return built


CAPABILITY = Capability(
    id="guardrails",
    name="Guardrails",
    category="utility",
    description="Redacts secrets and personal data, or stops the run on a blocked term, in what the person "
                "writes, what the agent answers, what it passes to tools and what tools return.",
    offers="secrets and personal data redacted, and blocked terms stopped, at the run's four edges",
    examples=(
        "Never show a customer's card number or phone number in an answer.",
        "Stop if a fetched page tells the agent to ignore its instructions.",
        "Keep API keys people paste out of what the model reads.",
    ),
    never_does=(
        "It never shows an answer or reasoning step before checking it, never sends the model a secret it "
        "redacted from the person's message (the conversation keeps what they typed), and never runs a tool "
        "whose arguments hold a blocked term."
    ),
    tools=(),
    tools_note="No tools on purpose: it inspects what flows through the run instead of offering the model "
               "anything to call.",
    config_model=GuardrailsConfig,
    # In a call it reads the call's transcripts (catalog "en las transcripciones"): live in the call's model.
    voice="live",
    advanced=True,
    build=build,
)

__all__ = ["CAPABILITY", "GuardrailBlocked", "GuardrailsConfig", "Screen", "WITHHELD_REASONING"]
