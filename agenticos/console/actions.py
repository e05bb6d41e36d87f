"""Two state changes the kernel services do not offer yet (see the issue report: they belong in
agenticos/services.py). Same shape as a service: keyword-only actor, permission check, one transaction,
audit row inside it."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils.translation import gettext as _

from agenticos import audit
from agenticos.errors import Invalid
from agenticos.models import Organization
from agenticos.tenancy import Actor


def set_organization_budget(*, actor: Actor, monthly_usd: str) -> Organization:
    actor.require("budgets:manage")
    text = (monthly_usd or "").strip()
    try:
        value = Decimal(text) if text else None
    except InvalidOperation:
        value = Decimal(-1)
    if value is not None and (value < 0 or not value.is_finite()):
        raise Invalid(_("Enter an amount of zero or more, or leave it empty for no cap."),
                      details={"problems": [{"field": "monthly_usd", "message": _("Must be zero or more.")}]})
    with transaction.atomic():
        org = Organization.objects.select_for_update().get(pk=actor.organization.pk)
        before = org.monthly_budget_usd
        org.monthly_budget_usd = value
        org.save(update_fields=["monthly_budget_usd"])
        audit.record(actor=actor.user, organization=org, action="organization.budget_changed", target=org,
                     details={"from": None if before is None else str(before),
                              "to": None if value is None else str(value)})
    actor.organization.monthly_budget_usd = value
    return org


def update_profile(*, actor: Actor, display_name: str) -> None:
    """A person edits their own display name (no organization permission needed: it is their account)."""
    user = actor.user
    if user is None:
        return
    with transaction.atomic():
        user.display_name = (display_name or "").strip()[:150]
        user.save(update_fields=["display_name"])
        audit.record(actor=user, organization=actor.organization, action="user.profile_updated", target=user,
                     target_name=user.email)
