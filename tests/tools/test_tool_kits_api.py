"""/api/v1/tool-kits: builder sessions, kits, the draft lifecycle with real test calls, finalize."""

from __future__ import annotations

import pytest

from capabilities.models import CustomTool, ToolDraft
from tests import factories

pytestmark = [pytest.mark.urls("tests.tools.urls"), pytest.mark.usefixtures("local_allowed")]


def _create_contact_def(base: str) -> dict:
    return {"name": "Create contact", "alias": "create_contact", "method": "POST", "url": f"{base}/contacts",
            "parameters": [{"name": "properties.email", "location": "body", "required": True},
                           {"name": "properties.firstname", "location": "body"}]}


@pytest.fixture
def kit(db, org, builder, api_as, rest_api):
    client = api_as(builder, org)
    secret = factories.secret(org, value=rest_api.secret)
    session = client.post("/api/v1/tool-kits/sessions", {"title": "CRM"}, format="json").json()
    kit = client.post(f"/api/v1/tool-kits/sessions/{session['id']}/kits/",
                      {"name": "Fake Contacts", "provider": "FakeCRM", "credential_id": str(secret.pk),
                       "warnings": [{"level": "info", "text": "Sandbox account."}]}, format="json")
    assert kit.status_code == 201, kit.json()
    return client, session, kit.json()


def test_a_draft_moves_from_draft_to_created_through_a_real_test(kit, rest_api, org):
    client, session, kit = kit
    draft = client.post(f"/api/v1/tool-kits/{kit['id']}/drafts/", {"name": "Create contact"}, format="json").json()
    assert draft["state"] == "draft"
    url = f"/api/v1/tool-kits/drafts/{draft['id']}/"
    assert client.post(url + "test/", {}, format="json").status_code == 409  # nothing to test yet
    assert client.post(url + "warnings/", {"level": "info", "text": "x"}, format="json").status_code == 409
    configured = client.post(url + "configure/", {"definition": _create_contact_def(rest_api.base)}, format="json")
    assert configured.json()["state"] == "configured"
    assert client.post(url + "samples/", {"label": "x"}, format="json").status_code == 409  # not validated yet
    assert client.post(url + "warnings/", {"level": "warning", "text": "Emails must be unique."},
                       format="json").json()["warnings"][0]["level"] == "warning"
    tested = client.post(url + "test/", {"args": {"properties__email": "ada@example.com"}}, format="json").json()
    assert tested["state"] == "validated" and tested["test"]["ok"] is True
    assert "ada@example.com" in tested["test"]["preview"]
    assert rest_api.requests[-1].method == "POST" and rest_api.requests[-1].path == "/contacts"
    draft_row = ToolDraft.objects.get(pk=draft["id"])
    assert "ada@example.com" in draft_row.test_full  # the full response is kept apart for review
    sample = client.post(url + "samples/", {"label": "created contact"}, format="json").json()
    assert sample["sample_outputs"][0]["label"] == "created contact"
    finalized = client.post(f"/api/v1/tool-kits/{kit['id']}/finalize/", {}, format="json")
    assert finalized.status_code == 201
    tool = CustomTool.objects.get(organization=org, alias="create_contact")
    assert [w["text"] for w in tool.warnings] == ["Sandbox account.", "Emails must be unique."]
    assert tool.credential_id is not None and tool.kit_name == "Fake Contacts"
    assert ToolDraft.objects.get(pk=draft["id"]).state == "created"
    assert client.post(f"/api/v1/tool-kits/{kit['id']}/drafts/", {"name": "more"}, format="json").status_code == 409


def test_a_failed_test_returns_the_draft_to_configured_with_the_error(kit, rest_api):
    client, session, kit = kit
    draft = client.post(f"/api/v1/tool-kits/{kit['id']}/drafts/", {"name": "Create contact"}, format="json").json()
    url = f"/api/v1/tool-kits/drafts/{draft['id']}/"
    client.post(url + "configure/", {"definition": _create_contact_def(rest_api.base)}, format="json")
    failed = client.post(url + "test/", {"args": {"properties__firstname": "Ada"}}, format="json").json()
    assert failed["state"] == "configured" and failed["test"]["ok"] is False
    assert "Missing required argument(s): properties__email" in failed["test"]["error"]
    failed = client.post(url + "test/", {"args": {"properties__email": ""}}, format="json").json()
    assert failed["state"] == "configured"
    assert client.post(f"/api/v1/tool-kits/{kit['id']}/finalize/", {}, format="json").status_code == 409


