"""Internals stay out of the Builder's forms (issue 44 §8): option values and library jargon of the capability
settings are shown in a builder's words — the option's value is still what is saved."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

JARGON = (">multi_query<", ">hyde<", "pydantic-ai model class", "Capability ids", "(check_task shows all)",
          "Rewordings for multi_query")


def test_the_builder_says_capability_options_in_plain_words(client_as, org, owner, agent):
    """Every capability's card is on the page, enabled or not (the Toolbox), so its form is read here."""
    html = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    for words in ("Also search with rewordings of the question", "Also search with a drafted answer",
                  "The passages around it", "Toolbox entries of this agent its delegates may use too"):
        assert words in html, words
    assert 'value="multi_query"' in html  # what is saved is unchanged
    for jargon in JARGON:
        assert jargon not in html, jargon
