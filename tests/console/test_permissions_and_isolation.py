"""Every screen enforces the API's permissions (a weaker role sees no edit controls and its POST is refused)
and every view answers 404 for another organization's objects."""

from __future__ import annotations

import pytest

from agenticos.models import ApiKey, Membership, Organization, Secret
from agenticos.tenancy import actor_for_membership
from agents.models import ModelProfile
from governance.models import Approval
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


def body(response) -> str:
    return response.content.decode().split('id="main"', 1)[1]


def test_signed_out_people_are_sent_to_sign_in(client, org):
    for path in ("/", "/chat/", "/agents/", "/approvals/", "/activity/", "/settings/", "/settings/secrets/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), path


@pytest.mark.parametrize("path,form", [
    ("/settings/secrets/", "Seal the secret"),
    ("/settings/models/", "Create the profile"),
    ("/settings/members/", "Send the invitation"),
    ("/settings/budget/", "Save the budget"),
])
def test_a_viewer_sees_settings_without_edit_controls(client_as, org, viewer, path, form):
    response = client_as(viewer, org).get(path)
    assert response.status_code == 200
    assert form not in body(response)


def test_a_viewers_settings_posts_are_refused_and_change_nothing(client_as, org, owner, viewer):
    client = client_as(viewer, org)
    secret = factories.secret(org, name="openai")
    membership = Membership.objects.get(user=owner, organization=org)
    budget = Organization.objects.get(pk=org.pk).monthly_budget_usd
    assert client.post("/settings/secrets/", {"name": "x", "value": "y"}).status_code == 403
    assert client.post(f"/settings/secrets/{secret.pk}/rotate", {"value": "new"}).status_code == 403
    assert client.post(f"/settings/secrets/{secret.pk}/delete").status_code == 403
    assert client.post("/settings/models/", {"label": "x", "provider": "demo", "model": "m"}).status_code == 403
    assert client.post("/settings/members/", {"email": "a@example.com", "role": "member"}).status_code == 403
    assert client.post(f"/settings/members/{membership.pk}", {"action": "remove"}).status_code == 403
    assert client.post("/settings/budget/", {"monthly_usd": "1"}).status_code == 403
    assert client.get("/settings/api-keys/").status_code == 403
    assert Secret.objects.filter(organization=org).count() == 1
    assert not ModelProfile.objects.filter(organization=org, label="x").exists()
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert Organization.objects.get(pk=org.pk).monthly_budget_usd == budget


def test_a_member_has_no_approvals_queue_and_cannot_decide(client_as, org, owner, member, agent):
    _conversation, run = make_turn(org, owner, agent, status="awaiting_approval")
    approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="create_chart",
                                       tool_name="create_chart", args={"title": "x"})
    client = client_as(member, org)
    assert "Approvals" not in client.get("/").content.decode().split("</nav>")[0]
    assert client.get("/approvals/").status_code == 403
    assert client.post(f"/approvals/{approval.pk}/decide", {"decision": "approve"}).status_code == 403
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_viewer_cannot_chat(client_as, org, viewer, agent):
    page = client_as(viewer, org).get("/chat/").content.decode()
    assert "data-composer" not in page and "can read conversations but not run agents" in page


def test_an_admin_decides_from_the_queue_and_the_parked_run_continues(client_as, org, owner, admin_user, agent):
    _conversation, run = make_turn(org, owner, agent, status="awaiting_approval")
    approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="create_chart",
                                       tool_name="create_chart", args={"title": "Q3", "x_values": [1, 2]})
    client = client_as(admin_user, org)
    page = client.get("/approvals/").content.decode()
    assert "&quot;title&quot;: &quot;Q3&quot;" in page and "Approve" in page
    response = client.post(f"/approvals/{approval.pk}/decide", {"decision": "approve"},
                           HTTP_ACCEPT="application/json")
    assert response.json() == {"status": "approved", "run_id": str(run.pk)}
    run.refresh_from_db()
    assert run.status == "queued"
    # A stale card deciding again is told what was decided, not refused (the REST API still answers 409)…
    again = client.post(f"/approvals/{approval.pk}/decide", {"decision": "reject"}, HTTP_ACCEPT="application/json")
    assert again.status_code == 200
    assert again.json() == {"status": "approved", "run_id": str(run.pk), "already_decided": True,
                            "message": "This call was already approved."}
    approval.refresh_from_db()
    assert approval.status == "approved"  # …and changed nothing
    api = client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "reject"}, content_type="application/json")
    assert api.status_code == 409


# ------------------------------------------------------------------ outsiders


def test_another_organizations_objects_are_404_on_every_view(client_as, org, owner, outsider_org, outsider,
                                                               outsider_agent):
    conversation, run = make_turn(outsider_org, outsider, outsider_agent, status="awaiting_approval")
    approval = Approval.objects.create(organization=outsider_org, run=run, tool_call_id="c1", tool_id="t",
                                       tool_name="t", args={})
    secret = factories.secret(outsider_org, name="theirs")
    key = ApiKey.objects.create(organization=outsider_org, user=outsider, name="k", prefix="p", key_hash="h" * 64)
    their_membership = Membership.objects.get(user=outsider)
    client = client_as(owner, org)
    assert client.get(f"/chat/{conversation.pk}/").status_code == 404
    assert client.get(f"/chat/{conversation.pk}/turns.json").status_code == 404
    assert client.get(f"/activity/runs/{run.pk}/").status_code == 404
    assert client.post(f"/approvals/{approval.pk}/decide", {"decision": "approve"}).status_code == 404
    assert client.post(f"/settings/secrets/{secret.pk}/rotate", {"value": "x"}).status_code == 404
    assert client.post(f"/settings/secrets/{secret.pk}/delete").status_code == 404
    assert client.post(f"/settings/api-keys/{key.pk}/revoke").status_code == 404
    assert client.post(f"/settings/members/{their_membership.pk}", {"action": "remove"}).status_code == 404
    assert client.post("/organizations/switch/", {"organization": str(outsider_org.pk)}).status_code == 404
    assert client.post("/settings/models/", {"delete": str(factories.model_profile(outsider_org).pk)}).status_code == 404
    # Lists never show them either.
    for path in ("/chat/", "/activity/", "/approvals/", "/agents/", "/settings/secrets/", "/settings/members/"):
        page = client.get(path).content.decode()
        assert str(run.pk) not in page and "Foreign" not in page and "theirs" not in page
        assert outsider.email not in page, path
    approval.refresh_from_db()
    assert approval.status == "pending" and Secret.objects.filter(pk=secret.pk).exists()


def test_a_member_sees_only_their_own_runs_in_activity(client_as, org, owner, member, agent):
    _c, owners_run = make_turn(org, owner, agent)
    _c, members_run = make_turn(org, member, agent)
    page = client_as(member, org).get("/activity/").content.decode()
    assert str(members_run.pk) in page and str(owners_run.pk) not in page
    assert client_as(member, org).get(f"/activity/runs/{owners_run.pk}/").status_code == 404


def test_switching_organization_changes_what_every_screen_shows(client_as, org, owner, outsider_org):
    Membership.objects.create(organization=outsider_org, user=owner, role="viewer")
    client = client_as(owner, org)
    assert client.post("/organizations/switch/", {"organization": str(outsider_org.pk)}).status_code == 302
    page = client.get("/").content.decode()
    assert "viewer" in page
    actor = actor_for_membership(Membership.objects.get(user=owner, organization=outsider_org))
    assert actor.role == "viewer"
