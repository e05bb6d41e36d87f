"""The Builder's rollout panel (issue 42): who may publish starts, advances, pauses, promotes and aborts a rollout
from the Versions section and sees both versions side by side; a weaker role sees it read-only and is refused;
an outsider gets 404 and nothing changes. Then the same in a real browser at 1440 and 390 px."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent, Membership
from agents import rollouts
from agents import services as agents
from agents.models import Environment, Rollout
from tests import factories
from tests.api.conftest import actor_of
from tests.api.state import changed_tables, database_state
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS


@pytest.fixture
def two_versions(org, owner):
    agent = factories.published_agent(org, owner, name="Helper")
    agents.update_agent(actor=actor_of(owner, org), agent=agent,
                        spec={**agent.draft_spec, "instructions": "The candidate."})
    agents.publish_agent(actor=actor_of(owner, org), agent=agent)
    return agent


@pytest.mark.django_db
def test_an_owner_starts_steps_and_ends_a_rollout_from_the_builder(client_as, org, owner, two_versions):
    client = client_as(owner, org)
    page = client.get(f"/agents/{two_versions.pk}/").content.decode()
    assert "data-rollout-start" in page and '<option value="2">v2</option>' in page
    started = client.post(f"/agents/{two_versions.pk}/rollouts",
                          {"candidate_version": "2", "share": "10", "steps": "25, 50%, 100", "step_minutes": "",
                           "failure_multiple": "2", "cost_increase_pct": "", "min_runs": "5"}, follow=True)
    rollout = Rollout.objects.get()
    assert (rollout.share, rollout.steps, rollout.step_minutes, rollout.cost_increase_pct) == (10, [25, 50, 100],
                                                                                             None, None)
    html = started.content.decode()
    assert "v2 now serves 10 % of new conversations" in html and "data-rollout-metrics" in html
    assert "Not enough runs yet" in html and "Runs with a rejected approval" in html

    client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/advance", {"share": ""})
    rollout.refresh_from_db()
    assert rollout.share == 25
    client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/pause")
    rollout.refresh_from_db()
    assert rollout.status == "paused"
    backwards = client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/advance", {"share": "5"}, follow=True)
    assert "moves up from 25" in backwards.content.decode()
    client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/promote")
    rollout.refresh_from_db()
    assert rollout.status == "promoted"
    assert Environment.objects.get(agent=two_versions, name="production").version.number == 2
    assert {"rollout.started", "rollout.advanced", "rollout.paused", "rollout.promoted"} <= set(
        AuditEvent.objects.values_list("action", flat=True))
    after = client.get(f"/agents/{two_versions.pk}/").content.decode()
    assert "data-rollout-history" in after and "Promoted" in after


@pytest.mark.django_db
def test_a_bad_form_is_refused_with_a_message_and_starts_nothing(client_as, org, owner, two_versions):
    client = client_as(owner, org)
    for form, message in [({"candidate_version": "2", "share": "ten"}, "Write a whole number"),
                          ({"candidate_version": "2", "share": "10", "steps": "5"}, "Each step is a share above"),
                          ({"candidate_version": "2", "share": "10", "steps": "25, x"}, "percentages separated"),
                          ({"candidate_version": "2", "share": "10", "failure_multiple": "0.5"}, "at least 1")]:
        response = client.post(f"/agents/{two_versions.pk}/rollouts", form, follow=True)
        assert response.status_code == 200 and message in response.content.decode(), form
    assert not Rollout.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["member", "viewer", "builder"])
def test_who_may_not_publish_sees_it_read_only_and_is_refused(client_as, org, owner, two_versions, role):
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=two_versions, environment="production",
                                     candidate=2, share=20)
    weaker = factories.member(org, role)
    client = client_as(weaker, org)
    page = client.get(f"/agents/{two_versions.pk}/")
    if page.status_code == 200:  # who may see the agent sees the rollout, without its buttons
        html = page.content.decode()
        assert "data-rollout-metrics" in html and "data-rollout-abort" not in html
    before = database_state()
    assert client.post(f"/agents/{two_versions.pk}/rollouts", {"candidate_version": "2", "share": "5"}
                       ).status_code == 403
    for action in ("pause", "advance", "promote", "abort"):
        assert client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/{action}").status_code == 403, action
    assert changed_tables(before, database_state()) == []


@pytest.mark.django_db
def test_an_outsider_gets_404_and_nothing_changes(client_as, org, owner, two_versions, outsider, outsider_org):
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=two_versions, environment="production",
                                     candidate=2, share=20)
    client = client_as(outsider, outsider_org)
    own = factories.published_agent(outsider_org, outsider, name="Theirs")
    before = database_state()
    assert client.post(f"/agents/{two_versions.pk}/rollouts", {"candidate_version": "2", "share": "5"}
                       ).status_code == 404
    for action in ("pause", "advance", "promote", "abort", "no-such-action"):
        assert client.post(f"/agents/{two_versions.pk}/rollouts/{rollout.pk}/{action}").status_code == 404, action
    # Their own agent does not reach this organization's rollout either.
    assert client.post(f"/agents/{own.pk}/rollouts/{rollout.pk}/abort").status_code == 404
    assert changed_tables(before, database_state()) == []
    rollout.refresh_from_db()
    assert rollout.status == "active"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_the_rollout_panel_in_a_browser(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper")
    agents.update_agent(actor=actor_of(owner, org), agent=agent, spec={**agent.draft_spec, "instructions": "New."})
    agents.publish_agent(actor=actor_of(owner, org), agent=agent)
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(30_000)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/#rollout")
    panel = page.locator("[data-rollout-panel]")
    panel.get_by_label("Share of new conversations (%)").fill("20")
    panel.get_by_label("Then move through (%, comma-separated; 100 promotes)").fill("50, 100")
    panel.get_by_role("button", name="Start the rollout").click()
    page.wait_for_selector("[data-rollout-metrics]")
    assert "v2 serves 20 % of new conversations" in panel.inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"rollout-panel-{width}.png"), full_page=False)
    panel.get_by_role("button", name="Advance").click()
    page.wait_for_selector("[data-rollout-status]")
    assert "serves 50 %" in page.locator("[data-rollout-panel]").inner_text()
    page.locator("[data-rollout-panel]").get_by_role("button", name="Abort").click()
    page.wait_for_selector("[data-rollout-history]")
    assert "Aborted" in page.locator("[data-rollout-history]").inner_text()
    assert Rollout.objects.get().status == "aborted"
    assert problems == []
    page.close()
