"""The Usage page: spend (the ledger budgets count) and runs per agent, person, model and surface over a
chosen period, as charts and as CSV. Admins see the organization's; a member only their own runs; an
outsider none of another organization's rows."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Run
from governance.models import SpendEntry
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


def spent(run, model: str, cost: str, *, days_ago: int = 0) -> SpendEntry:
    moment = timezone.now() - timedelta(days=days_ago)
    Run.objects.filter(pk=run.pk).update(created_at=moment)
    return SpendEntry.objects.create(organization=run.organization, agent=run.agent, run=run, surface=run.surface,
                                     model=model, input_tokens=100, output_tokens=10, cost_usd=Decimal(cost),
                                     created_at=moment)


@pytest.fixture
def ledger(org, owner, member, agent, outsider, outsider_org, outsider_agent):
    _c, run1 = make_turn(org, owner, agent)
    spent(run1, "gpt-4o-mini", "0.50")
    spent(run1, "claude-haiku", "0.25")
    _c, run2 = make_turn(org, member, agent)
    spent(run2, "gpt-4o-mini", "1.00")
    _c, old = make_turn(org, member, agent)
    spent(old, "gpt-4o-mini", "9.00", days_ago=60)
    _c, theirs = make_turn(outsider_org, outsider, outsider_agent)
    spent(theirs, "foreign-model", "7.00")
    return {"run1": run1, "run2": run2, "old": old, "theirs": theirs}


def rows(client, query: str = "") -> dict[str, dict[str, dict[str, str]]]:
    response = client.get(f"/usage/?format=csv{query}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment;")
    found: dict[str, dict[str, dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(response.content.decode())):
        found.setdefault(row["dimension"], {})[row["label"]] = row
    return found


def test_an_admin_sees_the_organizations_spend_and_runs_per_dimension(client_as, org, owner, member, ledger):
    found = rows(client_as(owner, org))
    assert {k: (v["runs"], v["spend_usd"]) for k, v in found["model"].items()} == {
        "gpt-4o-mini": ("2", "1.50000000"), "claude-haiku": ("1", "0.25000000")}
    assert {k: (v["runs"], v["spend_usd"]) for k, v in found["person"].items()} == {
        owner.email: ("1", "0.75000000"), member.email: ("1", "1.00000000")}
    assert {k: v["runs"] for k, v in found["agent"].items()} == {"Helper": "2"}
    assert {k: v["spend_usd"] for k, v in found["surface"].items()} == {"Web chat": "1.75000000"}
    # Another organization's rows and this one's runs outside the period are nowhere.
    text = str(found)
    assert "foreign-model" not in text and "Foreign" not in text and "9.00" not in text


def test_the_period_chooses_the_rows(client_as, org, owner, ledger):
    since = (timezone.localdate() - timedelta(days=90)).isoformat()
    until = (timezone.localdate() - timedelta(days=30)).isoformat()
    found = rows(client_as(owner, org), f"&since={since}&until={until}")
    assert {k: v["spend_usd"] for k, v in found["model"].items()} == {"gpt-4o-mini": "9.00000000"}


def test_a_member_sees_only_their_own_runs(client_as, org, member, ledger):
    found = rows(client_as(member, org))
    assert list(found["person"]) == [member.email]
    assert {k: v["spend_usd"] for k, v in found["model"].items()} == {"gpt-4o-mini": "1.00000000"}


def test_an_outsider_sees_none_of_another_organizations_rows(client_as, org, outsider, outsider_org, ledger):
    page = client_as(outsider, outsider_org).get("/usage/").content.decode()
    assert "foreign-model" in page and "gpt-4o-mini" not in page and "Helper" not in page
    found = rows(client_as(outsider, outsider_org))
    assert list(found["model"]) == ["foreign-model"]
    # Naming the other organization in the session does not switch to it.
    assert "gpt-4o-mini" not in client_as(outsider, org).get("/usage/").content.decode()


def test_a_viewer_who_may_not_run_gets_403_and_no_usage_link(client_as, org, viewer, member, ledger):
    client = client_as(viewer, org)
    assert client.get("/usage/").status_code == 403
    assert 'href="/usage/"' not in client.get("/").content.decode()
    assert 'href="/usage/"' in client_as(member, org).get("/").content.decode()


def test_the_page_draws_charts_from_the_same_rows(client_as, org, owner, ledger):
    response = client_as(owner, org).get("/usage/")
    page = response.content.decode()
    assert response.status_code == 200
    for dimension in ("agent", "person", "model", "surface", "daily"):
        assert f'data-usage-chart="{dimension}"' in page
    assert 'id="usage-charts"' in page and "$1.7500" in page


def test_a_backwards_or_too_long_period_is_refused_and_the_default_shown(client_as, org, owner, ledger):
    client = client_as(owner, org)
    assert client.get("/usage/?since=2026-05-01&until=2026-04-01").status_code == 422
    assert client.get("/usage/?since=2020-01-01&until=2026-01-01").status_code == 422


def test_a_formula_in_a_name_is_not_a_formula_in_the_csv(client_as, org, owner):
    agent = factories.published_agent(org, owner, name="=HYPERLINK(\"http://x\")")
    _c, run = make_turn(org, owner, agent)
    spent(run, "m", "0.1")
    found = rows(client_as(owner, org))
    assert list(found["agent"]) == ["'=HYPERLINK(\"http://x\")"]


def test_the_usage_page_does_not_grow_its_queries_with_its_rows(client_as, org, owner, member, agent):
    client = client_as(owner, org)
    _c, run = make_turn(org, owner, agent)
    spent(run, "a", "0.1")
    with CaptureQueriesContext(connection) as small:
        client.get("/usage/")
    for i in range(6):
        other = factories.published_agent(org, owner, name=f"Agent {i}")
        _c, run = make_turn(org, factories.member(org), other)
        spent(run, f"model-{i}", "0.1")
    with CaptureQueriesContext(connection) as large:
        client.get("/usage/")
    assert len(large) == len(small)
