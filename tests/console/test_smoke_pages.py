"""Every screen renders for every role that may open it, and the dashboard counts this month's work."""

from __future__ import annotations

from decimal import Decimal

import pytest

from governance.models import SpendEntry
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db

SCREENS = ["/", "/agents/", "/chat/", "/knowledge/", "/activity/", "/settings/", "/settings/chat-accounts/", "/settings/secrets/",
           "/settings/models/", "/settings/members/", "/settings/budget/"]


@pytest.mark.parametrize("role", ["owner", "admin", "builder", "member", "viewer"])
def test_every_screen_renders_for_every_role(client_as, org, agent, role):
    from tests import factories

    person = factories.member(org, role)
    client = client_as(person, org)
    for path in SCREENS:
        assert client.get(path).status_code == 200, path
    assert client.get("/approvals/").status_code == (200 if role in ("owner", "admin") else 403)
    assert client.get("/settings/api-keys/").status_code == (403 if role == "viewer" else 200)
    assert client.get(f"/agents/{agent.pk}/").status_code == 200


def test_the_dashboard_counts_runs_per_surface_and_spend_this_month(client_as, org, owner, agent):
    _c, run = make_turn(org, owner, agent)
    SpendEntry.objects.create(organization=org, agent=agent, run=run, surface="web", cost_usd=Decimal("1.25"))
    page = client_as(owner, org).get("/").content.decode()
    assert 'data-runs-this-month>1<' in page
    assert "data-spend-this-month>$1.25<" in page
    web = page.split("Web chat</span>")[1].split("</div>")[1]
    assert "<span>1</span>" in web


def test_the_chat_accounts_screen_is_an_honest_empty_state(client_as, org, owner):
    page = client_as(owner, org).get("/settings/chat-accounts/").content.decode()
    assert "data-empty-state" in page and "<table" not in page


def test_activity_filters_by_agent_surface_status_and_dates(client_as, org, owner, agent):
    from django.utils import timezone

    from agents.models import Run
    from tests import factories

    other = factories.published_agent(org, owner, name="Other")
    _c, completed = make_turn(org, owner, agent)
    _c, failed = make_turn(org, owner, other, status="failed")
    Run.objects.filter(pk=failed.pk).update(surface="api")
    client = client_as(owner, org)

    def shown(**params):
        page = client.get("/activity/", params).content.decode()
        return {run.pk for run in (completed, failed) if f'data-run-row="{run.pk}"' in page}

    assert shown() == {completed.pk, failed.pk}
    assert shown(agent=str(agent.pk)) == {completed.pk}
    assert shown(surface="api") == {failed.pk}
    assert shown(status="completed") == {completed.pk}
    today = timezone.localdate().isoformat()
    assert shown(since=today, until=today) == {completed.pk, failed.pk}
    assert shown(until="2000-01-01") == set()
    assert client.get("/activity/", {"agent": "not-a-uuid"}).status_code == 404
