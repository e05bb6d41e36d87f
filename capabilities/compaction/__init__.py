"""Long conversations (spec "Conversaciones largas"): no tools. Trims a long run's message history before each
model request so a run that would reach the model's context limit keeps working — pydantic-ai-harness's
strategies: `summarize` (SummarizingCompaction, the default: the only one that keeps what old turns said),
`tiered` (clear old tool results first, summarize only if that was not enough), `clear_tool_results`,
`sliding_window`.

The trigger is `max_fraction` of the window. The window is, in order: the binding's `context_window`, the
model profile's own (noted from the provider's listing), what the harness resolves for the model (its profile,
then genai-prices), and `fallback_context_window`. The harness measures against what the provider billed for
the last response (instructions and every tool schema included), so the trigger is corrected for the
per-request overhead; before the first response it measures the messages alone.

A summary is a model request on the run's own model that no budget guard wraps, so it goes through the
platform's metered path (`governance.metered`, ledger label `compaction_summary`): checked against every cap
before, priced and written to the run's ledger after. A used-up cap fails the summary, and the run's next
request is refused by its own guard.

Each strategy notes in the run's scratch (`COMPACTED`) when it actually changed the history, so the runner keeps
that run's messages on its conversation for the next turns (persisted.py) instead of letting the summary end
with the run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from asgiref.sync import sync_to_async
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai.messages import CapabilityEvent, ModelRequest, ModelResponse
from pydantic_ai_harness.compaction import (
    DEFAULT_CONTEXT_WINDOW,
    ClearToolResults,
    SlidingWindowCompaction,
    SummarizingCompaction,
    TieredCompaction,
    estimate_token_count,
    resolve_context_window,
)

# Not exported by the harness's package, but the estimator and trigger its own strategies use: the overhead is
# measured with the same numbers the trigger fires on.
from pydantic_ai_harness.compaction._shared import estimate_text_tokens, resolve_token_trigger

from capabilities.base import BuildContext, Built, Capability, enum_labels
from capabilities.lifecycle import CONTEXT_WINDOW, RunHandle, RunHooks

# The run's scratch key set when a strategy changed the history (read by the runner, persisted.py).
COMPACTED = "compacted"


class CompactionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: Literal["summarize", "tiered", "clear_tool_results", "sliding_window"] = Field(
        default="summarize", json_schema_extra=enum_labels({
            "summarize": "Summarize old turns", "tiered": "Clear tool results, then summarize",
            "clear_tool_results": "Clear old tool results", "sliding_window": "Drop the oldest messages"}))
    max_fraction: float = Field(default=0.9, ge=0.05, le=0.95,
                                description="Share of the context window at which compaction starts.")
    keep_messages: int = Field(default=20, ge=1, le=1000,
                               description="Recent messages that survive a summary or a window.")
    keep_tool_pairs: int = Field(default=3, ge=0, le=100, description="Recent tool calls that keep their result.")
    summary_prompt: str | None = Field(default=None, max_length=8000,
                                       description="What the summarizing model is told; must contain {messages}.")
    context_window: int | None = Field(default=None, ge=1000, le=10_000_000,
                                       description="Overrides the model's window (tokens).")
    fallback_context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, ge=1000, le=10_000_000,
                                         description="The window assumed when the model's cannot be resolved.")

    @field_validator("summary_prompt")
    @classmethod
    def _prompt(cls, value: str | None) -> str | None:
        if value is not None and "{messages}" not in value:
            raise ValueError("summary_prompt must contain {messages}")
        return value


@dataclass(kw_only=True)
class Summarizing(CapabilityEvent, namespace="agenticos.compaction", name="summarizing"):
    """A summary is being written: a whole model request between two of the turn's own, with nothing else
    streaming, so the chat says what is happening (a silent screen reads as broken and gets reloaded)."""

    messages: int

    def as_frame(self) -> dict[str, Any]:
        from agents.run_handle import frame

        return frame("compaction", status="summarizing", messages=self.messages)


@dataclass(kw_only=True)
class GaveUp(CapabilityEvent, namespace="agenticos.compaction", name="gave_up"):
    """What a request carries beyond its messages (instructions, every tool schema) alone passes the trigger: no
    summary could get under it, so compaction does nothing — and says so, once per run, with the overhead and the
    window it was measured against (the pair someone needs to pick a `context_window` that works)."""

    overhead_tokens: int
    trigger_tokens: int
    window_tokens: int

    def as_frame(self) -> dict[str, Any]:
        from agents.run_handle import frame

        return frame("compaction", status="gave_up", overhead_tokens=self.overhead_tokens,
                     trigger_tokens=self.trigger_tokens, window_tokens=self.window_tokens)


# The run's scratch key set once the run was told compaction gave up (the notice describes a setting: once a run).
GAVE_UP = "compaction_gave_up"


def request_overhead(messages: list[Any]) -> int | None:
    """What the last answered request carried beyond its messages, in tokens: the input the provider billed for it
    less the estimate of the message text it sent (the harness's estimator; instructions are overhead too). None
    before the first response (nothing billed to measure against)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse) and message.usage.input_tokens:
            sent = messages[:index]
            instructions = next((m.instructions for m in reversed(sent)
                                 if isinstance(m, ModelRequest) and m.instructions), None) or ""
            text = estimate_token_count(sent) - estimate_text_tokens(instructions)
            return max(message.usage.input_tokens - text, 0)
    return None


