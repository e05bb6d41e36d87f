"""Instruction reminders (spec "Recordatorio de instrucciones"): no tools. A port of pydantic-ai-harness's
`SystemReminders` that re-states guidance mid-run so a long session stops drifting from its instructions.

Three classes, each with its own cadence (`interval`, `first_after`, `max_fires`):

- `reminders[]`: fixed lines the author writes (the harness's `Reminder`);
- `goal_reanchor`: points the model back at the person's first request (the harness's `GoalReanchor`, free);
- `llm_reminder`: a short nudge a model writes from the recent transcript (the harness's `LLMReminder`) on the
  run's own model — the one whose key the vault resolved — through the platform's metered path
  (`governance.metered`, ledger label `reminder`): checked against every cap before, priced and written to the
  run's ledger after; any failure, a used-up cap included, falls back to the goal re-anchor line.

The cadence counts model requests across the whole conversation and survives turns: the request counter and
each class's fires are kept in `Conversation.state["reminders"]` (like the plan) and seeded into the next
turn, so "every ten requests" goes on where the last turn stopped. Only the counters are stored, never the
reminder text, so stale reminders never pile up.

How a fired reminder is sent is the spec's, not the harness's current one: an ephemeral *user* prompt at the
tail of that one request, led by a cache breakpoint whose life the binding's `cache_ttl` sets ("un prompt de
usuario efímero detrás de un punto de corte de caché"). The harness enqueues a request-scoped system prompt and
has deprecated its own `cache_ttl` (ignored, with a warning), so `ConversationReminders` fires in
`wrap_model_request` instead, with the harness's own selection, and appends the user part to the request
sent, the way the harness's Planning appends its plan reminder. A binding with no class configured attaches
nothing.
"""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.messages import CachePoint, ModelRequest, RetryPromptPart, ToolReturnPart, UserPromptPart
from pydantic_ai_harness.system_reminders import (
    GoalReanchor,
    LLMReminder,
    Reminder,
    ReminderFiredEvent,
    SystemReminders,
)

from capabilities.base import BuildContext, Built, Capability, NotBuilt, enum_labels

STATE_KEY = "reminders"
MAX_LINES = 10
TTL_LABELS = {"5m": "5 minutes", "1h": "1 hour"}


class Cadence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    interval: int = Field(default=10, ge=1, le=1000, description="Fire every N model requests.")
    first_after: int | None = Field(default=None, ge=1, le=100_000,
                                    description="The request number of the first fire (default: the interval).")
    max_fires: int | None = Field(default=None, ge=1, le=10_000,
                                  description="At most this many fires over the whole conversation.")


class ReminderLine(Cadence):
    text: str = Field(min_length=1, max_length=1000, description="The line the model is reminded of.")


class SystemRemindersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reminders: list[ReminderLine] = Field(default_factory=list, max_length=MAX_LINES,
                                          description="Fixed lines you write, each with its own cadence.")
    goal_reanchor: Cadence | None = Field(default=None,
                                          description="Point the model back at the person's first request.")
    llm_reminder: Cadence | None = Field(
        default=None, description="A short nudge the run's own model writes from the recent transcript "
                                  "(one metered model call per fire).")
    cache_ttl: Literal["5m", "1h"] = Field(
        default="5m", description="How long the prompt before a reminder may be cached.",
        json_schema_extra=enum_labels(TTL_LABELS))


def fires_on(cadence: Cadence, count: int) -> bool:
    """The harness's own rule (`_should_fire`), for the dynamic classes it does not gate."""
    base = cadence.first_after or cadence.interval
    return count >= base and (count - base) % cadence.interval == 0


# ------------------------------------------------------------------ the counters on the conversation


def stored_counters(conversation_id: str | None, organization_id: str) -> dict[str, Any]:
    if not conversation_id:
        return {}
    from agents.models import Conversation

    state = (Conversation.objects.filter(pk=conversation_id, organization_id=organization_id)
             .values_list("state", flat=True).first()) or {}
    counters = state.get(STATE_KEY)
    return counters if isinstance(counters, dict) else {}


