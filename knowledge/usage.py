"""The model calls knowledge makes besides the run's own requests — the query's embedding, self-query
filter inference, multi-query rewordings and HyDE — metered exactly like the runner's BudgetGuard meters
the agent's requests:

- before: every cap that meters the run (the agent's budget, the organization's, and for an embed run the
  embed's) is checked, and a used-up cap means the call is not made;
- after: one `SpendEntry` against the run, its agent, its embed and its surface, priced with genai-prices
  (an unpriced model is recorded at zero and marked partial, the demo model is free), and the run's own
  totals move by the same amounts in the same transaction, so a run's cost is what its organization was
  charged for it.

A chat-model call adds its tokens and one request to the run, like any request of the agent. An embedding
call adds its cost (and partial flag) to the run; its tokens stay on its ledger row (kind "embedding"),
because the run's token counts describe what went through the chat model.

The run row is read here, never taken from the model or the tool arguments: `deps.run_id` and
`deps.organization_id` are the server's.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async

logger = logging.getLogger(__name__)


def as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Meter:
    """Where one run's extra spend goes (resolved from the Run row when there is one)."""

    organization_id: str
    run_id: uuid.UUID | None
    agent_id: uuid.UUID | None
    embed_id: uuid.UUID | None
    surface: str


def meter_for(deps: Any) -> Meter:
    """Sync (ORM)."""
    from agents.models import Run

    run_id = as_uuid(deps.run_id)
    row = (Run.objects.filter(pk=run_id, organization_id=deps.organization_id)
           .values("agent_id", "embed_id", "surface").first() if run_id else None)
    if row is None:
        return Meter(organization_id=str(deps.organization_id), run_id=None, agent_id=as_uuid(deps.agent_id),
                     embed_id=None, surface=str(deps.surface or ""))
    return Meter(organization_id=str(deps.organization_id), run_id=run_id, agent_id=row["agent_id"],
                 embed_id=row["embed_id"], surface=row["surface"])


def exhausted_cap(meter: Meter, agent_budget: Decimal | None) -> Any:
    """The first used-up cap (agent, organization, embed) or None. Sync (ORM)."""
    from agenticos.models import Organization
    from governance.budgets import caps_for, first_exhausted

    organization = Organization.objects.get(pk=meter.organization_id)
    return first_exhausted(caps_for(organization=organization, agent_id=meter.agent_id, agent_budget=agent_budget,
                                    embed_id=meter.embed_id))


def record(meter: Meter, *, kind: str, model: str, input_tokens: int, output_tokens: int, cost: Decimal,
           partial: bool) -> None:
    """One ledger row and the run's totals (governance.budgets.record_spend). Sync (ORM)."""
    from governance.budgets import record_spend

    record_spend(organization_id=meter.organization_id, agent_id=meter.agent_id, run_id=meter.run_id,
                 embed_id=meter.embed_id, surface=meter.surface, kind=kind, model=model, input_tokens=input_tokens,
                 output_tokens=output_tokens, cost=cost, partial=partial)


def record_model_response(meter: Meter, model: Any, response: Any) -> None:
    """A chat-model response, priced like the runner prices the agent's own. Sync (ORM)."""
    from agents.providers.demo import DemoModel
    from governance.pricing import price

    cost, partial = price(response, free=isinstance(model, DemoModel))
    usage = response.usage
    record(meter, kind="model_request", model=response.model_name or str(getattr(model, "model_name", "")),
           input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0, cost=cost,
           partial=partial)


async def ask_model(deps: Any, model: Any, *, instructions: str, prompt: str,
                    agent_budget: Decimal | None) -> str | None:
    """One budget-checked, priced and recorded request on the run's own model; its text, or None when the
    request cannot be made (a cap is used up, the provider failed) — the caller then searches as written."""
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import ModelRequest, TextPart

    meter = await sync_to_async(meter_for)(deps)
    cap = await sync_to_async(exhausted_cap)(meter, agent_budget)
    if cap is not None:
        logger.info("extra model call skipped: %s is used up", cap.label)
        return None
    try:
        response = await model_request(model, [ModelRequest.user_text_prompt(prompt, instructions=instructions)])
    except Exception as exc:  # any provider failure: the search goes on as written
        logger.info("extra model call failed: %s", type(exc).__name__)
        return None
    await sync_to_async(record_model_response)(meter, model, response)
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
    return text or None