def _trigger(strategy: Any, model: Any) -> tuple[int | None, int]:
    """The strategy's token trigger for this request's model, and the window it is a share of."""
    fraction = getattr(strategy, "max_fraction", None) or getattr(strategy, "target_fraction", None)
    override = getattr(strategy, "context_window", None)
    fallback = getattr(strategy, "fallback_context_window", DEFAULT_CONTEXT_WINDOW)
    window = override or resolve_context_window(model) or fallback
    return resolve_token_trigger(None, fraction, model, fallback, override), window


class NotesCompaction:
    """Notes in the run's scratch that the history was compacted — changed by the strategy, not merely
    triggered (a trigger whose strategy kept everything is no compaction) — without touching the strategy.

    And gives up where the harness would not: when the request's overhead alone passes the trigger, no summary
    can get below it (the schemas are not in the history) and a corrected window would buy a summary on every
    request for ever — so nothing is compacted, and the chat is told once (GaveUp)."""

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        overhead = request_overhead(ctx.messages)
        if overhead is not None:
            trigger, window = _trigger(self, getattr(request_context, "model", None) or ctx.model)
            if trigger is not None and overhead >= trigger:
                scratch = getattr(ctx.deps, "scratch", None)
                if isinstance(scratch, dict) and not scratch.get(GAVE_UP):
                    scratch[GAVE_UP] = True
                    await ctx.emit(GaveUp(overhead_tokens=overhead, trigger_tokens=trigger, window_tokens=window))
                return request_context
        before = list(ctx.messages)
        result = await super().before_model_request(ctx, request_context)  # type: ignore[misc]
        if ctx.messages != before:  # element-wise identity first: cheap when nothing changed
            scratch = getattr(ctx.deps, "scratch", None)
            if isinstance(scratch, dict):
                scratch[COMPACTED] = True
        return result


class MeteredSummarizingCompaction(NotesCompaction, SummarizingCompaction[Any]):
    """The harness's SummarizingCompaction, its summary written on the run's own model through the metered path."""

    meter_for: tuple[str, str] | None = None  # (run id, organization id)

    async def for_run(self, ctx: Any) -> MeteredSummarizingCompaction:
        from governance import metered

        if self.meter_for is None:
            return self
        run_id, organization_id = self.meter_for
        meter = await sync_to_async(metered.for_run)(run_id, organization_id, kind=metered.COMPACTION_SUMMARY)
        clone = replace(self)
        clone.model = metered.metered_model(ctx.model, meter)
        return clone

    async def compact(self, messages: Any, ctx: Any) -> Any:  # type: ignore[override]
        await ctx.emit(Summarizing(messages=len(messages)))
        return await super().compact(messages, ctx)


class NotedClearToolResults(NotesCompaction, ClearToolResults[Any]):
    pass


class NotedSlidingWindowCompaction(NotesCompaction, SlidingWindowCompaction[Any]):
    pass


