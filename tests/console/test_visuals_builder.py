"""The Builder binds Charts when Visuals is switched on (Capability.binds_with, console/builder.py):
a number to look at is create_chart's, not a drawing's. Only what is not bound at all: Charts the author switched off
stays off; a viewer or an outsider binds nothing."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(org, builder):
    return factories.published_agent(org, builder, name="Explainer", capabilities=[{"id": "clock"}])


def _bindings(agent) -> dict[str, bool]:
    agent.refresh_from_db()
    return {b["id"]: b.get("enabled", True) for b in agent.draft_spec["capabilities"]}


def test_switching_visuals_on_in_the_builder_binds_charts_with_it(client_as, org, builder, draft):
    client = client_as(builder, org)
    response = client.post(f"/agents/{draft.pk}/toolbox/visuals", {"enabled": "on"},
                           headers={"Accept": "application/json"})
    assert response.json()["also_bound"] == ["charts"]
    assert _bindings(draft) == {"clock": True, "visuals": True, "charts": True}
    # Saved again (already on), nothing more is bound.
    assert client.post(f"/agents/{draft.pk}/toolbox/visuals", {"enabled": "on"},
                       headers={"Accept": "application/json"}).json()["also_bound"] == []


def test_charts_the_author_switched_off_stays_off_when_visuals_is_switched_on(client_as, org, builder, draft):
    client = client_as(builder, org)
    client.post(f"/agents/{draft.pk}/toolbox/charts", {})  # not bound: an off switch binds nothing
    client.post(f"/agents/{draft.pk}/toolbox/charts", {"enabled": "on"})
    client.post(f"/agents/{draft.pk}/toolbox/charts", {})
    assert _bindings(draft)["charts"] is False
    response = client.post(f"/agents/{draft.pk}/toolbox/visuals", {"enabled": "on"})
    assert response.status_code == 302
    assert _bindings(draft) == {"clock": True, "charts": False, "visuals": True}


def test_a_viewer_or_an_outsider_switching_visuals_on_binds_nothing(client_as, org, viewer, draft, outsider, outsider_org):
    assert client_as(viewer, org).post(f"/agents/{draft.pk}/toolbox/visuals", {"enabled": "on"}).status_code == 403
    assert client_as(outsider, outsider_org).post(f"/agents/{draft.pk}/toolbox/visuals",
                                                  {"enabled": "on"}).status_code == 404
    assert _bindings(draft) == {"clock": True}
    assert Agent.objects.filter(organization=outsider_org).count() == 0
