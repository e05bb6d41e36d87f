"""The one metered path for the model calls the platform makes besides a run's own requests.

A run's own requests go through `agents.runner.guard.BudgetGuard`; both price with `governance.pricing`. Everything else that spends provider
credit — the summary of an oversized tool result (`tool_output_limits`), a voice note's transcription in a
channel bot, and what comes after them (compaction summaries, reminders, follow-ups) — goes through here:

- before the call: every cap that meters it (the agent's monthly budget, the organization's, and for an
  embed run the embed's) is checked, and a used-up cap raises `budgets.BudgetExceeded` without calling
  anything — the same rule as BudgetGuard (a cap binds once this month's spend has reached it);
- after it: the call is priced (genai-prices, as the runner prices its own; an unknown model is recorded at
  zero and marked partial, the offline demo model is free) and written to `governance.SpendEntry` under its
  own `kind` label — with the run it served, whose totals move in the same statement, or, for a call outside
  a run (a voice note is transcribed before its run exists), with the organization and agent it served.

A `Meter` says where the spend goes. Build one with `for_run` (read from the Run row, never from model
output) or `for_agent` (a call that serves an agent outside a run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import F

from agenticos.queries import Insert, Update, write_together
from governance import budgets, pricing
from governance.models import SpendEntry

logger = logging.getLogger(__name__)

# Ledger labels (SpendEntry.kind, at most 24 characters) of the calls metered here.
TOOL_OUTPUT_SUMMARY = "tool_output_summary"
TRANSCRIPTION = "transcription"
COMPACTION_SUMMARY = "compaction_summary"
REMINDER = "reminder"
VOICE_CALL = "voice_call"


@dataclass(frozen=True)
class Meter:
    """Where one call's spend is checked and written."""

    organization_id: Any
    kind: str
    run_id: Any = None
    agent_id: Any = None
    embed_id: Any = None
    surface: str = ""
    agent_budget: Decimal | None = None


def _budget_of(spec: Any) -> Decimal | None:
    value = ((spec or {}).get("budget") or {}).get("monthly_usd") if isinstance(spec, dict) else None
    return Decimal(str(value)) if value is not None else None


def for_run(run_id: Any, organization_id: Any, *, kind: str) -> Meter:
    """The meter of a call made for a run: its agent, embed, surface and the agent's cap as published in the
    run's version. A run id that names no run of this organization meters the organization alone. Sync (ORM)."""
    from agenticos.tenancy import parse_uuid
    from agents.models import Run

    run_uuid = parse_uuid(str(run_id)) if run_id else None
    row = (Run.objects.filter(pk=run_uuid, organization_id=organization_id)
           .values("agent_id", "embed_id", "surface", "version__spec").first() if run_uuid else None)
    if row is None:
        return Meter(organization_id=organization_id, kind=kind)
    return Meter(organization_id=organization_id, kind=kind, run_id=run_uuid, agent_id=row["agent_id"],
                 embed_id=row["embed_id"], surface=row["surface"], agent_budget=_budget_of(row["version__spec"]))


def for_agent(organization_id: Any, agent_id: Any, *, kind: str, surface: str = "",
              environment: str = "production") -> Meter:
    """The meter of a call that serves an agent outside a run (e.g. a voice note heard before its run starts):
    the agent's cap is the one published in the environment the call serves. Sync (ORM)."""
    from agents.models import Environment

    spec = (Environment.objects.filter(agent_id=agent_id, agent__organization_id=organization_id, name=environment)
            .values_list("version__spec", flat=True).first())
    return Meter(organization_id=organization_id, kind=kind, agent_id=agent_id, surface=surface,
                 agent_budget=_budget_of(spec))


def check(meter: Meter) -> None:
    """Raise `budgets.BudgetExceeded` naming the first used-up cap; no query when no cap can bind. Sync (ORM)."""
    from agenticos.models import Organization

    organization = Organization.objects.get(pk=meter.organization_id)
    if not budgets.may_bind(organization=organization, agent_budget=meter.agent_budget, embed_id=meter.embed_id):
        return
    bound = budgets.first_exhausted(budgets.caps_for(
        organization=organization, agent_id=meter.agent_id, agent_budget=meter.agent_budget,
        embed_id=meter.embed_id))
    if bound is not None:
        raise budgets.BudgetExceeded(bound)


def record(meter: Meter, *, model: str, cost: Decimal, partial: bool, input_tokens: int = 0,
           output_tokens: int = 0, chat: bool = True) -> SpendEntry:
    """One ledger row under the meter's label and, for a run, its totals in the same statement. A chat-model
    call adds its tokens and one request to the run like any of the agent's requests; any other call (audio)
    adds only its cost (its tokens stay on its ledger row). Sync (ORM)."""
    from agents.models import Run

    entry = budgets.spend_entry(
        organization_id=meter.organization_id, agent_id=meter.agent_id, run_id=meter.run_id,
        embed_id=meter.embed_id, surface=meter.surface, kind=meter.kind, model=model,
        input_tokens=input_tokens, output_tokens=output_tokens, cost=cost, partial=partial)
    if meter.run_id is None:
        write_together(Insert([entry]))
        return entry
    totals: dict[str, Any] = {"cost_usd": F("cost_usd") + cost}
    if chat:
        totals.update(input_tokens=F("input_tokens") + input_tokens,
                      output_tokens=F("output_tokens") + output_tokens, requests=F("requests") + 1)
    if partial:
        totals["cost_is_partial"] = True
    write_together(Insert([entry]),
                   Update(Run.objects.filter(pk=meter.run_id, organization_id=meter.organization_id), totals))
    return entry


def record_response(meter: Meter, model: Any, response: Any) -> SpendEntry:
    """A chat-model response, priced exactly as the runner prices the agent's own. Sync (ORM)."""
    cost, partial = pricing.price(response, free=pricing.is_free(model))
    usage = response.usage
    return record(meter, model=response.model_name or str(getattr(model, "model_name", "")), cost=cost,
                  partial=partial, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)


async def model_request(meter: Meter, model: Any, messages: list[Any], **kwargs: Any) -> Any:
    """One model request on `model` (the run's own, whose key the vault resolved): checked against every cap
    before (raises `budgets.BudgetExceeded`, nothing is sent), priced and written to the ledger after. Provider
    errors propagate; a response that arrived is always recorded."""
    from pydantic_ai.direct import model_request as direct_request

    await sync_to_async(check)(meter)
    response = await direct_request(model, messages, **kwargs)
    await sync_to_async(record_response)(meter, model, response)
    return response


def metered_model(model: Any, meter: Meter) -> Any:
    """`model` with every request it makes going through this path: for a helper agent a library builds on
    the run's own model (a reminder's writer), which no BudgetGuard wraps. Non-streamed requests only."""
    from pydantic_ai.models.wrapper import WrapperModel

    class MeteredModel(WrapperModel):
        async def request(self, messages, model_settings, model_request_parameters):  # type: ignore[override]
            await sync_to_async(check)(meter)
            response = await super().request(messages, model_settings, model_request_parameters)
            await sync_to_async(record_response)(meter, self.wrapped, response)
            return response

    return MeteredModel(model)
