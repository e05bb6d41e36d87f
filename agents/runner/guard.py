"""BudgetGuard: a pydantic-ai capability around every model request.

Before each request it checks every cap that meters the run (agent, organization, embed) and
refuses — naming the cap that bound — without calling the model. After each request it prices the
response (governance.pricing: genai-prices) and records the spend, so a run that fails later keeps what it spent.
Twenty runs racing a nearly spent cap overshoot by at most the requests already in flight.

A response that calls tools is recorded at once (tools may run for minutes, and a worker may die
meanwhile), in the statement that writes the run's checkpoint: a resumed run never pays for that step twice. A response without tool calls ends the run, so its spend is written in the run's closing
transaction instead of a transaction of its own; should the model be asked again after all (an answer
with nothing to act on, e.g. thinking only, is retried), the pending spend is written before that request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agenticos import metrics
from agents.run_handle import MeteredRequests
from agents.runner import checkpoint
from agents.runner.frames import frame
from governance import budgets, pricing
from governance.models import SpendEntry

if TYPE_CHECKING:
    from agents.runner.execute import RunExecution


@dataclass
class BudgetGuard(MeteredRequests):
    execution: RunExecution = field(repr=False)

    async def wrap_model_request(self, ctx, *, request_context, handler):
        ex = self.execution
        # The organization's cap is read from the row loaded when the run started.
        if budgets.may_bind(organization=ex.run.organization, agent_budget=ex.spec.budget.monthly_usd,
                            embed_id=ex.run.embed_id):
            await ex.db(self._check)
        elif ex.unrecorded_spend:
            await ex.db(ex.record_spend)
        await ex.reaching_model()
        await ex.emit(frame("model_request_start"))
        started = time.monotonic()
        response = await handler(request_context)
        entry = self._entry(response)
        ex.unrecorded_spend.append(entry)
        if response.usage.input_tokens:  # how full the window was: what this request carried, as billed
            ex.context_tokens = response.usage.input_tokens
        metrics.model_request(response, entry, started, surface=ex.run.surface)
        if response.tool_calls:
            # The step's checkpoint rides in the statement that records its spend (agents.runner.checkpoint).
            # pydantic-ai counts this request in the run's usage once the response is back from this hook.
            value = checkpoint.step_value(ex, ctx.messages, response, ctx.usage.requests + 1)
            await ex.db(ex.record_step, value)
        return response

    def _check(self) -> None:
        ex = self.execution
        ex.record_spend()
        run = ex.run
        caps = budgets.caps_for(
            organization=run.organization,
            agent_id=run.agent_id,
            agent_budget=ex.spec.budget.monthly_usd,
            embed_id=run.embed_id,
        )
        bound = budgets.first_exhausted(caps)
        if bound is not None:
            raise budgets.BudgetExceeded(bound)

    def _entry(self, response) -> SpendEntry:
        ex = self.execution
        run = ex.run
        cost, partial = pricing.price(response, free=ex.free_model)
        usage = response.usage
        return budgets.spend_entry(
            organization_id=run.organization_id, agent_id=run.agent_id, run_id=run.pk, embed_id=run.embed_id,
            surface=run.surface, kind="model_request", model=response.model_name or "",
            input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0, cost=cost, partial=partial,
        )
