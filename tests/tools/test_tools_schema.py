"""The schema tells the truth about the tools API: real answers of every tools, tool-kits, builder, database and MCP
operation, on real objects (the fuzz test only reaches their 404s), validate against what /api/schema/ documents
for them (capabilities.serializers_tools)."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from capabilities.models import CustomTool
from tests import factories
from tests.api.test_schema_truth import assert_matches
from tests.fakes.mcp_server import FakeMCPServer
from tests.tools.test_database import customer_dsn  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("local_allowed")]


@pytest.fixture(scope="module")
def doc(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def _checked(doc, response, path: str, method: str, status: int):
    assert response.status_code == status, response.content
    body = response.json()
    assert_matches(doc, path, method, str(status), body)
    return body


def test_custom_tools_and_templates_answer_as_documented(doc, org, builder, api_as, rest_api):
    client = api_as(builder, org)
    secret = factories.secret(org, value=rest_api.secret)
    definition = {"name": "Get contact", "alias": "get_contact", "method": "GET",
                  "url": f"{rest_api.base}/auth/bearer", "credential_id": str(secret.pk),
                  "parameters": [{"name": "q", "location": "query", "required": True},
                                 {"name": "source", "location": "query", "mode": "fixed", "value": "api"}],
                  "auth": {"family": "header"}, "tags": ["crm"], "warnings": [{"text": "Ids are numeric."}]}
    tool = _checked(doc, client.post("/api/v1/tools", definition, format="json"), "/api/v1/tools", "post", 201)
    assert tool["credential_id"] == str(secret.pk) and tool["warnings"][0]["level"] == "warning"
    _checked(doc, client.get("/api/v1/tools"), "/api/v1/tools", "get", 200)
    _checked(doc, client.get(f"/api/v1/tools/{tool['id']}"), "/api/v1/tools/{id}", "get", 200)
    _checked(doc, client.patch(f"/api/v1/tools/{tool['id']}", {"description": "Loads one contact."}, format="json"),
             "/api/v1/tools/{id}", "patch", 200)
    tested = _checked(doc, client.post(f"/api/v1/tools/{tool['id']}/test", {"args": {"q": "ada"}},
                                       format="json"), "/api/v1/tools/{id}/test", "post", 200)
    assert tested["ok"] is True and tested["status"] == 200
    failed = _checked(doc, client.post(f"/api/v1/tools/{tool['id']}/test", {}, format="json"),
                      "/api/v1/tools/{id}/test", "post", 200)
    assert failed["ok"] is False and failed["status"] is None  # no call was made: the argument is missing
    templates = _checked(doc, client.get("/api/v1/tool-templates"), "/api/v1/tool-templates", "get", 200)
    key = templates["results"][0]["key"]
    installed = _checked(doc, client.post(f"/api/v1/tool-templates/{key}/install", {"alias": "from_template"},
                                          format="json"), "/api/v1/tool-templates/{key}/install", "post", 201)
    assert installed["credential_id"] is None and installed["template_key"] == key
    assert client.delete(f"/api/v1/tools/{tool['id']}").status_code == 204


def test_builder_sessions_kits_and_drafts_answer_as_documented(doc, org, builder, api_as, rest_api):
    client = api_as(builder, org)
    secret = factories.secret(org, value=rest_api.secret)
    session = _checked(doc, client.post("/api/v1/tool-kits/sessions", {"title": "CRM"}, format="json"),
                       "/api/v1/tool-kits/sessions", "post", 201)
    kit = _checked(doc, client.post(f"/api/v1/tool-kits/sessions/{session['id']}/kits",
                                    {"name": "Contacts", "provider": "FakeCRM", "credential_id": str(secret.pk),
                                     "warnings": [{"level": "info", "text": "Sandbox."}]}, format="json"),
                   "/api/v1/tool-kits/sessions/{id}/kits", "post", 201)
    draft = _checked(doc, client.post(f"/api/v1/tool-kits/{kit['id']}/drafts", {"name": "Create contact"},
                                      format="json"), "/api/v1/tool-kits/{id}/drafts", "post", 201)
    one, action = "/api/v1/tool-kits/drafts/{id}", "/api/v1/tool-kits/drafts/{id}/{action}"
    url = f"/api/v1/tool-kits/drafts/{draft['id']}"
    _checked(doc, client.get(url), one, "get", 200)  # a fresh draft: no definition, no test yet
    definition = {"name": "Create contact", "alias": "create_contact", "method": "POST",
                  "url": f"{rest_api.base}/contacts",
                  "parameters": [{"name": "properties.email", "location": "body", "required": True}]}
    _checked(doc, client.post(f"{url}/configure", {"definition": definition}, format="json"), action, "post", 200)
    _checked(doc, client.post(f"{url}/warnings", {"level": "critical", "text": "Emails are unique."}, format="json"),
             action, "post", 200)
    tested = _checked(doc, client.post(f"{url}/test", {"args": {"properties__email": "ada@example.com"}},
                                       format="json"), action, "post", 200)
    assert tested["state"] == "validated" and tested["test"]["at"]
    _checked(doc, client.post(f"{url}/samples", {"label": "created"}, format="json"), action, "post", 200)
    _checked(doc, client.get(f"{url}/test"), action, "get", 200)
    detail = _checked(doc, client.get(f"/api/v1/tool-kits/sessions/{session['id']}"),
                      "/api/v1/tool-kits/sessions/{id}", "get", 200)
    assert detail["kits"][0]["drafts"][0]["sample_outputs"][0]["label"] == "created"
    _checked(doc, client.get("/api/v1/tool-kits/sessions"), "/api/v1/tool-kits/sessions", "get", 200)
    finalized = _checked(doc, client.post(f"/api/v1/tool-kits/{kit['id']}/finalize", {}, format="json"),
                         "/api/v1/tool-kits/{id}/finalize", "post", 201)
    assert [t["alias"] for t in finalized["tools"]] == ["create_contact"]
    _checked(doc, client.post(f"/api/v1/tool-kits/sessions/{session['id']}/restart", {}, format="json"),
             "/api/v1/tool-kits/sessions/{id}/restart", "post", 200)
    factories.model_profile(org)  # the builder's turn runs on the organization's chat model (not executed here)
    _checked(doc, client.post(f"/api/v1/tool-kits/sessions/{session['id']}/messages", {"prompt": "One more tool"},
                              format="json"), "/api/v1/tool-kits/sessions/{id}/messages", "post", 202)
    assert CustomTool.objects.filter(organization=org, alias="create_contact").exists()


def test_warnings_that_are_not_a_list_and_args_that_are_not_an_object_are_a_422_naming_them(
        org, builder, api_as, rest_api):
    # Were 500s: the services iterated the warnings and read the arguments by name.
    client = api_as(builder, org)
    definition = {"name": "Who", "alias": "who", "url": f"{rest_api.base}/auth/bearer"}

    def refused(response, field):
        assert response.status_code == 422, response.content
        assert response.json()["error"]["details"]["problems"][0]["field"] == field

    refused(client.post("/api/v1/tools", {**definition, "warnings": 5}, format="json"), "warnings")
    assert not CustomTool.objects.filter(organization=org).exists()
    tool = client.post("/api/v1/tools", definition, format="json").json()
    refused(client.patch(f"/api/v1/tools/{tool['id']}", {"warnings": 5}, format="json"), "warnings")
    for args in ([1], 5, "x"):
        refused(client.post(f"/api/v1/tools/{tool['id']}/test", {"args": args}, format="json"), "args")
    session = client.post("/api/v1/tool-kits/sessions", {}, format="json").json()
    refused(client.post(f"/api/v1/tool-kits/sessions/{session['id']}/kits", {"name": "k", "warnings": 5},
                        format="json"), "warnings")
    kit = client.post(f"/api/v1/tool-kits/sessions/{session['id']}/kits", {"name": "k"}, format="json").json()
    draft = client.post(f"/api/v1/tool-kits/{kit['id']}/drafts", {"name": "d"}, format="json").json()
    url = f"/api/v1/tool-kits/drafts/{draft['id']}"
    assert client.post(f"{url}/configure", {"definition": definition}, format="json").status_code == 200
    refused(client.post(f"{url}/test", {"args": [1]}, format="json"), "args")
    assert client.get(url).json()["state"] == "configured"  # nothing was tested


def test_a_post_without_an_action_is_refused_and_stays_out_of_the_schema(doc, org, builder, api_as):
    assert "post" not in doc["paths"]["/api/v1/tool-kits/drafts/{id}"]
    assert doc["paths"]["/api/v1/tool-kits/drafts/{id}/{action}"]["post"]["operationId"] == \
        "v1_tool_kits_drafts_action_create"


def test_database_connections_answer_as_documented(doc, org, builder, api_as, customer_dsn, settings):  # noqa: F811
    # The customer's database is on the embedded server's socket: listed here, after local_allowed has run.
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [django_settings.DATABASES["default"]["HOST"], "127.0.0.1"]
    client = api_as(builder, org)
    created = _checked(doc, client.post("/api/v1/db-connections", {"name": "shop", "dsn": customer_dsn},
                                        format="json"), "/api/v1/db-connections", "post", 201)
    _checked(doc, client.get("/api/v1/db-connections"), "/api/v1/db-connections", "get", 200)
    _checked(doc, client.get(f"/api/v1/db-connections/{created['id']}"), "/api/v1/db-connections/{id}", "get", 200)
    changed = _checked(doc, client.patch(f"/api/v1/db-connections/{created['id']}", {"row_cap": 50},
                                         format="json"), "/api/v1/db-connections/{id}", "patch", 200)
    assert changed["row_cap"] == 50


@pytest.mark.parametrize("changes", [{"row_cap": "many"}, {"statement_timeout_ms": None}, {"row_cap": [1]},
                                     {"row_cap": True}, {"statement_timeout_ms": 2.5}, {"row_cap": "³"}])
def test_a_limit_that_is_not_a_whole_number_is_a_422_naming_it_and_changes_nothing(
        org, builder, api_as, customer_dsn, settings, changes):  # noqa: F811
    # Was a 500: the service's int() raised past the edge.
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [django_settings.DATABASES["default"]["HOST"], "127.0.0.1"]
    client = api_as(builder, org)
    pk = client.post("/api/v1/db-connections", {"name": "shop", "dsn": customer_dsn}, format="json").json()["id"]
    refused = client.patch(f"/api/v1/db-connections/{pk}", {**changes, "permission": "write"}, format="json")
    assert refused.status_code == 422
    assert refused.json()["error"]["details"]["problems"][0]["field"] == next(iter(changes))
    assert client.get(f"/api/v1/db-connections/{pk}").json()["permission"] == "read"


def test_mcp_connections_and_the_catalog_answer_as_documented(doc, org, builder, api_as):
    server = FakeMCPServer(token="mcp-token").start()
    try:
        client = api_as(builder, org)
        secret = factories.secret(org, value="mcp-token")
        created = _checked(doc, client.post("/api/v1/mcp-connections", {"name": "fake", "url": server.url,
                                                                        "auth_secret_id": str(secret.pk)},
                                            format="json"), "/api/v1/mcp-connections", "post", 201)
        assert created["tools"] and created["checked_at"]
        _checked(doc, client.get("/api/v1/mcp-connections"), "/api/v1/mcp-connections", "get", 200)
        _checked(doc, client.get(f"/api/v1/mcp-connections/{created['id']}"), "/api/v1/mcp-connections/{id}", "get",
                 200)
        _checked(doc, client.post(f"/api/v1/mcp-connections/{created['id']}/check", {}, format="json"),
                 "/api/v1/mcp-connections/{id}/check", "post", 200)
    finally:
        server.stop()
    catalog = _checked(doc, client.get("/api/v1/mcp-catalog"), "/api/v1/mcp-catalog", "get", 200)
    assert catalog["results"] and catalog["results"][0]["connected"] is False
