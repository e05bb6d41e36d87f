"""Asking the budget with a price known before the call (speech by the character, video by the second).

`governance.metered.check` answers "is a cap already used up?", which is the whole question for a call whose
cost is only known afterwards (an image). Speech and video are sold at a rate the catalog knows, so the spec
asks more: a clip that would take the run past a cap is refused before it is made. `check_price` is the same
walk over the same caps (`budgets.caps_for`) with the clip's price added; nothing is reserved, so each call
asks again.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used: a capability module is imported before the apps are ready
    from governance.budgets import BudgetExceeded
    from governance.metered import Meter


def check_price(meter: Meter, price: Decimal) -> None:
    """Raise `budgets.BudgetExceeded` naming the first cap that `price` would take past its limit (or that is
    already used up). No query when no cap can bind. Sync (ORM)."""
    from agenticos.models import Organization
    from governance import budgets

    organization = Organization.objects.get(pk=meter.organization_id)
    if not budgets.may_bind(organization=organization, agent_budget=meter.agent_budget, embed_id=meter.embed_id):
        return
    caps = budgets.caps_for(organization=organization, agent_id=meter.agent_id, agent_budget=meter.agent_budget,
                            embed_id=meter.embed_id)
    for cap in caps:
        if cap.exhausted or cap.spent + price > cap.limit:
            raise budgets.BudgetExceeded(cap)


def refusal(exc: BudgetExceeded, what: str, price: Decimal) -> str:
    """The sentence a tool returns for a refused clip: which cap, its limit, what is spent and what this would
    have cost."""
    cap = exc.cap
    label = cap.label[:1].upper() + cap.label[1:]
    left = max(cap.limit - cap.spent, Decimal("0"))
    return (f"{label} of ${cap.limit:.2f} does not cover this {what}: ${left:.4f} is left this month and it "
            f"would cost ${price:.4f}. Nothing was made and nothing was spent.")
