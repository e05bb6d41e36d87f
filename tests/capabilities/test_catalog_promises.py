"""Small catalog promises (issue 30): a voice call drops tool search, and the Toolbox card says why a
capability has the tools it has."""

from __future__ import annotations

import pytest

from capabilities import registry
from tests import factories
from tests.console.conftest import client_as  # noqa: F401  (the console's signed-in client fixture)

pytestmark = pytest.mark.urls("tests.console.urls")


def test_tool_search_is_discarded_in_a_voice_call():
    # A call's tools are fixed when it connects, so it gets its MCP tools directly (spec: "descartada").
    assert registry.get("tool_search").voice == "never"
    served = {c["id"]: c for c in registry.catalog_json()["capabilities"]}
    assert served["tool_search"]["voice"] == "never"


def test_the_toolbox_card_shows_why_a_capability_has_no_tools_or_keeps_one(db, client_as, org, owner):  # noqa: F811
    agent = factories.published_agent(org, owner, name="Cards")
    page = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    for cap_id in ("thinking", "clock", "custom_tools", "mcp"):
        card = page.split(f'id="cap-{cap_id}"', 1)[1].split("</article>", 1)[0]
        note = card.split("data-tools-note>", 1)[1].split("</span>", 1)[0]
        assert note.strip() and note.split()[0] in registry.get(cap_id).tools_note, cap_id
    assert "It has no tools of its own: it changes how the agent works." not in page