def save_counters(conversation_id: str | None, organization_id: str, counters: dict[str, Any]) -> None:
    if not conversation_id:
        return
    from agents.models import Conversation

    with transaction.atomic():
        conversation = (Conversation.objects.select_for_update()
                        .filter(pk=conversation_id, organization_id=organization_id).first())
        if conversation is None:
            return
        state = dict(conversation.state or {})
        state[STATE_KEY] = counters
        conversation.state = state
        conversation.save(update_fields=["state"])


# ------------------------------------------------------------------ the reminder as a user prompt


def _has_cache_target(parts: Any) -> bool:
    """Whether the request already carries content a leading breakpoint attaches to (providers refuse one with
    nothing before it; a system part maps to the system field, not to message content)."""
    return any(isinstance(p, ToolReturnPart | RetryPromptPart)
               or (isinstance(p, UserPromptPart) and bool(p.content)) for p in parts)


def with_reminder(request: ModelRequest, texts: list[str], ttl: str) -> ModelRequest:
    """The request with the fired reminders as one user prompt at its tail, led by a cache breakpoint so the
    cached prefix ends before it."""
    content: list[Any] = ["<system-reminder>\n" + "\n\n".join(texts) + "\n</system-reminder>"]
    if _has_cache_target(request.parts):
        content.insert(0, CachePoint(ttl=ttl))  # type: ignore[arg-type]
    return replace(request, parts=[*request.parts, UserPromptPart(content=content)])


# ------------------------------------------------------------------ the capability


@dataclass
class _Gated:
    """A dynamic reminder fired on its own cadence over the conversation's request counter."""

    key: str
    cadence: Cadence
    owner: ConversationReminders | None
    inner: Any

    async def __call__(self, ctx: Any) -> Any:
        assert self.owner is not None
        owner = self.owner.current or self.owner
        count = owner._request_count
        fired = owner.dynamic_fires.get(self.key, 0)
        if not fires_on(self.cadence, count) or (self.cadence.max_fires is not None
                                                 and fired >= self.cadence.max_fires):
            return None
        result = self.inner(ctx)
        if hasattr(result, "__await__"):
            result = await result
        if result is not None:
            owner.dynamic_fires[self.key] = fired + 1
        return result


