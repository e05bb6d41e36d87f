"""Settings → Data retention and /api/v1/organization/retention: the values in force (the organization's or
the deployment default, labelled), edited by an owner only, checked, audited; weaker roles refused with
nothing changed; an outsider never reaches another organization's values."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from agenticos.tenancy import SESSION_KEY
from governance import retention
from governance.models import RetentionPolicy
from tests import factories
from tests.api.conftest import actor_of
from tests.api.state import TABLES, changed_tables, database_state
from tests.api.test_schema_truth import assert_matches

pytestmark = pytest.mark.django_db

PAGE = "/settings/retention/"
API = "/api/v1/organization/retention"
WEAKER = ["admin", "builder", "member", "viewer"]
WATCHED = (*TABLES, "governance.RetentionPolicy")
VALID = {"transcript_days": "30", "audit_log_days": "", "idle_workspace_days": "0"}


@pytest.fixture(autouse=True)
def _defaults(settings):
    settings.RETENTION_TRANSCRIPT_DAYS = 0
    settings.RETENTION_AUDIT_DAYS = 400
    settings.RETENTION_WORKSPACE_IDLE_DAYS = 90


def signed_in(user, org) -> Client:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


def stored(org) -> tuple | None:
    row = RetentionPolicy.objects.filter(organization=org).first()
    return None if row is None else (row.transcript_days, row.audit_log_days, row.idle_workspace_days)


def changes() -> int:
    return AuditEvent.objects.filter(action="organization.retention_changed").count()


# ------------------------------------------------------------------ the service


def test_the_values_in_force_are_the_organizations_or_the_deployment_default(org, outsider_org):
    RetentionPolicy.objects.create(organization=org, audit_log_days=60, transcript_days=0)
    mine = {row.field: (row.days, row.source) for row in retention.effective_values(org)}
    assert mine == {"transcript_days": (0, "organization"), "audit_log_days": (60, "organization"),
                    "idle_workspace_days": (90, "default")}
    theirs = {row.field: (row.days, row.source) for row in retention.effective_values(outsider_org)}
    assert theirs == {"transcript_days": (0, "default"), "audit_log_days": (400, "default"),
                      "idle_workspace_days": (90, "default")}


@pytest.mark.parametrize("values,field", [
    ({"audit_log_days": 29}, "audit_log_days"), ({"transcript_days": -1}, "transcript_days"),
    ({"idle_workspace_days": 36_501}, "idle_workspace_days"), ({"transcript_days": "ten"}, "transcript_days"),
    ({"transcript_days": 1.5}, "transcript_days"), ({"audit_log_days": True}, "audit_log_days"),
    ({"spend_days": 10}, "spend_days"),
])
def test_a_value_out_of_bounds_is_refused_at_its_field_and_changes_nothing(org, owner, values, field):
    from agenticos.errors import Invalid

    with pytest.raises(Invalid) as refused:
        retention.update_retention(actor=actor_of(owner, org), values=values)
    assert [p["field"] for p in refused.value.details["problems"]] == [field]
    assert stored(org) is None and changes() == 0


def test_an_owner_sets_values_and_the_change_is_audited_with_before_and_after(org, owner):
    retention.update_retention(actor=actor_of(owner, org), values={"audit_log_days": 90, "transcript_days": 14})
    retention.update_retention(actor=actor_of(owner, org), values={"audit_log_days": None})
    assert stored(org) == (14, None, None)
    last = AuditEvent.objects.filter(action="organization.retention_changed").order_by("-id").first()
    assert last.details == {"audit_log_days": {"from": 90, "to": None}} and last.actor_id == owner.pk


# ------------------------------------------------------------------ the console page


def test_an_owner_sees_each_value_in_force_and_where_it_comes_from(org, owner):
    RetentionPolicy.objects.create(organization=org, audit_log_days=60)
    page = signed_in(owner, org).get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    audit = html.split('data-retention="audit_log_days"', 1)[1].split("</div>", 1)[0]
    assert 'data-effective="60"' in audit and 'data-source="organization"' in audit and 'value="60"' in audit
    workspaces = html.split('data-retention="idle_workspace_days"', 1)[1].split("</div>", 1)[0]
    assert 'data-effective="90"' in workspaces and 'data-source="default"' in workspaces
    assert "the deployment default" in workspaces and 'value=""' in workspaces
    transcripts = html.split('data-retention="transcript_days"', 1)[1].split("</div>", 1)[0]
    assert "kept forever" in transcripts
    assert "Never deleted: every budget cap is computed from it" in html
    assert 'href="/settings/retention/"' in html  # the owner's tab


def test_an_owner_saves_values_and_an_empty_field_goes_back_to_the_default(org, owner):
    client = signed_in(owner, org)
    response = client.post(PAGE, VALID)
    assert response.status_code == 302 and response["Location"] == PAGE
    assert stored(org) == (30, None, 0)
    assert changes() == 1
    client.post(PAGE, {**VALID, "transcript_days": ""})
    assert stored(org) == (None, None, 0)


def test_the_page_answers_a_bad_value_at_its_field_and_saves_nothing(org, owner):
    RetentionPolicy.objects.create(organization=org, transcript_days=7)
    response = signed_in(owner, org).post(PAGE, {"transcript_days": "3", "audit_log_days": "10",
                                                 "idle_workspace_days": "soon"})
    assert response.status_code == 422
    html = response.content.decode()
    assert html.count('class="field-error"') == 2
    assert "between 30 and 36500 days" in html.split('data-retention="audit_log_days"', 1)[1].split("</div>", 1)[0]
    assert stored(org) == (7, None, None) and changes() == 0


@pytest.mark.parametrize("role", WEAKER)
def test_a_weaker_role_can_neither_see_nor_change_the_page(org, role):
    person = factories.member(org, role)
    client = signed_in(person, org)
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, VALID).status_code == 403
    assert stored(org) is None and changes() == 0
    assert 'href="/settings/retention/"' not in client.get("/settings/budget/").content.decode()


def test_an_outsider_sees_only_their_own_organization_and_cannot_reach_this_one(org, owner, outsider_org, outsider):
    RetentionPolicy.objects.create(organization=org, audit_log_days=97531)
    own = signed_in(outsider, outsider_org)
    assert "97531" not in own.get(PAGE).content.decode()
    own.post(PAGE, {**VALID, "audit_log_days": "31"})
    assert stored(outsider_org) == (30, 31, 0)
    # A session naming an organization they are not a member of acts in their own one (the session gate lands a
    # person in their first open organization): this organization's values are neither shown nor changed.
    forged = signed_in(outsider, org)
    page = forged.get(PAGE)
    assert page.status_code == 200 and "97531" not in page.content.decode()
    forged.post(PAGE, {**VALID, "audit_log_days": "32"})
    assert stored(outsider_org) == (30, 32, 0)
    assert stored(org) == (None, 97531, None)


# ------------------------------------------------------------------ the API


@pytest.fixture(scope="module")
def schema_doc(django_db_blocker):
    with django_db_blocker.unblock():
        return Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


@pytest.mark.parametrize("role", ["owner", *WEAKER])
def test_every_member_reads_the_values_in_force(org, role, api_as, schema_doc):
    RetentionPolicy.objects.create(organization=org, transcript_days=14)
    response = api_as(factories.member(org, role), org).get(API)
    assert response.status_code == 200
    body = response.json()
    assert body["transcript_days"] == {"in_force_days": 14, "source": "organization", "organization_days": 14,
                                       "default_days": 0, "minimum_days": 1}
    assert body["audit_log_days"]["source"] == "default" and body["audit_log_days"]["in_force_days"] == 400
    assert body["spend_ledger"] == "never_deleted"
    assert_matches(schema_doc, API, "get", "200", body)


def test_an_owner_patches_some_values_and_keeps_the_others(org, owner, api_as, schema_doc):
    client = api_as(owner, org)
    first = client.patch(API, {"audit_log_days": 90, "idle_workspace_days": 0}, format="json")
    assert first.status_code == 200
    assert_matches(schema_doc, API, "patch", "200", first.json())
    second = client.patch(API, {"audit_log_days": None}, format="json")
    assert second.json()["audit_log_days"]["source"] == "default"
    assert stored(org) == (None, None, 0) and changes() == 2


@pytest.mark.parametrize("body", [{"audit_log_days": 5}, {"transcript_days": "x"}, {"spend": 1},
                                  {"transcript_days": 2.5}, [1, 2]])
def test_a_bad_patch_is_a_422_in_the_envelope_and_changes_nothing(org, owner, api_as, body):
    response = api_as(owner, org).patch(API, body, format="json")
    assert response.status_code == 422
    assert set(response.json()["error"]) == {"code", "message", "details"}
    assert stored(org) is None and changes() == 0


@pytest.mark.parametrize("role", WEAKER)
def test_a_weaker_role_may_not_patch_even_with_a_bad_body(org, role, api_as):
    client = api_as(factories.member(org, role), org)
    before = database_state(WATCHED)
    for body in ({"transcript_days": 30}, {"transcript_days": "x"}):
        response = client.patch(API, body, format="json")
        assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    assert changed_tables(before, database_state(WATCHED)) == []


def test_an_outsider_naming_this_organization_is_a_404_and_changes_nothing(org, outsider, api_as):
    RetentionPolicy.objects.create(organization=org, audit_log_days=97531)
    client = api_as(outsider, org)
    before = database_state(WATCHED)
    for response in (client.get(API), client.patch(API, {"audit_log_days": 31}, format="json")):
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert changed_tables(before, database_state(WATCHED)) == [] and stored(org) == (None, 97531, None)


def test_without_credentials_the_endpoint_is_a_401_in_the_envelope(db):
    from rest_framework.test import APIClient

    response = APIClient().get(API)
    assert response.status_code == 401 and "error" in response.json()


def test_the_schema_documents_the_endpoint(schema_doc):
    operations = schema_doc["paths"][API]
    assert {"get", "patch"} <= set(operations)
    assert {"200", "403", "404", "422"} <= set(operations["patch"]["responses"])
