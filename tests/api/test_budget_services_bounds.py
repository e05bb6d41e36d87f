"""The embed's and the organization's monthly caps are bounded in their services, whatever calls them: NaN and
Infinity are refused (comparing a NaN Decimal used to raise), and so is an amount the column cannot hold."""

from __future__ import annotations

import pytest

from agenticos import services as kernel
from agenticos.errors import Invalid
from agenticos.models import Organization
from embeds import services as embeds
from embeds.models import Embed
from tests import factories
from tests.api.conftest import actor_of

pytestmark = pytest.mark.django_db

UNSANE = ["NaN", "Infinity", "-Infinity", "1e12", "1E+400", "-1"]


@pytest.mark.parametrize("amount", UNSANE)
def test_an_organization_cap_that_is_not_a_sane_amount_is_refused_and_the_old_one_kept(org, owner, amount):
    kernel.set_organization_budget(actor=actor_of(owner, org), monthly_usd="50")
    with pytest.raises(Invalid):
        kernel.set_organization_budget(actor=actor_of(owner, org), monthly_usd=amount)
    assert str(Organization.objects.get(pk=org.pk).monthly_budget_usd) == "50.0000"


@pytest.mark.parametrize("amount", UNSANE)
def test_an_embed_cap_that_is_not_a_sane_amount_is_refused_and_creates_nothing(org, owner, amount):
    agent = factories.published_agent(org, owner, name="Shop Helper")
    with pytest.raises(Invalid) as refused:
        embeds.create_embed(actor=actor_of(owner, org), agent=agent, data={
            "kind": "page", "monthly_budget_usd": amount})
    assert refused.value.details == {"field": "monthly_budget_usd"}
    assert not Embed.objects.exists()


def test_the_largest_cap_the_column_holds_is_kept(org, owner):
    kernel.set_organization_budget(actor=actor_of(owner, org), monthly_usd="99999999.9999")
    assert str(Organization.objects.get(pk=org.pk).monthly_budget_usd) == "99999999.9999"