@dataclass
class ConversationReminders(SystemReminders[Any]):
    """SystemReminders whose counters are seeded from, and written back to, the conversation."""

    conversation_id: str | None = field(default=None, kw_only=True)
    organization_id: str = field(default="", kw_only=True)
    run_id: str | None = field(default=None, kw_only=True)
    line_keys: dict[int, str] = field(default_factory=dict, kw_only=True, repr=False)
    llm_cadence: Cadence | None = field(default=None, kw_only=True, repr=False)
    dynamic_fires: dict[str, int] = field(default_factory=dict, kw_only=True, repr=False)
    # The per-run clone the gated callables read (they were made with the template instance).
    current: ConversationReminders | None = field(default=None, kw_only=True, repr=False)
    # Not the harness's `cache_ttl` (deprecated there, ignored with a warning): the life of the breakpoint
    # before the reminder this class sends as a user prompt.
    tail_cache_ttl: Literal["5m", "1h"] = field(default="5m", kw_only=True)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        # The harness fires here and enqueues a system part the run's history keeps; firing moves to
        # wrap_model_request, where the reminder is added to the request sent and nowhere else.
        return request_context

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        """The harness's firing (`SystemReminders.before_model_request`: same cadence, same order, fire state
        committed only once the reminder is added) with the spec's injection: an ephemeral user prompt."""
        messages = request_context.messages
        # A provider-resume turn ends in a suspended response echoed verbatim: it carries nothing and spends no
        # cadence slot (the harness's guard).
        if messages and isinstance(messages[-1], ModelRequest):
            self._request_count += 1
            fired = self._eligible_static(ctx)
            dynamic = await self._collect_dynamic(ctx)
            reminders = [text for _, text in fired] + [str(text) for text in dynamic]
            if reminders:
                messages[-1] = with_reminder(messages[-1], reminders, self.tail_cache_ttl)
                for key, _text in fired:
                    self._fire_counts[key] = self._fire_counts.get(key, 0) + 1
                for reminder in reminders:
                    await ctx.emit(ReminderFiredEvent(text=reminder))
        return await handler(request_context)

    async def for_run(self, ctx: Any) -> ConversationReminders:
        clone = copy(self)
        counters = await sync_to_async(stored_counters)(self.conversation_id, self.organization_id)
        stored = counters.get("fires")
        fires: dict[str, Any] = stored if isinstance(stored, dict) else {}
        clone._request_count = int(counters.get("requests") or 0)
        clone._fire_counts = {rid: int(fires.get(key) or 0) for rid, key in self.line_keys.items()}
        clone.dynamic_fires = {key: int(value or 0) for key, value in fires.items() if key in ("goal", "llm")}
        dynamic = [d for d in self.dynamic_reminders if not (isinstance(d, _Gated) and d.key == "llm")]
        if self.llm_cadence is not None:
            from governance import metered

            meter = await sync_to_async(metered.for_run)(self.run_id, self.organization_id, kind=metered.REMINDER)
            writer = LLMReminder(model=metered.metered_model(ctx.model, meter))
            dynamic.append(_Gated("llm", self.llm_cadence, self, writer))
        clone.dynamic_reminders = tuple(dynamic)
        clone._dynamic_snapshot = tuple(dynamic)
        self.current = clone
        return clone

    def counters(self) -> dict[str, Any]:
        fires = {key: self._fire_counts.get(rid, 0) for rid, key in self.line_keys.items()}
        fires.update(self.dynamic_fires)
        return {"requests": self._request_count, "fires": fires}

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        try:
            return await handler()
        finally:
            # Failed, parked or finished: the requests this run made count for the next turn either way.
            await sync_to_async(save_counters)(self.conversation_id, self.organization_id, self.counters())


def build(ctx: BuildContext) -> list[Built]:
    config = ctx.config
    assert isinstance(config, SystemRemindersConfig)
    if not (config.reminders or config.goal_reanchor or config.llm_reminder):
        raise NotBuilt("no reminder class is configured")
    lines = [Reminder(line.text, interval=line.interval, first_after=line.first_after, max_fires=line.max_fires,
                      tag=None) for line in config.reminders]
    dynamic: list[_Gated] = []
    if config.goal_reanchor is not None:
        dynamic.append(_Gated("goal", config.goal_reanchor, None, GoalReanchor()))
    if config.llm_reminder is not None:
        # Stands in until for_run puts one on the run's own model there.
        dynamic.append(_Gated("llm", config.llm_reminder, None, GoalReanchor()))
    capability = ConversationReminders(
        reminders=lines, dynamic_reminders=tuple(dynamic), conversation_id=ctx.deps.conversation_id,
        organization_id=ctx.organization_id, run_id=ctx.deps.run_id,
        line_keys={id(reminder): f"line:{index}" for index, reminder in enumerate(lines)},
        llm_cadence=config.llm_reminder, tail_cache_ttl=config.cache_ttl)
    for gated in dynamic:
        gated.owner = capability
    return [capability]


CAPABILITY = Capability(
    id="system_reminders",
    name="Instruction reminders",
    category="reasoning",
    description="Re-states your guidance mid-run on a cadence, so a long session keeps to its instructions.",
    offers="guidance re-stated on a cadence during long runs",
    examples=(
        "Remind the agent every ten steps to cite its sources.",
        "Keep a long research session on the person's original question.",
    ),
    never_does=(
        "It never writes a reminder into the conversation (only its counters are kept), and never calls a "
        "model except when “Let the model write reminders” is on, metered on the run."
    ),
    tools=(),
    tools_note="No tools on purpose: it adds guidance to the end of a model request instead of offering the "
               "model anything to call.",
    config_model=SystemRemindersConfig,
    # In a voice call it has no effect (catalog "sin efecto"): a call sends no stored history.
    voice="never",
    advanced=True,
    build=build,
)
