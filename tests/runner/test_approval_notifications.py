"""Nobody misses an approval (issue 44 §7): a run parked on a gated call tells everyone who may decide it (the
bell), the nav's Approvals link counts what waits, and the run's page says the time waiting for a person apart
from the time worked. Weaker roles and another organization are told nothing and see no count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from agenticos.tenancy import SESSION_KEY
from agents.models import Run
from governance import services as governance
from governance.models import Approval
from notifications.models import Notification
from tests import factories
from tests.runner.conftest import actor_of
from tests.runner.test_approvals import gated_agent, two_charts_model  # noqa: F401  (a fixture)
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


def _page(user, org, path: str) -> str:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return response.content.decode()


def test_a_parked_run_notifies_every_decider_and_nobody_else(org, owner, member, viewer, gated_agent,  # noqa: F811
                                                              scripted_model, outsider):
    admin = factories.member(org, "admin")
    builder = factories.member(org, "builder")
    suspended = factories.member(org, "admin")
    suspended.memberships.filter(organization=org).update(is_suspended=True)
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run = start(org, member, agent, version)
    run_now(run)

    told = Notification.objects.filter(kind=Notification.Kind.APPROVAL_REQUESTED)
    assert sorted(told.values_list("recipient_id", flat=True)) == sorted([owner.pk, admin.pk])
    note = told.get(recipient=owner)
    assert note.organization_id == org.pk and note.link == "/approvals/"
    assert agent.name in note.text and "create_chart" in note.text and member.email in note.text
    for user in (member, viewer, builder, suspended, outsider):
        assert not Notification.objects.filter(recipient=user).exists()


def test_the_nav_counts_waiting_calls_for_deciders_only(org, owner, member, gated_agent, scripted_model,  # noqa: F811
                                                        outsider, outsider_org):
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run_now(start(org, member, agent, version))
    assert governance.pending_count(actor_of(owner, org)) == 1

    home = _page(owner, org, "/")
    assert 'data-approvals-count>1<' in home and "Approvals: 1 waiting" in home
    assert "data-approvals-count" not in _page(member, org, "/")  # no Approvals link, no count
    assert governance.pending_count(actor_of(member, org)) == 0
    assert "data-approvals-count" not in _page(outsider, outsider_org, "/")
    assert governance.pending_count(actor_of(outsider, outsider_org)) == 0


def test_a_custom_role_that_may_decide_is_told_too(org, owner, gated_agent, scripted_model):  # noqa: F811
    from identity.models import CustomRole

    role = CustomRole.objects.create(organization=org, name="Reviewer", permissions=["agents:view", "approvals:decide"])
    reviewer = factories.member(org, f"custom:{role.pk}")
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run_now(start(org, owner, agent, version))
    assert Notification.objects.filter(recipient=reviewer, kind=Notification.Kind.APPROVAL_REQUESTED).count() == 1


def test_the_run_page_says_time_waiting_for_a_person_apart_from_time_worked(org, owner, gated_agent,  # noqa: F811
                                                                             scripted_model):
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    # The call waited an hour for its decision, inside a run that took an hour and ten seconds.
    began = timezone.now() - timedelta(hours=2)
    Run.objects.filter(pk=run.pk).update(started_at=began, finished_at=began + timedelta(hours=1, seconds=10),
                                         created_at=began)
    Approval.objects.filter(run=run).update(created_at=began + timedelta(seconds=5),
                                            decided_at=began + timedelta(hours=1, seconds=5), status="approved")
    page = _page(owner, org, f"/activity/runs/{run.pk}/")
    assert "Waited 3600.00 s for a person" in page
    assert "Worked 10.00 s" in page
