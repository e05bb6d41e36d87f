"""POST /api/v1/memory/agents/{agent_id}/clear: one agent's memory of everyone, for its editors; the same
service as the Toolbox's action (tests/console/test_clear_agent_memory.py has the fixtures)."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from knowledge.models import MemoryNote
from tests import factories
from tests.console.test_clear_agent_memory import _deletes, mem0, world  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def _url(agent) -> str:
    return f"/api/v1/memory/agents/{agent.pk}/clear"


def test_an_editor_clears_the_agents_memory_through_the_api(api_as, org, owner, world, mem0):  # noqa: F811
    response = api_as(owner, org).post(_url(world["agent"]), {}, format="json")
    assert response.status_code == 200
    assert response.json() == {"notes_deleted": 3, "mem0_spaces_cleared": 2}
    assert not MemoryNote.objects.filter(agent=world["agent"]).exists()
    assert AuditEvent.objects.filter(action="memory.clear_agent").count() == 1


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_without_edit_access_it_is_403_and_nothing_is_cleared(api_as, org, world, mem0, role):  # noqa: F811
    response = api_as(factories.member(org, role), org).post(_url(world["agent"]), {}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"]
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3 and mem0.requests == []


def test_another_organizations_agent_is_404_and_untouched(api_as, org, outsider_org, outsider, world, mem0):  # noqa: F811
    response = api_as(outsider, outsider_org).post(_url(world["agent"]), {}, format="json")
    assert response.status_code == 404
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3 and mem0.requests == []
    # Naming the agent's own organization does not help an outsider either.
    assert api_as(outsider, org).post(_url(world["agent"]), {}, format="json").status_code == 404


def test_a_mem0_failure_is_an_error_envelope_and_keeps_the_notes(api_as, org, owner, world, mem0):  # noqa: F811
    mem0.partial = True
    response = api_as(owner, org).post(_url(world["agent"]), {}, format="json")
    assert response.status_code >= 400
    body = response.json()["error"]
    assert body["code"] == "mem0_unavailable" and mem0.api_key not in response.content.decode()
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3 and _deletes(mem0) == []
