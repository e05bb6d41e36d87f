"""A binding's cost-footer threshold ("Decir lo que costó un turno": near_limit speaks once the budget or the
workspace passes a threshold, 80% by default): stored per binding through the API, refused out of range, and
honoured by the footer a channel reply carries."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from agents.models import Conversation
from channelbots.models import Binding
from channelbots.router import Turn
from governance.models import SpendEntry
from tests.channelbots.conftest import bind, slack_bot

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding(org, builder, agent):
    return bind(agent, slack_bot(org, builder), builder, org)


def footer_for(binding: Binding) -> str:
    """The footer of a turn through this binding, for a chat whose agent keeps no files (money only)."""
    binding = Binding.objects.select_related("bot__organization", "agent").get(pk=binding.pk)
    conversation = Conversation.objects.create(organization_id=binding.organization_id, agent=binding.agent,
                                               surface="slack")
    turn = Turn(incoming=None, bot=binding.bot, binding=binding, client=None)  # type: ignore[arg-type]
    session = SimpleNamespace(pk=None, conversation_id=conversation.pk)
    return turn.footer(session, {"cost_usd": "0.0100", "input_tokens": 10, "output_tokens": 5})  # type: ignore[arg-type]


def spend(org, usd: str) -> None:
    org.monthly_budget_usd = Decimal("10")
    org.save(update_fields=["monthly_budget_usd"])
    SpendEntry.objects.create(organization=org, cost_usd=Decimal(usd))


def test_a_new_binding_speaks_at_80_percent_and_says_so_in_the_api(api_as, org, builder, agent, binding):
    listed = api_as(builder, org).get(f"/api/v1/agents/{agent.pk}/bindings").json()["results"]
    assert listed[0]["footer_threshold_percent"] == 80
    spend(org, "6")  # 60% of the month
    assert footer_for(binding) == ""
    SpendEntry.objects.create(organization=org, cost_usd=Decimal("2.5"))  # 85%
    assert "85% of this month's budget is spent" in footer_for(binding)


def test_a_lower_threshold_set_through_the_api_makes_the_footer_speak_earlier(api_as, org, builder, agent, binding):
    response = api_as(builder, org).patch(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}",
                                          {"footer_threshold_percent": 50}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["footer_threshold_percent"] == 50
    spend(org, "6")
    footer = footer_for(binding)
    assert footer.startswith("Cost of this answer: $0.0100 · 15 tokens") and "60% of this month's budget" in footer


@pytest.mark.parametrize("value", [0, 101, "50", True, None, 12.5])
def test_a_threshold_out_of_range_or_not_a_whole_number_is_refused_and_nothing_changes(
        api_as, org, builder, agent, binding, value):
    response = api_as(builder, org).patch(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}",
                                          {"footer_threshold_percent": value}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "footer_threshold_percent"
    assert Binding.objects.get(pk=binding.pk).footer_threshold_percent == 80


def test_a_viewer_cannot_change_the_threshold_and_an_outsider_does_not_find_the_binding(
        api_as, org, viewer, outsider, outsider_org, agent, binding):
    assert api_as(viewer, org).patch(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}",
                                     {"footer_threshold_percent": 10}, format="json").status_code == 403
    assert api_as(outsider, outsider_org).patch(f"/api/v1/agents/{agent.pk}/bindings/{binding.pk}",
                                                {"footer_threshold_percent": 10}, format="json").status_code == 404
    assert Binding.objects.get(pk=binding.pk).footer_threshold_percent == 80


def test_the_binding_page_shows_the_threshold_field_with_its_value(client, org, builder, agent, binding):
    from agenticos.tenancy import SESSION_KEY

    Binding.objects.filter(pk=binding.pk).update(footer_threshold_percent=65)
    client.force_login(builder)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    page = client.get(f"/agents/{agent.pk}/bindings/{binding.pk}/").content.decode()
    assert 'name="footer_threshold_percent"' in page and 'value="65"' in page
    assert "passes 65%" in page


def test_every_reply_says_the_months_share_of_the_budget_beside_the_turns_cost(org, binding):
    """"tokens, coste, cuánto del mes se ha ido": an every-reply footer carries the month, far from any limit."""
    Binding.objects.filter(pk=binding.pk).update(footer_mode="every_reply")
    spend(org, "1.5")  # 15% of 10
    assert footer_for(binding) == "Cost of this answer: $0.0100 · 15 tokens · 15% of this month's budget spent"


def test_without_a_monthly_budget_an_every_reply_footer_names_no_share(org, binding):
    Binding.objects.filter(pk=binding.pk).update(footer_mode="every_reply")
    type(org).objects.filter(pk=org.pk).update(monthly_budget_usd=None)
    SpendEntry.objects.create(organization=org, cost_usd=Decimal("1.5"))
    assert footer_for(binding) == "Cost of this answer: $0.0100 · 15 tokens"
