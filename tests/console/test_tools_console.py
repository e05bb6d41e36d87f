"""Tools → custom tools in the console (console/tools.py over capabilities.custom_tools.services):
a builder creates a tool with the manual form, its Test makes a real call to a local fake REST API with the
vault credential injected, and the secret's value appears in no page; templates install as copies; the list
groups by provider and shows each agent's 25-slot budget; viewers see and never change; outsiders get 404."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from capabilities.models import CustomTool
from tests import factories
from tests.fakes.rest_api import FakeRestAPI

pytestmark = pytest.mark.django_db

LIST = "/tools/"
NEW = "/tools/new"


@pytest.fixture
def rest_api(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake provider listens there
    server = FakeRestAPI().start()
    yield server
    server.stop()


def edit(tool) -> str:
    return f"/tools/{tool.pk}/"


def form(base: str, **extra) -> dict:
    """The manual builder form as a browser posts it: a path parameter, a fixed header, one warning."""
    data = {
        "name": "Get contact", "alias": "get_contact", "description": "Loads one contact by id.",
        "usage_notes": "Use the id from list_contacts.", "method": "GET",
        "url": f"{base}/echo/contacts/{{contact_id}}", "timeout_secs": "",
        "p-0-name": "contact_id", "p-0-location": "path", "p-0-type": "string", "p-0-required": "on",
        "p-0-mode": "ai", "p-0-value": "", "p-0-description": "The contact's id.",
        "p-1-name": "X-Client", "p-1-location": "header", "p-1-type": "string", "p-1-mode": "fixed",
        "p-1-value": "agenticos-console", "p-1-description": "",
        "p-2-name": "", "p-2-location": "query", "p-2-type": "string", "p-2-mode": "ai", "p-2-value": "",
        "auth_family": "header", "auth_header_name": "Authorization", "auth_prefix": "Bearer ",
        "auth_query_name": "api_key", "auth_signature_header": "X-Signature", "auth_timestamp_header": "X-Timestamp",
        "auth_jwt_algorithm": "HS256", "credential_id": "", "tags": "CRM, contacts",
        "w-0-level": "warning", "w-0-text": "Ids are numeric.", "w-1-level": "info", "w-1-text": "",
    }
    data.update(extra)
    return data


# ------------------------------------------------------------------ create → test for real


def test_a_builder_creates_a_tool_and_its_test_reaches_the_api_with_the_credential_and_no_page_shows_it(
        client_as, org, builder, rest_api):
    secret = factories.secret(org, name="crm key", value=rest_api.secret)
    client = client_as(builder, org)
    page = client.get(NEW).content.decode()
    assert 'name="credential_id"' in page and "crm key" in page and rest_api.secret not in page

    response = client.post(NEW, form(rest_api.base, credential_id=str(secret.pk)))

    tool = CustomTool.objects.get(organization=org)
    assert response.status_code == 302 and response["Location"] == edit(tool)
    assert tool.alias == "get_contact" and tool.credential_id == secret.pk and tool.tags == ["crm", "contacts"]
    assert tool.parameters[1] == {"name": "X-Client", "location": "header", "type": "string", "required": False,
                                  "mode": "fixed", "value": "agenticos-console", "description": "",
                                  "enum": None}
    assert tool.warnings == [{"level": "warning", "text": "Ids are numeric."}]
    assert AuditEvent.objects.filter(organization=org, action="custom_tool.created", actor=builder).exists()

    tested = client.post(f"/tools/{tool.pk}/test", {"arg.contact_id": "42"})

    assert tested.status_code == 200
    seen = rest_api.requests[-1]
    assert seen.path == "/echo/contacts/42"
    assert seen.headers["Authorization"] == f"Bearer {rest_api.secret}" and seen.headers["X-Client"] == "agenticos-console"
    html = tested.content.decode()
    assert 'data-test-ok="true"' in html and "/echo/contacts/42" in html  # the compact preview of the echo
    assert rest_api.secret not in html  # the echo carries the header back: the preview masks it
    for page in (client.get(edit(tool)), client.get(LIST)):
        assert rest_api.secret not in page.content.decode() and "crm key" in page.content.decode()
    assert AuditEvent.objects.filter(organization=org, action="custom_tool.tested").count() == 1


def test_the_url_shows_its_path_parameters_highlighted(client_as, org, builder, rest_api):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/repos/{{owner}}/{{repo}}", parameters=[
        {"name": "owner", "location": "path", "required": True}, {"name": "repo", "location": "path"}])
    html = client_as(builder, org).get(edit(tool)).content.decode()
    assert '<mark data-path-param="owner">{owner}</mark>' in html and '<mark data-path-param="repo">{repo}</mark>' in html


def test_a_failed_test_shows_the_failure_and_the_status(client_as, org, builder, rest_api):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/auth/bearer")  # no credential: the API says 401
    html = client_as(builder, org).post(f"/tools/{tool.pk}/test", {}).content.decode()
    assert 'data-test-ok="false"' in html and '<span data-test-status>401</span>' in html


def test_the_services_problems_come_back_at_their_fields_and_nothing_is_saved(client_as, org, builder, rest_api):
    bad = form(rest_api.base, alias="Get Contact", **{"p-0-name": ""})  # bad alias, {contact_id} undeclared
    response = client_as(builder, org).post(NEW, bad)
    html = response.content.decode()
    assert response.status_code == 422
    assert 'data-error-field="alias"' in html and "contact_id" in html and 'value="Get Contact"' in html
    assert not CustomTool.objects.exists()


def test_a_fixed_parameter_value_is_typed_by_its_type(client_as, org, builder, rest_api):
    data = form(rest_api.base, method="POST", **{"p-1-name": "limit", "p-1-location": "body", "p-1-type": "integer",
                                               "p-1-value": "25", "p-2-name": "tags", "p-2-location": "body",
                                               "p-2-type": "array", "p-2-mode": "fixed", "p-2-value": '["a", "b"]'})
    assert client_as(builder, org).post(NEW, data).status_code == 302
    params = {p["name"]: p for p in CustomTool.objects.get(organization=org).parameters}
    assert params["limit"]["value"] == 25 and params["tags"]["value"] == ["a", "b"]


def test_editing_saves_through_the_service_and_a_duplicate_alias_is_refused(client_as, org, builder, rest_api):
    factories.custom_tool(org, alias="taken", url=f"{rest_api.base}/echo")
    client = client_as(builder, org)
    client.post(NEW, form(rest_api.base))
    tool = CustomTool.objects.get(alias="get_contact")
    assert client.post(edit(tool), form(rest_api.base, description="Changed.")).status_code == 302
    tool.refresh_from_db()
    assert tool.description == "Changed."
    refused = client.post(edit(tool), form(rest_api.base, alias="taken"))
    assert refused.status_code == 422 and 'data-error-field="alias"' in refused.content.decode()
    tool.refresh_from_db()
    assert tool.alias == "get_contact"


def test_a_foreign_credential_cannot_be_attached(client_as, org, builder, outsider_org, rest_api):
    foreign = factories.secret(outsider_org, name="their key")
    response = client_as(builder, org).post(NEW, form(rest_api.base, credential_id=str(foreign.pk)))
    assert response.status_code == 422 and 'data-error-field="credential_id"' in response.content.decode()
    assert not CustomTool.objects.exists()


def test_deleting_a_tool(client_as, org, builder, rest_api):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/echo")
    assert client_as(builder, org).post(f"/tools/{tool.pk}/delete").status_code == 302
    assert not CustomTool.objects.filter(pk=tool.pk).exists()


# ------------------------------------------------------------------ list, grouping, budget, gallery


def test_the_list_groups_tools_by_provider_and_shows_each_agents_slots(client_as, org, builder, owner, rest_api):
    crm = factories.custom_tool(org, name="Find contact", url=f"{rest_api.base}/echo", tags=["hubspot"])
    other = factories.custom_tool(org, name="Ping", url=f"{rest_api.base}/echo")
    kit = factories.custom_tool(org, name="Refund", url=f"{rest_api.base}/echo", kit_name="Stripe billing")
    agent = factories.published_agent(org, owner, name="Support",
                                      capabilities=[{"id": "custom_tools", "config": {"tool_ids": [str(crm.pk)]}}])
    agent.draft_spec = {**agent.draft_spec, "custom_tool_ids": [str(other.pk), str(kit.pk)]}
    agent.save(update_fields=["draft_spec"])
    html = client_as(builder, org).get(LIST).content.decode()
    assert 'data-tool-group="Hubspot"' in html and 'data-tool-group="Stripe billing"' in html
    assert 'data-tool-group="Other"' in html
    assert f'data-budget-agent="{agent.pk}"' in html and '<span data-slots>3 / 25</span>' in html


def test_a_template_installs_as_an_editable_copy(client_as, org, builder):
    secret = factories.secret(org, name="stripe key")
    client = client_as(builder, org)
    assert 'data-template="stripe_list_customers"' in client.get(LIST).content.decode()
    response = client.post("/tools/templates/stripe_list_customers/install",
                           {"alias": "stripe_customers", "credential_id": str(secret.pk)})
    tool = CustomTool.objects.get(organization=org)
    assert response.status_code == 302 and response["Location"] == edit(tool)
    assert tool.alias == "stripe_customers" and tool.template_key == "stripe_list_customers"
    assert tool.credential_id == secret.pk
    html = client.get(LIST).content.decode()
    assert 'data-tool-group="Stripe"' in html and "data-installed" in html


def test_an_unknown_template_is_a_404(client_as, org, builder):
    assert client_as(builder, org).post("/tools/templates/nope/install").status_code == 404


# ------------------------------------------------------------------ viewers and outsiders


def test_a_viewer_sees_tools_read_only_and_every_change_is_403(client_as, org, viewer, rest_api):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/echo", alias="ping")
    client = client_as(viewer, org)
    listed = client.get(LIST).content.decode()
    assert "data-read-only" in listed and "data-install" not in listed and "data-new-tool" not in listed
    page = client.get(edit(tool)).content.decode()
    assert "data-test-button" not in page and "data-save" not in page and "<fieldset disabled" in page
    assert client.get(NEW).status_code == 403
    assert client.post(NEW, form(rest_api.base)).status_code == 403
    assert client.post(edit(tool), form(rest_api.base, alias="changed")).status_code == 403
    assert client.post(f"/tools/{tool.pk}/test", {}).status_code == 403
    assert client.post(f"/tools/{tool.pk}/delete").status_code == 403
    assert client.post("/tools/templates/stripe_list_customers/install").status_code == 403
    tool.refresh_from_db()
    assert tool.alias == "ping" and CustomTool.objects.count() == 1 and rest_api.requests == []


def test_an_outsider_gets_404_for_every_tool_route(client_as, org, outsider_org, outsider, rest_api):
    tool = factories.custom_tool(org, url=f"{rest_api.base}/echo", alias="ping")
    client = client_as(outsider, outsider_org)
    assert tool.name not in client.get(LIST).content.decode()
    assert client.get(edit(tool)).status_code == 404
    assert client.post(edit(tool), form(rest_api.base)).status_code == 404
    assert client.post(f"/tools/{tool.pk}/test", {}).status_code == 404
    assert client.post(f"/tools/{tool.pk}/delete").status_code == 404
    assert CustomTool.objects.filter(pk=tool.pk, alias="ping").exists() and rest_api.requests == []


# ------------------------------------------------------------------ queries and hostile addresses


def _tools_and_agents(org, owner, n: int) -> None:
    from capabilities.models import DatabaseConnection

    conn = DatabaseConnection.objects.create(organization=org, name=f"db{n}", permission="write", key_version=1,
                                             wrapped_key=b"k", ciphertext=b"c")
    for i in range(n):
        tool = factories.custom_tool(org, url="https://api.example.com/t", tags=[f"p{i}"],
                                     credential=factories.secret(org))
        agent = factories.published_agent(org, owner, name=f"Agent {n}-{i}")
        agent.draft_spec = {**agent.draft_spec, "custom_tool_ids": [str(tool.pk)],
                            "capabilities": [{"id": "database", "config": {"connection_ids": [str(conn.pk)]}}]}
        agent.save(update_fields=["draft_spec"])


def test_the_list_reads_the_same_number_of_queries_for_one_tool_or_many(client_as, org, owner, builder):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_as(builder, org)
    _tools_and_agents(org, owner, 1)
    client.get(LIST)  # warm the session and the caches
    with CaptureQueriesContext(connection) as one:
        assert client.get(LIST).status_code == 200
    _tools_and_agents(org, owner, 6)
    with CaptureQueriesContext(connection) as many:
        html = client.get(LIST).content.decode()
    assert len(many) == len(one), [q["sql"][:120] for q in many]
    assert html.count("data-budget-agent=") == 7 and "<span data-slots>6 / 25</span>" in html


def test_a_tool_aimed_at_the_metadata_address_is_refused_by_its_test_without_a_call(client_as, org, builder):
    tool = factories.custom_tool(org, url="http://169.254.169.254/latest/meta-data/")
    html = client_as(builder, org).post(f"/tools/{tool.pk}/test", {}).content.decode()
    assert 'data-test-ok="false"' in html and "169.254.169.254/latest" in html  # the tool's own URL, in the form
    assert AuditEvent.objects.get(organization=org, action="custom_tool.tested").details["ok"] is False
