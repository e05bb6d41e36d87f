"""GET /api/v1/audit and its exports: only roles that may read audit, only the organization's own events, filters
by actor, action, object and time, cursor pages that neither skip nor repeat, CSV that a spreadsheet cannot run
and JSON Lines; Settings → Audit in the console with the same filters."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from agenticos import audit
from agenticos.models import AuditEvent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail(org, owner, member, outsider, outsider_org):
    """Events of Acme (with a formula-looking name) and one of the outsider's organization."""
    now = timezone.now()
    rows = []
    for i in range(7):
        rows.append(audit.record(actor=owner, organization=org, action="api_key.created", target_type="apikey",
                                 target_id=str(i), target_name=f"key {i}"))
    rows.append(audit.record(actor=member, organization=org, action="member.role_changed", target_type="membership",
                             target_id="42", target_name="=HYPERLINK(\"http://evil\")", details={"to": "viewer"}))
    rows.append(audit.record(actor=None, organization=org, action="signin.failed", target_type="user",
                             target_name="ada@acme.com", details={"method": "sso"}))
    AuditEvent.objects.filter(pk=rows[0].pk).update(created_at=now - timedelta(days=10))
    audit.record(actor=outsider, organization=outsider_org, action="api_key.created", target_name="foreign key")
    return rows


def test_only_roles_that_read_audit_get_it(org, owner, admin_user, builder, member, viewer, api_as, trail):
    assert api_as(owner, org).get("/api/v1/audit").status_code == 200
    assert api_as(admin_user, org).get("/api/v1/audit").status_code == 200
    for person in (builder, member, viewer):
        answer = api_as(person, org).get("/api/v1/audit")
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
        assert api_as(person, org).get("/api/v1/audit/export?as=csv").status_code == 403
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_an_outsider_sees_none_of_it(org, outsider, outsider_org, api_as, trail):
    assert api_as(outsider, org).get("/api/v1/audit").status_code == 404
    theirs = api_as(outsider, outsider_org).get("/api/v1/audit").json()["results"]
    assert [e["target_name"] for e in theirs] == ["foreign key"]
    exported = b"".join(api_as(outsider, outsider_org).get("/api/v1/audit/export?as=jsonl").streaming_content)
    assert b"key 1" not in exported and b"foreign key" in exported


def test_filters_by_actor_action_object_and_time(org, owner, member, api_as, trail):
    client = api_as(owner, org)

    def names(query: str) -> list[str]:
        answer = client.get(f"/api/v1/audit?{query}")
        assert answer.status_code == 200, answer.content
        return [e["action"] for e in answer.json()["results"]]

    assert names(f"actor={member.email}") == ["member.role_changed"]
    assert names(f"actor={member.pk}") == ["member.role_changed"]
    # Digits int() cannot read ('³' is a digit to str.isdigit) are a name nobody has, not a server error.
    assert names("actor=%C2%B3") == [] and names("actor=%E2%91%A0") == []
    assert names("action=signin.failed") == ["signin.failed"]
    assert set(names("action=member.")) == {"member.role_changed"}
    assert names("object=membership:42") == ["member.role_changed"]
    assert len(names("object=apikey")) == 7
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert len(names(f"action=api_key.created&since={since.replace('+', '%2B')}")) == 6
    until = (timezone.now() - timedelta(days=1)).isoformat().replace("+", "%2B")
    assert names(f"until={until}") == ["api_key.created"]
    bad = client.get("/api/v1/audit?since=yesterday")
    assert bad.status_code == 422 and bad.json()["error"]["details"]["problems"][0]["field"] == "since"


def test_cursor_pages_walk_every_event_once_newest_first(org, owner, api_as, trail, django_assert_max_num_queries):
    client = api_as(owner, org)
    seen, url = [], "/api/v1/audit?limit=3"
    while url:
        with django_assert_max_num_queries(8):
            page = client.get(url).json()
        seen += [e["id"] for e in page["results"]]
        url = page["next"]
    expected = list(AuditEvent.objects.filter(organization=org).order_by("-created_at", "-id")
                    .values_list("id", flat=True))
    assert seen == expected and len(seen) == 9


def test_the_csv_export_is_a_spreadsheet_that_runs_nothing(org, owner, api_as, trail):
    answer = api_as(owner, org).get("/api/v1/audit/export?as=csv&action=member.")
    assert answer.status_code == 200 and answer["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert len(rows) == 1
    assert rows[0]["target_name"] == "'=HYPERLINK(\"http://evil\")"
    assert json.loads(rows[0]["details"]) == {"to": "viewer"}
    exported = AuditEvent.objects.get(action="audit.exported")
    assert exported.details == {"as": "csv", "filters": {"action": "member."}}


def test_the_json_lines_export_has_one_event_per_line(org, owner, api_as, trail):
    answer = api_as(owner, org).get("/api/v1/audit/export?as=jsonl")
    lines = b"".join(answer.streaming_content).decode().splitlines()
    events = [json.loads(line) for line in lines]
    assert len(events) == 9 and {e["action"] for e in events} >= {"signin.failed", "api_key.created"}
    assert api_as(owner, org).get("/api/v1/audit/export?as=xml").status_code == 422


def test_the_console_audit_page_filters_and_exports(org, owner, builder, trail):
    client = Client()
    client.force_login(owner)
    page = client.get("/settings/audit/?action=signin.failed")
    assert page.status_code == 200 and page.content.count(b"data-audit-event=") == 1
    export = client.get("/settings/audit/export?as=jsonl&action=signin.failed")
    assert [json.loads(line)["action"] for line in b"".join(export.streaming_content).splitlines()] == [
        "signin.failed"]
    weaker = Client()
    weaker.force_login(builder)
    assert weaker.get("/settings/audit/").status_code == 403
    assert weaker.get("/settings/audit/export?as=csv").status_code == 403


def test_api_key_creation_and_revocation_are_audit_events(org, owner, api_as):
    client = api_as(owner, org)
    created = client.post("/api/v1/api-keys", {"name": "ci"}).json()
    client.delete(f"/api/v1/api-keys/{created['id']}")
    actions = [e["action"] for e in client.get("/api/v1/audit?object=apikey").json()["results"]]
    assert actions == ["api_key.revoked", "api_key.created"]
    assert created["key"] not in str(list(AuditEvent.objects.values_list("details", flat=True)))


def test_a_custom_role_holding_audit_read_reads_it(org, owner, api_as, trail):
    from identity import roles
    from tests.api.conftest import actor_of

    auditor = roles.create_role(actor=actor_of(owner, org), name="Auditor", permissions=["audit:read"])
    person = factories.member(org, auditor.key)
    assert api_as(person, org).get("/api/v1/audit").status_code == 200
