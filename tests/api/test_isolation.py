"""Tenant isolation and role checks for every endpoint of the platform API."""

from __future__ import annotations

import pytest

from agenticos import services as kernel
from agenticos.models import Membership
from agents import services as agents
from tests import factories
from tests.api.conftest import actor_of, make_agent


@pytest.fixture
def world(org, owner, viewer, demo_profile):
    """One of everything in `org`, owned by `owner`."""
    actor = actor_of(owner, org)
    agent = make_agent(owner, org, name="Shared", slug="shared", profile=demo_profile)
    agents.publish_agent(actor=actor, agent=agent)
    secret = kernel.create_secret(actor=actor, name="openai", value="sk-isolation-plaintext-1234")
    key, _raw = kernel.create_api_key(actor=actor, name="ci")
    invitation, _token = kernel.invite_member(actor=actor, email="new@example.com", role="member")
    colleague = factories.member(org, "builder")
    return {
        "agent": agent.pk,
        "profile": demo_profile.pk,
        "secret": secret.pk,
        "key": key.pk,
        "invitation": invitation.pk,
        "member": Membership.objects.get(organization=org, user=colleague).pk,
        "user": colleague.pk,
        "yaml": agents.export_agent_yaml(actor=actor, agent=agent),
    }


# (method, path, body) — body values "{name}" are filled from `world`.
OBJECT_ENDPOINTS = [
    ("get", "agents/{agent}", None),
    ("patch", "agents/{agent}", {"name": "Renamed"}),
    ("delete", "agents/{agent}", None),
    ("post", "agents/{agent}/publish", {}),
    ("get", "agents/{agent}/versions", None),
    ("get", "agents/{agent}/versions/1", None),
    ("get", "agents/{agent}/diff?from=1&to=draft", None),
    ("get", "agents/{agent}/environments", None),
    ("post", "agents/{agent}/environments/production/promote", {"version": 1}),
    ("get", "agents/{agent}/export", None),
    ("get", "agents/{agent}/grants", None),
    ("post", "agents/{agent}/grants", {"user_id": "{user}", "level": "view"}),
    ("delete", "agents/{agent}/grants/{user}", None),
    ("post", "agents/import", {"yaml": "{yaml}", "agent_id": "{agent}"}),
    ("get", "model-profiles/{profile}", None),
    ("patch", "model-profiles/{profile}", {"model": "demo-2"}),
    ("delete", "model-profiles/{profile}", None),
    ("get", "secrets/{secret}", None),
    ("post", "secrets/{secret}/rotate", {"value": "new-value-123456"}),
    ("delete", "secrets/{secret}", None),
    ("patch", "members/{member}", {"role": "viewer"}),
    ("delete", "members/{member}", None),
    ("delete", "api-keys/{key}", None),
    ("delete", "invitations/{invitation}", None),
]

LIST_ENDPOINTS = [
    ("get", "agents", None),
    ("post", "agents", {"name": "New"}),
    ("get", "model-profiles", None),
    ("post", "model-profiles", {"label": "x", "provider": "demo", "model": "demo"}),
    ("get", "secrets", None),
    ("post", "secrets", {"name": "s", "value": "v-1234567890"}),
    ("get", "members", None),
    ("get", "invitations", None),
    ("post", "invitations", {"email": "someone@example.com", "role": "member"}),
    ("get", "api-keys", None),
    ("post", "api-keys", {"name": "k"}),
]

# Writes a viewer may not make (reads are open to every role).
VIEWER_FORBIDDEN = [e for e in OBJECT_ENDPOINTS if e[0] != "get"] + [
    ("get", "invitations", None),
    ("get", "api-keys", None),
] + [e for e in LIST_ENDPOINTS if e[0] == "post"]


def _fill(value, world):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return str(world[value[1:-1]])
    if isinstance(value, dict):
        return {k: _fill(v, world) for k, v in value.items()}
    return value


def _call(client, method, path, body, world):
    url = "/api/v1/" + path.format(**{k: v for k, v in world.items() if k != "yaml"})
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, _fill(body, world), format="json")


def _ids(endpoints):
    return [f"{m.upper()} {p}" for m, p, _ in endpoints]


@pytest.mark.parametrize(("method", "path", "body"), OBJECT_ENDPOINTS, ids=_ids(OBJECT_ENDPOINTS))
def test_an_outsider_gets_404_for_every_object_of_another_organization(
    world, outsider, outsider_org, api_as, method, path, body
):
    response = _call(api_as(outsider, outsider_org), method, path, body, world)
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("method", "path", "body"), OBJECT_ENDPOINTS + LIST_ENDPOINTS,
                         ids=_ids(OBJECT_ENDPOINTS + LIST_ENDPOINTS))
def test_naming_a_foreign_organization_in_the_header_gets_404_everywhere(
    world, org, outsider, api_as, method, path, body
):
    response = _call(api_as(outsider, org), method, path, body, world)
    assert response.status_code == 404, response.content
    assert response.json() == {"error": {"code": "not_found", "message": "Organization not found.", "details": {}}}


@pytest.mark.parametrize(("method", "path", "body"), VIEWER_FORBIDDEN, ids=_ids(VIEWER_FORBIDDEN))
def test_a_viewer_is_refused_every_write_with_403(world, org, viewer, api_as, method, path, body):
    response = _call(api_as(viewer, org), method, path, body, world)
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "forbidden"


def test_an_unknown_organization_id_and_garbage_header_get_404(world, owner, api_as):
    client = api_as(owner)
    client.credentials(HTTP_X_ORGANIZATION_ID="00000000-0000-0000-0000-000000000000")
    assert client.get("/api/v1/agents").status_code == 404
    client.credentials(HTTP_X_ORGANIZATION_ID="not-a-uuid")
    assert client.get("/api/v1/agents").status_code == 404


def test_an_outsider_lists_only_their_own_organization(world, outsider, outsider_org, api_as):
    client = api_as(outsider, outsider_org)
    assert client.get("/api/v1/agents").json()["results"] == []
    assert client.get("/api/v1/secrets").json()["results"] == []
    assert client.get("/api/v1/model-profiles").json()["results"] == []
    emails = [m["user"]["email"] for m in client.get("/api/v1/members").json()["results"]]
    assert emails == [outsider.email]


def test_anonymous_requests_get_401_with_the_envelope(world, client):
    response = client.get("/api/v1/agents")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize("path", ["agents/{agent}/versions/abc", "agents/{agent}/grants/abc"])
def test_malformed_nested_ids_get_the_404_envelope(world, org, owner, api_as, path):
    method = "delete" if "grants" in path else "get"
    response = _call(api_as(owner, org), method, path, None, world)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
