"""GET /api/v1/agents/capabilities: the registry as the Builder reads it."""

from __future__ import annotations

import pytest

from capabilities import registry

pytestmark = pytest.mark.urls("tests.capabilities.urls_catalog")
URL = "/api/v1/agents/capabilities"


def test_it_serves_every_capability_with_its_json_schema_and_flags(api_as, org, viewer):
    response = api_as(viewer, org).get(URL)
    assert response.status_code == 200
    body = response.json()
    by_id = {c["id"]: c for c in body["capabilities"]}
    assert set(by_id) == {c.id for c in registry.all_capabilities()}

    code = by_id["code_execution"]
    props = code["config_schema"]["properties"]
    assert props["timeout_secs"]["default"] == 10 and props["timeout_secs"]["maximum"] == 120
    assert props["max_memory_mb"]["minimum"] == 16 and props["max_memory_mb"]["maximum"] == 4096
    assert code["scopes"] == ["code:execute"] and code["available"] is True
    assert [t["id"] for t in code["tools"]] == ["run_python"]
    assert code["tools"][0]["summary"].startswith("Run a small Python program")

    thinking = by_id["thinking"]
    assert thinking["tools"] == []
    assert thinking["config_schema"]["properties"]["effort"]["x-enum-labels"]["xhigh"] == "Extra high"

    assert {cid for cid, c in by_id.items() if c["recommended"]} >= {
        "clock",
        "charts",
        "code_execution",
        "ask_user",
    }
    assert by_id["thinking"]["recommended"] is False
    assert len(by_id["planning"]["tools"]) == 9
    assert all(t["side_effecting"] is False for t in by_id["planning"]["tools"])
    assert {"voice", "selectable", "advanced", "key", "category"} <= set(by_id["clock"])


def test_the_trailing_slash_form_answers_too(api_as, org, member):
    assert api_as(member, org).get(URL + "/").status_code == 200


def test_an_outsider_naming_this_organization_gets_404(api_as, org, outsider):
    response = api_as(outsider, org).get(URL)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_caller_without_a_session_or_key_gets_401(client, db):
    assert client.get(URL).status_code == 401


def test_a_suspended_member_gets_404(api_as, org, viewer):
    from agenticos.models import Membership

    Membership.objects.filter(user=viewer, organization=org).update(is_suspended=True)
    assert api_as(viewer, org).get(URL).status_code == 404


@pytest.mark.parametrize("role", ["owner", "admin", "builder", "member", "viewer"])
def test_every_real_role_reads_the_catalog_as_the_role_table_says(api_as, org, role):
    # The real table, not an invented one: the catalog needs agents:view, and whichever roles hold it read it.
    from agenticos import permissions
    from tests import factories

    assert set(permissions.ROLE_PERMISSIONS) == set(permissions.Role.values) == {  # every role is parametrized
        "owner", "admin", "builder", "member", "viewer"}
    user = factories.member(org, role)
    response = api_as(user, org).get(URL)
    if permissions.role_has(role, "agents:view"):
        assert response.status_code == 200 and response.json()["capabilities"]
    else:
        assert response.status_code == 403
        assert response.json()["error"]["details"]["permission"] == "agents:view"


def test_the_catalog_costs_one_query_whatever_its_size(api_as, org, viewer, django_assert_num_queries):
    client = api_as(viewer, org)
    # The membership that resolves the organization (with its user and organization joined in);
    # the catalog itself is code and costs nothing, however many capabilities there are.
    with django_assert_num_queries(1):
        assert client.get(URL).status_code == 200
