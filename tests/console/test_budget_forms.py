"""The console's two budget forms — the organization's cap (Settings → Budget) and an agent's cap (Builder →
Basics) — answer an amount that is no amount (NaN, Infinity) or more than the column holds (1e308) with a
form error at the field, never a 500, and change nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agenticos.models import AuditEvent, Organization
from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db

NOT_AMOUNTS = ["1e308", "1E+400", "NaN", "nan", "sNaN", "Infinity", "-Infinity", "inf", "100000000", "-1", "abc",
               "0.00001"]


def _field_error(response) -> str:
    page = response.content.decode()
    assert 'class="field-error"' in page, page[-2000:]
    return page.split('class="field-error"', 1)[1].split("</p>", 1)[0]


@pytest.mark.parametrize("amount", NOT_AMOUNTS)
def test_the_organization_budget_form_refuses_a_non_amount_at_its_field(client_as, org, owner, amount):
    Organization.objects.filter(pk=org.pk).update(monthly_budget_usd=Decimal("25"))
    response = client_as(owner, org).post("/settings/budget/", {"monthly_usd": amount})
    assert response.status_code == 422
    assert _field_error(response)
    assert Organization.objects.get(pk=org.pk).monthly_budget_usd == Decimal("25")
    assert not AuditEvent.objects.filter(action="organization.budget_changed").exists()


@pytest.mark.parametrize("amount,stored", [("0", Decimal("0")), ("12.5", Decimal("12.5")),
                                           ("99999999.9999", Decimal("99999999.9999")), ("", None)])
def test_the_organization_budget_form_keeps_an_ordinary_amount_or_no_cap(client_as, org, owner, amount, stored):
    response = client_as(owner, org).post("/settings/budget/", {"monthly_usd": amount})
    assert response.status_code == 302
    assert Organization.objects.get(pk=org.pk).monthly_budget_usd == stored


def test_a_viewer_posting_a_non_amount_is_refused_for_their_role_not_for_the_amount(client_as, org, viewer):
    assert client_as(viewer, org).post("/settings/budget/", {"monthly_usd": "NaN"}).status_code == 403


def test_an_outsider_cannot_set_this_organizations_budget(client_as, org, outsider, outsider_org):
    before = Organization.objects.get(pk=org.pk).monthly_budget_usd
    client_as(outsider, outsider_org).post("/settings/budget/", {"monthly_usd": "5"})
    assert Organization.objects.get(pk=org.pk).monthly_budget_usd == before


@pytest.mark.parametrize("amount", ["1e308", "1E+400", "NaN", "Infinity", "-Infinity", "100000000", "-1"])
def test_the_agent_budget_in_the_builder_is_a_form_error_not_a_500(client_as, org, builder, amount):
    agent = factories.published_agent(org, builder, name="Capped", budget={"monthly_usd": "5"})
    response = client_as(builder, org).post(f"/agents/{agent.pk}/basics", {
        "name": "Capped", "instructions": "Be brief.", "budget": amount})
    assert response.status_code == 422
    assert "budget" in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).draft_spec["budget"]["monthly_usd"] == "5"
