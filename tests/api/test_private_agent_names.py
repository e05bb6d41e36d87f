"""Routes that are not under `agents/{id}/` but still name agents must name only those the caller can see.

`GET memory/` lists, under `not_listed_mem0_agents`, the agents binding mem0 the caller can see
(`governance.grants.visible_agents`), never a private agent's name to a member or viewer without access.
"""

from __future__ import annotations

from django.urls import reverse

from agents.models import Agent
from tests.api.conftest import make_agent

MEM0 = {"id": "memory_mem0", "config": {"base_url": "https://mem0.example.com"}}


def _binds_mem0(agent: Agent) -> None:
    Agent.objects.filter(pk=agent.pk).update(draft_spec={**agent.draft_spec, "capabilities": [MEM0]})


def test_my_memory_names_no_private_agent_the_caller_cannot_see(org, owner, member, api_as):
    hidden = make_agent(owner, org, name="Project Nightjar", slug="nightjar", visibility="private")
    _binds_mem0(hidden)
    shown = make_agent(owner, org, name="Helpdesk", slug="helpdesk")
    _binds_mem0(shown)
    response = api_as(member, org).get(reverse("api-memory"))
    assert response.status_code == 200
    assert response.json()["not_listed_mem0_agents"] == ["Helpdesk"]
    assert "Nightjar" not in response.content.decode()