class MeteredTieredCompaction(NotesCompaction, TieredCompaction[Any]):
    """TieredCompaction drives its tiers itself (their hooks never run), so its summarizing tier is metered here."""

    async def for_run(self, ctx: Any) -> MeteredTieredCompaction:
        tiers = [await tier.for_run(ctx) if isinstance(tier, MeteredSummarizingCompaction) else tier
                 for tier in self.tiers]
        return replace(self, tiers=tiers)


def _profile_window(ctx: BuildContext) -> int | None:
    from agents.models import ModelProfile

    profile_id = ctx.spec.model_profile_id if ctx.spec is not None else None
    if not profile_id:
        return None
    try:
        return (ModelProfile.objects.filter(pk=profile_id, organization_id=ctx.organization_id)
                .values_list("context_window", flat=True).first())
    except Exception:  # a malformed id in an old spec: the harness resolves the window instead
        return None


def _summarizer(config: CompactionConfig, ctx: BuildContext, window: dict[str, Any], **trigger: Any) -> Any:
    kwargs: dict[str, Any] = {"keep_messages": config.keep_messages, **window, **trigger}
    if config.summary_prompt:
        kwargs["summary_prompt"] = config.summary_prompt
    summarizer = MeteredSummarizingCompaction(**kwargs)
    summarizer.meter_for = (str(ctx.deps.run_id), str(ctx.organization_id))
    return summarizer


def build(ctx: BuildContext) -> list[Built]:
    config = ctx.config
    assert isinstance(config, CompactionConfig)
    window: dict[str, Any] = {"fallback_context_window": config.fallback_context_window}
    if config.context_window:  # the chat's context indicator divides by it too (the runner reads it)
        ctx.deps.scratch[CONTEXT_WINDOW] = config.context_window
    resolved = config.context_window or _profile_window(ctx)
    if resolved:
        window["context_window"] = resolved
    fraction: dict[str, Any] = {"max_fraction": config.max_fraction}
    if config.strategy == "summarize":
        return [_summarizer(config, ctx, window, **fraction)]
    if config.strategy == "clear_tool_results":
        return [NotedClearToolResults(keep_pairs=config.keep_tool_pairs, **window, **fraction)]
    if config.strategy == "sliding_window":
        return [NotedSlidingWindowCompaction(keep_messages=config.keep_messages, **window, **fraction)]
    # tiered: each tier's own trigger is bypassed; the orchestrator fires at the fraction.
    tiers = [ClearToolResults(keep_pairs=config.keep_tool_pairs, max_tokens=1),
             _summarizer(config, ctx, {}, max_messages=1)]
    return [MeteredTieredCompaction(tiers=tiers, target_fraction=config.max_fraction, **window)]


def _on_resume(run: Any, scratch: dict[str, Any]) -> None:
    """Compacted before it parked: the history it resumes from is the compacted one (its end is kept)."""
    if (run.parked_state or {}).get("compacted"):
        scratch[COMPACTED] = True


def _on_park(handle: RunHandle, tree: Any) -> tuple[Any, dict[str, Any]]:
    """The resumed execution keeps its history for the next turns when it completes (a parked history ends in
    unanswered calls, so it is never replayed itself)."""
    compacted = handle.deps is not None and bool(handle.deps.scratch.get(COMPACTED))
    return tree, ({"compacted": True} if compacted else {})


def _keep_history(handle: RunHandle, messages: list[Any], message_id: int | None) -> None:
    from capabilities.compaction import persisted

    persisted.keep_after_run(handle, messages, message_id)


CAPABILITY = Capability(
    id="compaction",
    name="Long conversations",
    category="utility",
    description="Trims a long run's history before each model request so it stays within the model's window.",
    offers="long tool-heavy runs kept within the model's context window",
    examples=(
        "Go through every file in the repository and list the TODOs.",
        "Search all our docs for each product and compare them.",
    ),
    never_does=(
        "It never rewrites the conversation's transcript (a compacted run's history is kept beside it for the "
        "next turns), and never summarizes without metering the summary on the run."
    ),
    tools=(),
    tools_note="No tools on purpose: it rewrites the history a request carries instead of offering the model "
               "anything to call.",
    config_model=CompactionConfig,
    # In a voice call it has no effect (catalog "sin efecto"): a call sends no stored history.
    voice="never",
    advanced=True,
    build=build,
    hooks=RunHooks(on_resume=_on_resume, on_park=_on_park, keep_history=_keep_history),
)
