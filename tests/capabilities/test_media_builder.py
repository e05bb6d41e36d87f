"""Images out of history in the Builder: folded under Advanced with the other run-tuning capabilities, its one
setting with the spec's bounds, and a value outside them refused at publish with nothing published."""

from __future__ import annotations

import pytest

from agents.models import AgentVersion
from tests import factories
from tests.console.conftest import client_as  # noqa: F401  (the console's signed-in client fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.console.urls")]


def test_media_is_folded_under_advanced_with_its_threshold_bounds(client_as, org, builder):  # noqa: F811
    factories.model_profile(org, label="Demo")
    client = client_as(builder, org)
    agent = factories.published_agent(org, builder, name="Screens")
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    plain, advanced = page.split("data-advanced-group", 1)
    assert 'id="cap-media"' not in plain and 'id="cap-media"' in advanced and 'id="cap-compaction"' in advanced
    card = page.split('id="cap-media"')[1].split("</article>")[0]
    assert 'name="config.threshold_bytes"' in card and 'min="1024"' in card and 'max="10485760"' in card

    client.post(f"/agents/{agent.pk}/toolbox/media", {"enabled": "on", "config.threshold_bytes": "512"})
    before = AgentVersion.objects.filter(agent=agent).count()
    assert client.post(f"/agents/{agent.pk}/publish", {"note": "too small"}).status_code == 422
    assert AgentVersion.objects.filter(agent=agent).count() == before
