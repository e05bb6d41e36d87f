"""An agent's starter prompts (issue 45 §7): a field in the Builder (one per line, up to six, saved into the draft),
offered on an empty web chat once published — the chat's state carries the production version's, the Builder's
test chat the draft's — and refused past six with the draft unchanged."""

from __future__ import annotations

import json
import re

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "clock"}])


def basics(agent, **fields):
    data = {"name": agent.name, "instructions": "Be brief.", "model_profile_id": agent.draft_spec["model_profile_id"],
            "budget": "", "temperature": "", "top_p": "", "max_tokens": "", "timeout_secs": "", "max_steps": "20"}
    return {**data, **fields}


def chat_state(html: str) -> dict:
    return json.loads(re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', html, re.S).group(1))


def test_starter_prompts_are_saved_from_the_builder_and_offered_from_the_version_people_chat_with(client_as, org, builder, member, agent):
    client = client_as(builder, org)
    response = client.post(f"/agents/{agent.pk}/basics",
                           basics(agent, starter_prompts="Summarize my week\n\n  Draft an email  \n"))
    assert response.status_code == 302
    assert Agent.objects.get(pk=agent.pk).draft_spec["starter_prompts"] == ["Summarize my week", "Draft an email"]
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert "Summarize my week\nDraft an email</textarea>" in page
    # The test chat tries the draft's; people's chat shows the published version's, which has none yet.
    assert chat_state(page)["agents"][0]["starter_prompts"] == ["Summarize my week", "Draft an email"]
    [listed] = chat_state(client_as(member, org).get("/chat/").content.decode())["agents"]
    assert listed["starter_prompts"] == []  # production runs v1, which has none

    # A version in production with starter prompts offers them.
    other = factories.published_agent(org, builder, name="Other", starter_prompts=["Plan my day"])
    agents = {a["id"]: a for a in chat_state(client_as(member, org).get("/chat/").content.decode())["agents"]}
    assert agents[str(other.pk)]["starter_prompts"] == ["Plan my day"]


def test_more_than_six_are_refused_and_the_draft_is_unchanged(client_as, org, builder, agent):
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = client_as(builder, org).post(f"/agents/{agent.pk}/basics",
                                            basics(agent, starter_prompts="\n".join(f"Prompt {i}" for i in range(7))))
    assert response.status_code == 422
    assert "Starter prompts" in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_a_form_without_the_field_keeps_the_drafts(client_as, org, builder, agent):
    client = client_as(builder, org)
    client.post(f"/agents/{agent.pk}/basics", basics(agent, starter_prompts="Hello"))
    client.post(f"/agents/{agent.pk}/basics", basics(agent))
    assert Agent.objects.get(pk=agent.pk).draft_spec["starter_prompts"] == ["Hello"]
