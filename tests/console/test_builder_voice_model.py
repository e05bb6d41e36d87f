"""The Builder's Voice card chooses the realtime model a call uses (the spec's `realtime_profile_id`): it lists
only the organization's realtime-kind profiles, saves the choice into the draft, and refuses at the field any
other id — a chat profile's, another organization's, an unknown one — leaving the draft as it was. Viewers,
members and outsiders cannot change it."""

from __future__ import annotations

import pytest

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import Agent, ModelProfile
from capabilities import spec_checks
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "clock"}])


@pytest.fixture
def voice(org):
    return factories.model_profile(org, "openai", "gpt-realtime", label="Voice desk", api_key="sk-voice",
                                   kind=ModelProfile.Kind.REALTIME)


def test_the_picker_lists_only_realtime_profiles_and_saves_the_choice(client_as, org, builder, agent, voice,
                                                                     outsider_org):
    chat = factories.model_profile(org, "openai", "gpt-4o", label="Chatty", api_key="sk-chat")
    foreign = factories.model_profile(outsider_org, "openai", "gpt-realtime", label="Foreign voice",
                                      api_key="sk-x", kind=ModelProfile.Kind.REALTIME)
    client = client_as(builder, org)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    picker = page[page.index('id="v-realtime"'):page.index("</select>", page.index('id="v-realtime"'))]
    assert "first: Voice desk</option>" in picker and "Voice desk (gpt-realtime)" in picker
    assert str(chat.pk) not in picker and "Chatty" not in picker
    assert str(foreign.pk) not in picker and "Foreign voice" not in picker

    response = client.post(f"/agents/{agent.pk}/voice", {"realtime_profile_id": str(voice.pk)})
    assert response.status_code == 302 and response["Location"].endswith("#voice")
    assert Agent.objects.get(pk=agent.pk).draft_spec["realtime_profile_id"] == str(voice.pk)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert f'<option value="{voice.pk}" selected>Voice desk (gpt-realtime)</option>' in page

    client.post(f"/agents/{agent.pk}/voice", {"realtime_profile_id": ""})  # back to the organization's first
    assert Agent.objects.get(pk=agent.pk).draft_spec.get("realtime_profile_id") is None


def test_without_a_realtime_profile_the_card_says_nobody_can_call(client_as, org, builder, agent):
    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    assert "None — no voice calls" in page
    assert "nobody can call this agent" in page
    assert "data-save-voice" not in page


@pytest.mark.parametrize("which", ["chat", "foreign", "unknown", "garbage"])
def test_anything_but_this_organizations_realtime_profile_is_refused_at_its_field(
        client_as, org, builder, agent, voice, outsider_org, which):
    ids = {
        "chat": lambda: str(factories.model_profile(org, "openai", "gpt-4o", label="Chatty", api_key="k").pk),
        "foreign": lambda: str(factories.model_profile(outsider_org, "openai", "gpt-realtime", api_key="k",
                                                       kind=ModelProfile.Kind.REALTIME).pk),
        "unknown": lambda: "0b8e4c1e-9d0a-4d55-9a55-3f2f1b7c0d11",
        "garbage": lambda: "not-an-id",
    }
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = client_as(builder, org).post(f"/agents/{agent.pk}/voice", {"realtime_profile_id": ids[which]()})
    html = response.content.decode()
    assert response.status_code == 422
    assert 'data-field-error="realtime_profile_id"' in html
    assert html.count("Choose one of this organization&#x27;s realtime voice models, or none.") >= 1
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_the_publish_check_refuses_a_chat_profile_named_for_calls_without_showing_its_id(org, builder, agent):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=builder))
    chat = factories.model_profile(org, "openai", "gpt-4o", label="Chatty", api_key="k")
    spec = {**agent.draft_spec, "realtime_profile_id": str(chat.pk)}
    problems = [p for p in spec_checks.publish_problems(actor, spec, agent=agent) if p["field"] == "realtime_profile_id"]
    assert len(problems) == 1 and str(chat.pk) not in problems[0]["message"]
    agent_services.update_agent(actor=actor, agent=agent, spec=spec)  # a draft may hold it (YAML, API)…
    with pytest.raises(Invalid, match="cannot be published") as refused:  # …but it never publishes
        agent_services.publish_agent(actor=actor, agent=Agent.objects.get(pk=agent.pk), note="voice")
    assert any(p["field"] == "realtime_profile_id" for p in refused.value.details["problems"])
    assert Agent.objects.get(pk=agent.pk).versions.count() == 1


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_weaker_roles_cannot_change_the_voice_model(client_as, org, builder, agent, voice, role):
    person = factories.member(org, role)
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = client_as(person, org).post(f"/agents/{agent.pk}/voice", {"realtime_profile_id": str(voice.pk)})
    assert response.status_code == 403
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_an_outsider_cannot_reach_the_voice_form(client_as, outsider_org, outsider, agent, voice):
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = client_as(outsider, outsider_org).post(f"/agents/{agent.pk}/voice",
                                                      {"realtime_profile_id": str(voice.pk)})
    assert response.status_code == 404
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_a_reload_of_the_voice_address_goes_back_to_the_builder(client_as, org, builder, agent):
    response = client_as(builder, org).get(f"/agents/{agent.pk}/voice")
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
