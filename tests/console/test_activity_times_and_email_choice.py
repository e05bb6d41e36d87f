"""The Activity list says each run's time worked apart from its time waiting for a person (issue 44 §7), in a
fixed number of queries; the Notifications page lets each person choose what also comes by e-mail — their own
choice in their own organization only, an unknown kind refused with nothing saved."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Run
from governance.models import Approval, Question
from notifications.models import EmailPreference, Notification
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


def cell(html: str, run, name: str) -> str:
    row = html.split(f'data-run-row="{run.pk}"', 1)[1].split("</tr>", 1)[0]
    return row.split(f"data-{name}>", 1)[1].split("</td>", 1)[0].strip()


def test_each_run_says_its_time_worked_and_waiting_for_a_person(client_as, org, owner, agent):
    start = timezone.now() - timedelta(minutes=5)
    _c, parked = make_turn(org, owner, agent)
    Run.objects.filter(pk=parked.pk).update(started_at=start, finished_at=start + timedelta(seconds=100))
    Approval.objects.create(organization=org, run=parked, tool_call_id="a", tool_id="t", tool_name="t", args={},
                            created_at=start + timedelta(seconds=10), decided_at=start + timedelta(seconds=70))
    Question.objects.create(organization=org, run=parked, asked_user=owner, tool_call_id="q", questions=[],
                            created_at=start + timedelta(seconds=60), answered_at=start + timedelta(seconds=80))
    _c, plain = make_turn(org, owner, agent)
    Run.objects.filter(pk=plain.pk).update(started_at=start, finished_at=start + timedelta(seconds=4))

    html = client_as(owner, org).get("/activity/").content.decode()

    assert '<th scope="col">Worked</th>' in html and '<th scope="col">Waited for a person</th>' in html
    assert cell(html, parked, "run-waited-for-people") == "70.0 s"  # 10→80, the overlap counted once
    assert cell(html, parked, "run-worked") == "30.0 s"
    assert cell(html, plain, "run-waited-for-people") == "—" and cell(html, plain, "run-worked") == "4.0 s"


def test_each_person_chooses_what_also_comes_by_email(client_as, org, member, outsider, outsider_org):
    client = client_as(member, org)
    page = client.get("/notifications/").content.decode()
    assert "data-email-preferences" in page and member.email in page
    assert "A run waits for my decision on a tool call" in page and "approval_requested" not in page.split(
        "data-email-preferences", 1)[1].split("value=", 1)[0]

    response = client.post("/notifications/email", {"kinds": [Notification.Kind.APPROVAL_REQUESTED]})

    assert response.status_code == 302
    assert EmailPreference.objects.get(user=member, organization=org).kinds == ["approval_requested"]
    assert 'value="approval_requested" checked' in client.get("/notifications/").content.decode()
    client_as(outsider, outsider_org).post("/notifications/email", {"kinds": [Notification.Kind.ROLLOUT_ROLLED_BACK]})
    assert EmailPreference.objects.get(user=member, organization=org).kinds == ["approval_requested"]
    assert EmailPreference.objects.get(user=outsider, organization=outsider_org).kinds == ["rollout_rolled_back"]

    assert client.post("/notifications/email", {"kinds": ["approval_requested", "all"]}).status_code == 422
    assert EmailPreference.objects.get(user=member, organization=org).kinds == ["approval_requested"]
    client.post("/notifications/email", {})
    assert EmailPreference.objects.get(user=member, organization=org).kinds == []