def test_an_async_endpoint_is_never_created_without_a_warning(kit, rest_api, org):
    client, session, kit_data = kit
    draft = client.post(f"/api/v1/tool-kits/{kit_data['id']}/drafts/", {"name": "Submit job"}, format="json").json()
    url = f"/api/v1/tool-kits/drafts/{draft['id']}/"
    client.post(url + "configure/", {"definition": {"name": "Submit report", "alias": "submit_report",
                                                    "method": "POST", "url": f"{rest_api.base}/jobs"}}, format="json")
    assert client.post(url + "test/", {}, format="json").json()["test"]["status"] == 202
    # Kit-level warnings exist in this fixture, so clear them to see the rule bite.
    from capabilities.models import ToolKit

    ToolKit.objects.filter(pk=kit_data["id"]).update(warnings=[])
    refused = client.post(f"/api/v1/tool-kits/{kit_data['id']}/finalize/", {}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["details"]["needs_warning"] == ["Submit job"]
    # From validated, a warning can still be attached; the critical note makes it publishable.
    client.post(url + "warnings/", {"level": "critical", "text": "Asynchronous: poll the job."}, format="json")
    assert client.post(f"/api/v1/tool-kits/{kit_data['id']}/finalize/", {}, format="json").status_code == 201


def test_restart_drops_open_kits_but_keeps_created_tools(kit, rest_api, org):
    client, session, kit_data = kit
    client.post(f"/api/v1/tool-kits/{kit_data['id']}/drafts/", {"name": "x"}, format="json")
    restarted = client.post(f"/api/v1/tool-kits/sessions/{session['id']}/restart/", {}, format="json")
    assert restarted.status_code == 200 and restarted.json()["kits"] == []


def test_another_organization_sees_none_of_the_builder_objects(kit, outsider, outsider_org, api_as):
    client, session, kit_data = kit
    draft = client.post(f"/api/v1/tool-kits/{kit_data['id']}/drafts/", {"name": "x"}, format="json").json()
    other = api_as(outsider, outsider_org)
    assert other.get(f"/api/v1/tool-kits/sessions/{session['id']}/").status_code == 404
    assert other.post(f"/api/v1/tool-kits/sessions/{session['id']}/kits/", {"name": "k"}, format="json").status_code == 404
    assert other.post(f"/api/v1/tool-kits/{kit_data['id']}/drafts/", {"name": "y"}, format="json").status_code == 404
    assert other.post(f"/api/v1/tool-kits/{kit_data['id']}/finalize/", {}, format="json").status_code == 404
    assert other.get(f"/api/v1/tool-kits/drafts/{draft['id']}/").status_code == 404
    assert other.post(f"/api/v1/tool-kits/drafts/{draft['id']}/test/", {}, format="json").status_code == 404
    assert other.get("/api/v1/tool-kits/sessions").json()["results"] == []


def test_a_viewer_cannot_start_sessions_or_change_drafts(kit, org, viewer, api_as):
    client, session, kit_data = kit
    draft = client.post(f"/api/v1/tool-kits/{kit_data['id']}/drafts/", {"name": "x"}, format="json").json()
    weak = api_as(viewer, org)
    assert weak.get(f"/api/v1/tool-kits/sessions/{session['id']}/").status_code == 200
    assert weak.post("/api/v1/tool-kits/sessions", {}, format="json").status_code == 403
    assert weak.post(f"/api/v1/tool-kits/drafts/{draft['id']}/configure/", {}, format="json").status_code == 403
    assert weak.post(f"/api/v1/tool-kits/{kit_data['id']}/finalize/", {}, format="json").status_code == 403
