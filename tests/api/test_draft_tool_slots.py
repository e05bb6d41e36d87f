"""The 25-slot tool budget binds when tools are assigned: a draft is refused past 25 on create and on save,
not only at publish (custom-tools spec: "El límite se aplica al asignar una herramienta")."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


def _tools(org, n: int) -> list[str]:
    return [str(factories.custom_tool(org, url="https://tools.example.com/x").pk) for _ in range(n)]


def test_creating_a_draft_with_26_custom_tools_is_refused_naming_the_total(org, builder, api_as):
    body = {"name": "Crowded", "spec": {"name": "Crowded", "instructions": "Be helpful.",
                                         "custom_tool_ids": _tools(org, 26)}}
    response = api_as(builder, org).post("/api/v1/agents", body, format="json")

    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert any(p["field"] == "spec.custom_tool_ids" and "26 of 25 tool slots" in p["message"]
               for p in error["details"]["problems"])
    assert not Agent.objects.filter(organization=org).exists()


def test_a_draft_with_25_custom_tools_is_created_and_a_26th_saved_later_is_refused(org, builder, api_as):
    ids = _tools(org, 26)
    client = api_as(builder, org)
    spec = {"name": "Full", "instructions": "Be helpful.", "custom_tool_ids": ids[:25]}
    created = client.post("/api/v1/agents", {"name": "Full", "spec": spec}, format="json")
    assert created.status_code == 201, created.content
    agent = Agent.objects.get(pk=created.json()["id"])

    refused = client.patch(f"/api/v1/agents/{agent.pk}", {"spec": {**spec, "custom_tool_ids": ids}}, format="json")

    assert refused.status_code == 422
    agent.refresh_from_db()
    assert len(agent.draft_spec["custom_tool_ids"]) == 25

