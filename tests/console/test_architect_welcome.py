"""The welcome interview on the console home page: offered once to a new organization's first builder, never to a
member or viewer, nor where agents exist; Start installs the Architect and opens the conversation with the
person's words as its first turn; Skip ends the offer for the whole organization."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agenticos.models import AuditEvent
from agents.models import Agent, Run
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def chat_model(org):
    return factories.model_profile(org, "openai", "gpt-4o-mini", label="Team GPT", api_key="sk-welcome-000000")


def chat_state(response) -> dict:
    import json
    import re

    match = re.search(r"<script id=\"chat-state\" type=\"application/json\">(.*?)</script>", response.content.decode(), re.S)
    return json.loads(match.group(1))


def welcomed(client) -> bool:
    return "data-welcome" in client.get(reverse("console:home")).content.decode()


def test_the_first_builder_of_a_new_organization_is_offered_the_interview(client_as, org, owner, builder, member,
                                                                          viewer, chat_model):
    assert welcomed(client_as(owner, org)) and welcomed(client_as(builder, org))
    assert not welcomed(client_as(member, org)) and not welcomed(client_as(viewer, org))


def test_without_a_model_the_card_asks_for_one_first(client_as, org, owner):
    page = client_as(owner, org).get(reverse("console:home")).content.decode()
    assert "data-welcome" in page and reverse("console:settings-models") in page
    assert "data-welcome-start" not in page


def test_an_organization_with_agents_is_not_offered_it(client_as, org, owner, chat_model, outsider, outsider_org):
    factories.published_agent(org, owner, name="Existing")
    assert not welcomed(client_as(owner, org))
    # The outsider's own new organization is theirs to welcome; starting there installs nothing here.
    assert welcomed(client_as(outsider, outsider_org))
    client_as(outsider, outsider_org).post(reverse("console:welcome-skip"))
    assert list(Agent.objects.filter(organization=org).values_list("slug", flat=True)) == ["existing"]


def test_start_installs_the_architect_and_opens_web_chat_which_sends_the_persons_words_once(client_as, org, owner,
                                                                                          chat_model):
    client = client_as(owner, org)
    response = client.post(reverse("console:welcome-start"), {"text": "An agent for our refunds"})
    architect = Agent.objects.get(organization=org, slug="architect")
    assert architect.versions.count() == 1 and architect.owner == owner
    assert response.status_code == 302 and response.url == f"{reverse('console:chat')}?agent={architect.pk}"
    assert not Run.objects.exists()  # the page sends the words, through the one web chat path
    assert chat_state(client.get(response.url))["first_message"] == "An agent for our refunds"
    assert chat_state(client.get(response.url))["first_message"] == ""  # once: a reload sends nothing
    assert not welcomed(client)
    # Once: a second start does not start another interview.
    assert client.post(reverse("console:welcome-start"), {"text": "again"}).url == reverse("console:home")
    assert chat_state(client.get(response.url))["first_message"] == ""


def test_a_chat_link_alone_never_sends_a_message(client_as, org, owner, chat_model):
    architect = factories.published_agent(org, owner, name="Architect")
    page = client_as(owner, org).get(f"{reverse('console:chat')}?agent={architect.pk}&text=spend+my+budget")
    assert chat_state(page)["first_message"] == ""


def test_skip_ends_the_offer_for_the_organization(client_as, org, owner, builder, chat_model):
    response = client_as(owner, org).post(reverse("console:welcome-skip"))
    assert response.status_code == 302 and response.url == reverse("console:home")
    assert AuditEvent.objects.filter(organization=org, action="architect.welcome.skipped").count() == 1
    # The Architect is there for later questions (an agent card asks it), and nobody is offered the interview.
    assert Agent.objects.filter(organization=org, slug="architect").exists()
    assert not welcomed(client_as(owner, org)) and not welcomed(client_as(builder, org))


def test_members_and_viewers_cannot_start_or_skip_it(client_as, org, member, viewer, chat_model):
    for person in (member, viewer):
        client = client_as(person, org)
        assert client.post(reverse("console:welcome-start"), {"text": "x"}).status_code == 403
        assert client.post(reverse("console:welcome-skip")).status_code == 403
    assert not Agent.objects.filter(organization=org).exists()
    assert not AuditEvent.objects.filter(action="architect.welcome.skipped").exists()


def test_an_agent_card_asks_the_architect_with_the_cards_idea(client_as, org, owner, member, chat_model):
    # A member before anyone installed it: New agent, as before; nothing installed on their behalf.
    response = client_as(member, org).post(reverse("console:architect-ask"), {"title": "Refund tracker"})
    assert response.url == reverse("console:agent-new") and not Agent.objects.exists()
    # An owner installs it by asking; then the member asks the same Architect.
    client_as(owner, org).post(reverse("console:architect-ask"), {"title": "Refund tracker"})
    architect = Agent.objects.get(organization=org, slug="architect")
    client = client_as(member, org)
    response = client.post(reverse("console:architect-ask"), {"title": "Refund tracker", "detail": "Weekly."})
    assert response.url == f"{reverse('console:chat')}?agent={architect.pk}"
    first = chat_state(client.get(response.url))["first_message"]
    assert first == "I would like an agent of my own: Refund tracker. Weekly."
    assert not Run.objects.exists()


def test_a_viewer_cannot_ask_and_an_outsider_reaches_only_their_own(client_as, org, owner, viewer, chat_model,
                                                                     outsider, outsider_org):
    client_as(owner, org).post(reverse("console:architect-ask"), {"title": "x"})
    assert client_as(viewer, org).post(reverse("console:architect-ask"), {"title": "x"}).status_code == 403
    # The outsider's organization has no model: New agent there, and this organization's Architect is untouched.
    response = client_as(outsider, outsider_org).post(reverse("console:architect-ask"), {"title": "x"})
    assert response.url == reverse("console:agent-new")
    assert list(Agent.objects.values_list("organization_id", flat=True)) == [org.pk]
