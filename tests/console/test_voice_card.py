"""The Builder's Voice card lists what a live call can and cannot do for the agent (the catalog's voice field)."""

from __future__ import annotations

import pytest

from tests import factories
from tests.console.conftest import client_as  # noqa: F401  (the console's signed-in client fixture)

pytestmark = pytest.mark.urls("tests.console.urls")


def card_list(page: str, kind: str) -> str:
    card = page.split("data-voice-card", 1)[1].split("</section>", 1)[0]
    return card.split(f'data-voice="{kind}">', 1)[1].split("</ul>", 1)[0] if f'data-voice="{kind}"' in card else ""


def test_the_voice_card_says_what_a_call_does_with_each_enabled_capability(db, client_as, org, owner, viewer):  # noqa: F811
    agent = factories.published_agent(org, owner, name="Desk", capabilities=[
        {"id": "ask_user"}, {"id": "subagents"}, {"id": "follow_ups"},
        {"id": "charts", "enabled": False}])
    for person in (owner, viewer):
        page = client_as(person, org).get(f"/agents/{agent.pk}/").content.decode()
        assert "Preguntar" not in page  # names are the catalog's English ones
        assert "Ask" in card_list(page, "live") and "Charts" not in card_list(page, "live")
        assert "Subagents" in card_list(page, "hand_off")
        assert "Follow-ups" in card_list(page, "never")


def test_an_outsider_never_sees_the_agents_voice_card(db, client_as, org, owner, outsider, outsider_org):  # noqa: F811
    agent = factories.published_agent(org, owner, name="Desk", capabilities=[{"id": "subagents"}])
    response = client_as(outsider, outsider_org).get(f"/agents/{agent.pk}/")
    assert response.status_code == 404 and "data-voice-card" not in response.content.decode()
