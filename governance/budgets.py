"""Budgets: what a run may still spend, checked before every model request, recorded after it.

Three caps meter a run: the agent's monthly cap (that agent's runs this month), the organization's
monthly cap (every run of the organization) and, for embed runs, the embed's own monthly cap. The
ledger is `SpendEntry`; a cap binds when this month's spend has reached it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db.models import Q, Sum
from django.utils import timezone

from agenticos.queries import Insert, Update, write_together
from governance.models import SpendEntry


def month_start(now: datetime | None = None) -> datetime:
    now = now or timezone.now()
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _spent(**filters) -> Decimal:
    total = SpendEntry.objects.filter(created_at__gte=month_start(), **filters).aggregate(t=Sum("cost_usd"))["t"]
    return total or Decimal("0")


def organization_spent(organization_id) -> Decimal:
    return _spent(organization_id=organization_id)


def agent_spent(agent_id) -> Decimal:
    return _spent(agent_id=agent_id)


def embed_spent(embed_id) -> Decimal:
    return _spent(embed_id=embed_id)


@dataclass(frozen=True)
class Cap:
    label: str  # "the agent's monthly budget"
    limit: Decimal
    spent: Decimal

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit

    @property
    def fraction(self) -> float:
        return float(self.spent / self.limit) if self.limit else 1.0


class BudgetExceeded(Exception):
    def __init__(self, cap: Cap):
        self.cap = cap
        super().__init__(
            f"This run was stopped before calling the model: {cap.label} of ${cap.limit:.2f} is used up "
            f"(${cap.spent:.2f} spent this month)."
        )


def may_bind(*, organization, agent_budget: Decimal | None, embed_id=None) -> bool:
    """Whether any cap can meter this spend: without an agent cap, an organization cap or an embed (which
    may carry its own) there is nothing to ask the ledger. No query: the organization is the loaded row."""
    return agent_budget is not None or organization.monthly_budget_usd is not None or embed_id is not None


def caps_for(*, organization, agent_id, agent_budget: Decimal | None, embed_id=None) -> list[Cap]:
    """Every cap that meters a run, with this month's spend against each — in one query, none when no cap
    can bind."""
    if not may_bind(organization=organization, agent_budget=agent_budget, embed_id=embed_id):
        return []
    embed_cap = _embed_cap(embed_id) if embed_id is not None else None
    zero = Decimal("0")
    # With no embed the filter matches nothing (embed_id IS NULL is never an embed's spend).
    sums = SpendEntry.objects.filter(organization_id=organization.pk, created_at__gte=month_start()).aggregate(
        org=Sum("cost_usd"),
        agent=Sum("cost_usd", filter=Q(agent_id=agent_id)),
        embed=Sum("cost_usd", filter=Q(embed_id=embed_id) if embed_id is not None else Q(pk__in=[])),
    )
    caps: list[Cap] = []
    if agent_budget is not None:
        caps.append(Cap("the agent's monthly budget", Decimal(agent_budget), sums["agent"] or zero))
    if organization.monthly_budget_usd is not None:
        caps.append(Cap("the organization's monthly budget", organization.monthly_budget_usd, sums["org"] or zero))
    if embed_cap is not None:
        caps.append(Cap("this embed's monthly budget", embed_cap, sums["embed"] or zero))
    return caps


def _embed_cap(embed_id) -> Decimal | None:
    """The embed's own monthly cap. By label: governance sits below the surfaces and imports none of them (a
    missing app fails loudly here — LookupError — never skips the cap)."""
    embed = apps.get_model("embeds", "Embed")
    return embed.objects.filter(pk=embed_id).values_list("monthly_budget_usd", flat=True).first()


def first_exhausted(caps: list[Cap]) -> Cap | None:
    for cap in caps:
        if cap.exhausted:
            return cap
    return None


def spend_entry(*, organization_id: Any, agent_id: Any, run_id: Any, embed_id: Any, surface: str, kind: str,
                model: str, input_tokens: int, output_tokens: int, cost: Decimal, partial: bool) -> SpendEntry:
    """One ledger row, not written yet (`record_spend` writes one; `ledger_writes` hands out the writes for several)."""
    return SpendEntry(
        organization_id=organization_id, agent_id=agent_id, run_id=run_id, embed_id=embed_id, surface=surface,
        kind=kind, model=model[:200], input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost,
        is_partial=partial,
    )


def record_spend(**charge: Any) -> None:
    """One ledger row (the `spend_entry` fields) and, for a run, its totals, in one statement. A model
    request adds tokens and a request; any other spend (an embedding) adds only its cost. Sync (ORM)."""
    from agents.models import Run

    entry = spend_entry(**charge)
    inserts, totals = ledger_writes([entry])
    if entry.run_id is not None:
        write_together(*inserts, Update(Run.objects.filter(pk=entry.run_id, organization_id=entry.organization_id),
                                        totals))
    else:
        write_together(*inserts)


def ledger_writes(entries: list[SpendEntry]) -> tuple[list[Insert], dict[str, Any]]:
    """The insert of ledger rows of one run, and the run-row update that adds them to the run's totals —
    for the caller to carry out in one statement with its own writes (`write_together`): the runner ends a
    run and adds its last response's spend in one update."""
    if not entries:
        return [], {}
    return [Insert(entries)], _run_totals(entries)


def _run_totals(entries: list[SpendEntry]) -> dict[str, Any]:
    """The run-row update that adds these ledger rows to the run's totals: cost always, tokens and a
    request for each model request, `cost_is_partial` once any of them was unpriced."""
    from django.db.models import F

    updates: dict[str, Any] = {"cost_usd": F("cost_usd") + sum((e.cost_usd for e in entries), Decimal("0"))}
    requests = [e for e in entries if e.kind == "model_request"]
    if requests:
        updates.update(input_tokens=F("input_tokens") + sum(e.input_tokens for e in requests),
                       output_tokens=F("output_tokens") + sum(e.output_tokens for e in requests),
                       requests=F("requests") + len(requests))
    if any(e.is_partial for e in entries):
        updates["cost_is_partial"] = True
    return updates
