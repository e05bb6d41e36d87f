"""/api/v1/tools and /api/v1/tool-templates: CRUD, real test calls, isolation, roles, audit, no secret leaks."""

from __future__ import annotations

import json

import pytest

from agenticos.models import AuditEvent
from capabilities.models import CustomTool
from tests import factories

pytestmark = [pytest.mark.urls("tests.tools.urls"), pytest.mark.usefixtures("local_allowed")]


def _definition(base: str, **extra):
    return {
        "name": "Get contact", "alias": "get_contact", "description": "Loads one contact.",
        "method": "GET", "url": f"{base}/contacts/{{contact_id}}",
        "parameters": [{"name": "contact_id", "location": "path", "type": "string", "required": True}],
        **extra,
    }


def test_a_builder_creates_lists_edits_and_deletes_a_tool_with_audit_rows(db, org, builder, api_as, rest_api):
    client = api_as(builder, org)
    created = client.post("/api/v1/tools", _definition(rest_api.base), format="json")
    assert created.status_code == 201, created.json()
    tool_id = created.json()["id"]
    assert client.get("/api/v1/tools").json()["results"][0]["alias"] == "get_contact"
    patched = client.patch(f"/api/v1/tools/{tool_id}", {"description": "Loads a contact by id.",
                                                         "warnings": [{"level": "info", "text": "Ids are numeric."}]},
                           format="json")
    assert patched.status_code == 200 and patched.json()["warnings"][0]["text"] == "Ids are numeric."
    assert client.delete(f"/api/v1/tools/{tool_id}").status_code == 204
    actions = list(AuditEvent.objects.filter(organization=org).values_list("action", flat=True).order_by("id"))
    assert actions == ["custom_tool.created", "custom_tool.updated", "custom_tool.deleted"]


def test_an_invalid_definition_names_each_problem_by_field(db, org, builder, api_as, rest_api):
    bad = _definition(rest_api.base, alias="Get Contact", parameters=[
        {"name": "payload", "location": "body", "type": "object"}])
    response = api_as(builder, org).post("/api/v1/tools", bad, format="json")
    assert response.status_code == 422
    fields = {p["field"] for p in response.json()["error"]["details"]["problems"]}
    assert "alias" in fields and any(f.startswith("parameters.0") for f in fields)


def test_the_url_and_path_parameters_must_agree(db, org, builder, api_as, rest_api):
    bad = _definition(rest_api.base, parameters=[])
    response = api_as(builder, org).post("/api/v1/tools", bad, format="json")
    assert response.status_code == 422
    assert "{contact_id}" in json.dumps(response.json())


def test_a_duplicate_alias_is_a_conflict(db, org, builder, api_as, rest_api):
    client = api_as(builder, org)
    client.post("/api/v1/tools", _definition(rest_api.base), format="json")
    response = client.post("/api/v1/tools", _definition(rest_api.base), format="json")
    assert response.status_code == 409


def test_a_test_call_hits_the_real_url_and_returns_a_compact_preview(db, org, builder, api_as, rest_api):
    secret = factories.secret(org, value=rest_api.secret)
    tool = factories.custom_tool(org, alias="whoami", url=f"{rest_api.base}/auth/bearer", credential=secret,
                                 auth={"family": "header", "header_name": "Authorization", "prefix": "Bearer "})
    response = api_as(builder, org).post(f"/api/v1/tools/{tool.pk}/test", {"args": {}}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["status"] == 200
    assert rest_api.secret not in response.content.decode()
    assert rest_api.requests[-1].headers["Authorization"] == f"Bearer {rest_api.secret}"


def test_a_credential_from_another_organization_cannot_be_attached(db, org, builder, outsider_org, api_as, rest_api):
    foreign = factories.secret(outsider_org)
    response = api_as(builder, org).post("/api/v1/tools", {**_definition(rest_api.base), "credential_id": str(foreign.pk)},
                                         format="json")
    assert response.status_code == 422
    assert not CustomTool.objects.exists()


@pytest.mark.parametrize("method,suffix,payload", [
    ("get", "", None), ("patch", "", {"description": "x"}), ("delete", "", None), ("post", "test/", {"args": {}}),
])
def test_another_organizations_tool_is_not_found(db, org, outsider, outsider_org, api_as, rest_api,
                                                 method, suffix, payload):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/echo")
    client = api_as(outsider, outsider_org)
    response = getattr(client, method)(f"/api/v1/tools/{tool.pk}/{suffix}", payload, format="json")
    assert response.status_code == 404
    assert client.get("/api/v1/tools").json()["results"] == []


@pytest.mark.parametrize("method,path,payload", [
    ("post", "/api/v1/tools", {}), ("patch", "/api/v1/tools/{id}", {"description": "x"}),
    ("delete", "/api/v1/tools/{id}", None), ("post", "/api/v1/tools/{id}/test", {"args": {}}),
    ("post", "/api/v1/tool-templates/stripe_list_customers/install", {}),
])
def test_a_viewer_can_read_but_not_change_tools(db, org, viewer, api_as, rest_api, method, path, payload):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/echo")
    client = api_as(viewer, org)
    assert client.get("/api/v1/tools").status_code == 200
    response = getattr(client, method)(path.format(id=tool.pk), payload, format="json")
    assert response.status_code == 403
    assert rest_api.requests == []


def test_templates_are_listed_and_installing_copies_one_into_the_account(db, org, builder, api_as):
    client = api_as(builder, org)
    listed = client.get("/api/v1/tool-templates").json()["results"]
    assert len(listed) >= 5
    assert {"stripe_list_customers", "hubspot_search_contacts", "github_create_issue", "slack_post_message",
            "json_webhook"} <= {t["key"] for t in listed}
    installed = client.post("/api/v1/tool-templates/slack_post_message/install", {}, format="json")
    assert installed.status_code == 201
    tool = CustomTool.objects.get(organization=org)
    assert tool.template_key == "slack_post_message" and tool.url == "https://slack.com/api/chat.postMessage"
    assert tool.warnings  # the template's warning travels with the copy
    again = client.post("/api/v1/tool-templates/slack_post_message/install", {"alias": "slack_post_2"}, format="json")
    assert again.status_code == 201


def test_an_unknown_template_is_not_found(db, org, builder, api_as):
    assert api_as(builder, org).post("/api/v1/tool-templates/nope/install", {}, format="json").status_code == 404


def test_an_outsider_cannot_install_into_another_organization(db, org, outsider, api_as):
    response = api_as(outsider, org).get("/api/v1/tool-templates")
    assert response.status_code == 404
