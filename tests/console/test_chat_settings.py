"""Settings → Chat: only a member who manages models picks the profile that titles conversations (agents.titles),
only one of their organization's chat profiles; an outsider changes nothing."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from agents.models import ChatSettings, ModelProfile

pytestmark = pytest.mark.django_db


def test_only_a_model_manager_picks_the_title_profile_and_only_one_of_their_organization(
        org, owner, member, outsider, outsider_org, client_as):
    mine = ModelProfile.objects.create(organization=org, label="Cheap", provider="openai", model="gpt-4o-mini")
    foreign = ModelProfile.objects.create(organization=outsider_org, label="Theirs", provider="openai", model="x")
    assert client_as(member, org).get("/settings/chat/").status_code == 200
    refused = client_as(member, org).post("/settings/chat/", {"title_profile": str(mine.pk)})
    assert refused.status_code == 403 and not ChatSettings.objects.exists()
    assert client_as(owner, org).post("/settings/chat/", {"title_profile": str(foreign.pk)}).status_code == 404
    assert not ChatSettings.objects.exists()
    assert client_as(outsider, outsider_org).post("/settings/chat/", {"title_profile": str(mine.pk)}).status_code == 404
    saved = client_as(owner, org).post("/settings/chat/", {"title_profile": str(mine.pk)})
    assert saved.status_code == 302 and ChatSettings.objects.get(organization=org).title_profile_id == mine.pk
    assert AuditEvent.objects.filter(action="chat_settings.title_profile").count() == 1
    client_as(owner, org).post("/settings/chat/", {"title_profile": ""})
    assert ChatSettings.objects.get(organization=org).title_profile_id is None
