"""Every setting the spec has gets a field in the Builder: the model settings (temperature, top P, longest answer,
time limit per request) and most steps, saved into the draft, refused at their field with the value as typed;
the Toolbox lists every capability by category with Advanced apart; the publish notice names each problem's field
and links to it; and a form's POST address answers a reload by going back to its page, never a bare 405."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "clock"}])


def basics(agent, **fields):
    data = {"name": agent.name, "instructions": "Be brief.", "model_profile_id": agent.draft_spec["model_profile_id"],
            "budget": "", "temperature": "", "top_p": "", "max_tokens": "", "timeout_secs": "", "max_steps": "20"}
    return {**data, **fields}


def test_model_settings_and_most_steps_are_saved_into_the_draft(client_as, org, builder, agent):
    client = client_as(builder, org)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    for label in ("Temperature (0–2)", "Top P (0–1)", "Longest answer (tokens)",
                  "Time limit per model request (seconds)", "Most steps per answer"):
        assert label in page
    response = client.post(f"/agents/{agent.pk}/basics", basics(agent, temperature="0.3", top_p="0.9",
                                                                 max_tokens="800", timeout_secs="45", max_steps="12"))
    assert response.status_code == 302
    spec = Agent.objects.get(pk=agent.pk).draft_spec
    assert spec["model_settings"] == {"temperature": 0.3, "top_p": 0.9, "max_tokens": 800, "timeout_secs": 45.0}
    assert spec["max_steps"] == 12
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="b-temperature" name="temperature" min="0" max="2" step="0.05" value="0.3"' in page
    assert "data-model-settings open" in page

    client.post(f"/agents/{agent.pk}/basics", basics(agent))  # emptied: the model's own defaults again
    spec = Agent.objects.get(pk=agent.pk).draft_spec
    assert spec["model_settings"] == {"temperature": None, "top_p": None, "max_tokens": None, "timeout_secs": None}
    assert spec["max_steps"] == 20


def test_a_value_out_of_range_is_refused_at_its_field_with_what_was_typed(client_as, org, builder, agent):
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = client_as(builder, org).post(f"/agents/{agent.pk}/basics",
                                            basics(agent, temperature="5", max_steps="0", max_tokens="lots"))
    html = response.content.decode()
    assert response.status_code == 422
    for field in ("temperature", "max_steps", "max_tokens"):
        assert f'data-field-error="{field}"' in html, field
    assert 'value="5.0"' in html or 'value="5"' in html
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_a_form_without_the_settings_keeps_the_drafts(client_as, org, builder, agent):
    spec = {**agent.draft_spec, "model_settings": {"temperature": 0.2}, "max_steps": 30}
    Agent.objects.filter(pk=agent.pk).update(draft_spec=spec)
    client_as(builder, org).post(f"/agents/{agent.pk}/basics", {"name": "Helper", "instructions": "x",
                                                                 "model_profile_id": spec["model_profile_id"]})
    saved = Agent.objects.get(pk=agent.pk).draft_spec
    assert saved["model_settings"]["temperature"] == 0.2 and saved["max_steps"] == 30


def test_the_toolbox_lists_every_capability_by_category_with_advanced_folded(client_as, org, builder, agent):
    from capabilities import registry

    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    listing = page.split("data-toolbox-list>")[1].split('<div class="toolbox-detail"')[0]
    selectable = [c for c in registry.catalog_json()["capabilities"] if c["selectable"]]
    assert listing.count("data-toolbox-row=") == len(selectable)
    assert 'data-toolbox-category="knowledge"' in listing and "Knowledge and memory" in listing
    advanced = listing.split("data-toolbox-group")[1]
    assert all(f'data-toolbox-row="{c["id"]}"' in advanced for c in selectable if c["advanced"])
    assert not advanced.split(">")[0].strip().endswith("open")  # nothing advanced is on: folded


def test_the_publish_notice_names_each_field_and_links_to_it(client_as, org, builder, agent):
    spec = {**agent.draft_spec, "capabilities": [{"id": "code_execution", "config": {"timeout_secs": 999}}],
            "model_profile_id": None}
    Agent.objects.filter(pk=agent.pk).update(draft_spec=spec)
    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    notice = page.split("data-publish-problems>")[1].split("</div>")[0]
    assert "2 things to fix before publishing" in notice
    assert '<a href="#cap-code_execution">' in notice and "Time limit (seconds)" in notice
    assert '<a href="#b-model">Model profile</a>' in notice


def test_reloading_a_refused_publish_or_import_goes_back_to_the_page(client_as, org, builder, agent):
    client = client_as(builder, org)
    Agent.objects.filter(pk=agent.pk).update(draft_spec={**agent.draft_spec, "model_profile_id": None})
    refused = client.post(f"/agents/{agent.pk}/publish", {"note": "x"})
    assert refused.status_code == 422
    for path, page in ((f"/agents/{agent.pk}/publish", f"/agents/{agent.pk}/"),
                       (f"/agents/{agent.pk}/basics", f"/agents/{agent.pk}/"),
                       (f"/agents/{agent.pk}/import", f"/agents/{agent.pk}/"),
                       (f"/agents/{agent.pk}/toolbox/clock", f"/agents/{agent.pk}/"),
                       ("/agents/import", "/agents/")):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == page, path
    assert client.put(f"/agents/{agent.pk}/publish").status_code == 405


def test_an_outsider_gets_404_after_the_redirect_and_a_viewer_saves_nothing(client_as, org, viewer, outsider,
                                                                            outsider_org, agent):
    outsider_client = client_as(outsider, outsider_org)
    assert outsider_client.get(f"/agents/{agent.pk}/basics", follow=True).status_code == 404
    before = Agent.objects.get(pk=agent.pk).draft_spec
    assert client_as(viewer, org).post(f"/agents/{agent.pk}/basics", basics(agent, temperature="1")).status_code == 403
    assert Agent.objects.get(pk=agent.pk).draft_spec == before
