"""The words the Builder shows for each capability: 2-3 example uses and what it never does, from the
declaration through the catalog API to the Toolbox card."""

from __future__ import annotations

import re

import pytest
from django.utils.html import escape

from agents.models import Agent
from capabilities import registry
from tests import factories
from tests.console.conftest import client_as  # noqa: F401  (the console's signed-in client fixture)

# The project's routes plus the console's: the catalog API and the Builder page in one urlconf.
pytestmark = pytest.mark.urls("tests.console.urls")
URL = "/api/v1/agents/capabilities"


def _selectable():
    return [c for c in registry.all_capabilities() if c.selectable]


def test_every_selectable_capability_has_two_or_three_example_uses():
    caps = _selectable()
    assert len(caps) >= 19
    for cap in caps:
        examples = [e.strip() for e in cap.examples]
        assert 2 <= len(examples) <= 3, f"{cap.id} has {len(examples)} examples"
        assert all(examples) and len(set(examples)) == len(examples), cap.id


def test_every_selectable_capability_says_in_a_sentence_what_it_never_does():
    for cap in _selectable():
        text = cap.never_does.strip()
        assert text.startswith("It never "), f"{cap.id}: {text!r}"
        assert text.endswith(".") and len(text) <= 320, cap.id


def test_the_limits_name_what_the_code_enforces():
    never = {c.id: c.never_does for c in registry.all_capabilities()}
    assert "private ones unless an operator allowed that host" in never["web_fetch"]
    assert "network" in never["code_execution"] and "files" in never["code_execution"]
    assert "the one the message came from" in never["channel_tools"]
    assert "between agents or between people" in never["memory_files"]
    assert "read connection" in never["database"]


def test_the_catalog_api_serves_the_examples_and_what_each_capability_never_does(api_as, org, viewer):
    response = api_as(viewer, org).get(URL)
    assert response.status_code == 200
    served = {c["id"]: c for c in response.json()["capabilities"]}
    for cap in registry.all_capabilities():
        assert served[cap.id]["never_does"] == cap.never_does
        assert served[cap.id]["examples"] == list(cap.examples)
    assert served["web_fetch"]["never_does"].startswith("It never ")


def test_an_outsider_gets_no_catalog_text_for_this_organization(api_as, org, outsider):
    response = api_as(outsider, org).get(URL)
    assert response.status_code == 404
    assert "never_does" not in response.content.decode()


def _card(page: str, cap_id: str) -> str:
    match = re.search(rf'<article[^>]*id="cap-{cap_id}".*?</article>', page, re.S)
    assert match, f"no card for {cap_id}"
    return match.group(0)


def test_the_builder_card_shows_what_a_capability_never_does_and_its_examples(
    client_as, org, builder, outsider_org, outsider  # noqa: F811
):
    factories.model_profile(org, label="Demo")
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    page = client.get(f"/agents/{agent.pk}/").content.decode()

    for cap in _selectable():
        card = _card(page, cap.id)
        assert "data-never-does" in card and escape(cap.never_does) in card, cap.id
        for example in cap.examples:
            assert f"<li>{escape(example)}</li>" in card, (cap.id, example)
    fetch_card = _card(page, "web_fetch")
    assert "Limits:" in fetch_card
    assert escape(registry.find("code_execution").never_does) not in fetch_card

    assert client_as(outsider, outsider_org).get(f"/agents/{agent.pk}/").status_code == 404
