"""Every New agent template binds ask_user, on (spec: "Está activa por defecto en cada agent nuevo y en cada
plantilla, y el autor puede desactivarla"); each keeps its own capabilities besides."""

from __future__ import annotations

import pytest

from agents.models import Agent
from console.builder import AGENT_TEMPLATES
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("template_id", [t[0] for t in AGENT_TEMPLATES])
def test_every_template_starts_with_ask_user_on(client_as, org, builder, template_id):
    factories.model_profile(org)
    response = client_as(builder, org).post("/agents/new", {"name": f"From {template_id}", "template": template_id})
    assert response.status_code == 302

    agent = Agent.objects.get(organization=org, name=f"From {template_id}")
    bound = {b["id"]: b for b in agent.draft_spec["capabilities"]}
    assert bound.get("ask_user", {}).get("enabled") is True, sorted(bound)


def test_a_template_keeps_its_own_capabilities_beside_ask_user(client_as, org, builder):
    factories.model_profile(org)
    client_as(builder, org).post("/agents/new", {"name": "Numbers", "template": "analyst"})
    bound = {b["id"] for b in Agent.objects.get(organization=org, name="Numbers").draft_spec["capabilities"]}
    assert bound == {"code_execution", "charts", "ask_user"}


def test_a_viewer_cannot_create_from_a_template(client_as, org, viewer):
    client_as(viewer, org).post("/agents/new", {"name": "Nope", "template": "blank"})
    assert not Agent.objects.filter(organization=org).exists()
