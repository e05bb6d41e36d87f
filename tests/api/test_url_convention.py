"""One URL form for the whole API: no trailing slash is canonical (the schema, reverse()), the slash form
answers the same view, and no API route is slash-only or no-slash-only."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

pytestmark = pytest.mark.django_db


def _api_routes(patterns=None, prefix: str = "") -> list[tuple[str, URLPattern]]:
    found = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _api_routes(entry.url_patterns, route)
        elif route.startswith("api/v1/"):
            found.append((route, entry))
    return found


def test_every_api_route_answers_with_and_without_the_slash():
    routes = {route for route, _ in _api_routes()}
    assert len(routes) > 100
    lonely = sorted(r for r in routes if (r[:-1] if r.endswith("/") else r + "/") not in routes)
    assert lonely == []


def test_the_name_is_on_the_canonical_form():
    for route, pattern in _api_routes():
        if pattern.name:
            assert not route.endswith("/"), route


def test_the_schema_lists_only_canonical_paths(client):
    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    api_paths = [p for p in doc["paths"] if p.startswith("/api/v1/")]
    assert len(api_paths) > 80
    assert [p for p in api_paths if p.endswith("/")] == []
    for path in ["/api/v1/tools", "/api/v1/collections/{id}/documents", "/api/v1/memory/clear", "/api/v1/skills",
                 "/api/v1/runs/{run_id}", "/api/v1/approvals", "/api/v1/bots", "/api/v1/agents/{agent_id}/embeds"]:
        assert path in doc["paths"], path


def test_reverse_gives_the_canonical_form():
    assert reverse("api-tools") == "/api/v1/tools"
    assert reverse("api-memory-clear") == "/api/v1/memory/clear"
    assert reverse("channel-bots") == "/api/v1/bots"
    assert reverse("capability-catalog") == "/api/v1/agents/capabilities"


@pytest.mark.parametrize("path", ["/api/v1/tools", "/api/v1/collections", "/api/v1/skills", "/api/v1/memory",
                                  "/api/v1/runs", "/api/v1/approvals", "/api/v1/bots", "/api/v1/chat-accounts",
                                  "/api/v1/db-connections", "/api/v1/agents", "/api/v1/context"])
def test_both_forms_of_a_list_answer_the_same(org, owner, api_as, path):
    client = api_as(owner, org)
    plain, slashed = client.get(path), client.get(path + "/")
    assert plain.status_code == slashed.status_code == 200
    assert plain.json() == slashed.json()


def test_a_post_answers_on_both_forms(org, owner, api_as):
    client = api_as(owner, org)
    for path in ["/api/v1/collections", "/api/v1/collections/"]:
        assert client.post(path, {"name": f"C {path}"}).status_code == 201
