"""The Toolbox's server side: the list rows, labels written for people, and a save that never says "saved" alone
over a setting that would not publish (the banner without scripts, the JSON answer of the one Save)."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "clock"}])


def test_every_selectable_capability_is_a_row_with_its_switch(client_as, org, builder, agent):
    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    assert 'data-toolbox-row="clock"' in page and 'data-toolbox-toggle="clock"' in page
    row = page.split('data-toolbox-row="clock"')[1].split("</li>")[0]
    assert "checked" in row.split('data-toolbox-toggle="clock"')[1].split(">")[0]
    assert 'data-toolbox-save' in page


def test_settings_are_labelled_for_people(client_as, org, builder, agent):
    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    for machine in ("Include Execute", "Timeout Secs", "Max Memory Mb", "Enable Subtasks"):
        assert machine not in page
    assert "Let it run shell commands" in page and "Time limit (seconds)" in page


def test_a_saved_setting_that_would_not_publish_is_a_warning_not_a_saved_banner(client_as, org, builder, agent):
    client = client_as(builder, org)
    response = client.post(f"/agents/{agent.pk}/toolbox/code_execution",
                           {"enabled": "on", "config.timeout_secs": "999"}, follow=True)
    page = response.content.decode()
    assert "Calculations saved in the draft." not in page
    assert "needs fixing before publishing" in page
    field = page.split('data-config-field="timeout_secs"')[1].split("</div>")[0]
    assert "data-field-error" in field


def test_the_one_save_answers_json_with_the_problems_at_their_setting(client_as, org, builder, agent):
    client = client_as(builder, org)
    url = f"/agents/{agent.pk}/toolbox/code_execution"
    bad = client.post(url, {"enabled": "on", "config.timeout_secs": "999"}, HTTP_ACCEPT="application/json")
    assert bad.status_code == 200 and bad.json()["saved"] is True
    assert set(bad.json()["problems"]) == {"config.timeout_secs"}
    good = client.post(url, {"enabled": "on", "config.timeout_secs": "30"}, HTTP_ACCEPT="application/json")
    assert good.json() == {"saved": True, "problems": {}, "also_bound": []}
    binding = next(b for b in Agent.objects.get(pk=agent.pk).draft_spec["capabilities"] if b["id"] == "code_execution")
    assert binding["config"] == {"timeout_secs": 30}


def test_a_viewer_saves_nothing_through_the_json_save(client_as, org, viewer, agent):
    before = dict(agent.draft_spec)
    response = client_as(viewer, org).post(f"/agents/{agent.pk}/toolbox/code_execution", {"enabled": "on"},
                                           HTTP_ACCEPT="application/json")
    assert response.status_code == 403
    agent.refresh_from_db()
    assert agent.draft_spec == before


def test_another_organizations_toolbox_is_a_404(client_as, outsider_org, outsider, agent):
    response = client_as(outsider, outsider_org).post(f"/agents/{agent.pk}/toolbox/code_execution", {"enabled": "on"},
                                                      HTTP_ACCEPT="application/json")
    assert response.status_code == 404
