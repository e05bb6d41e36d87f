"""`embed_budget_state`: the embed's own monthly cap and what runs through it spent this calendar month."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from embeds.services import embed_budget_state
from governance.models import SpendEntry
from tests import factories


def _spend(agent, embed_id, amount: str, when=None) -> None:
    SpendEntry.objects.create(
        organization_id=agent.organization_id, agent=agent, embed_id=embed_id, surface="embed",
        cost_usd=Decimal(amount), created_at=when or timezone.now(),
    )


def test_it_sums_this_months_spend_of_this_embed_only(agent):
    widget = factories.embed(agent, kind="widget", monthly_budget_usd=Decimal("5"))
    other = factories.embed(agent, kind="page")
    _spend(agent, widget.pk, "1.25")
    _spend(agent, widget.pk, "0.75")
    _spend(agent, other.pk, "9")
    last_month = timezone.now().replace(day=1) - dt.timedelta(days=2)
    _spend(agent, widget.pk, "100", when=last_month)
    assert embed_budget_state(widget.pk) == (Decimal("5"), Decimal("2.00"))


def test_an_embed_without_a_cap_reports_none(agent):
    page = factories.embed(agent, kind="page")
    assert embed_budget_state(page.pk) == (None, Decimal("0"))
