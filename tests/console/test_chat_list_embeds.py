"""Embed visitors' conversations are recorded with the embed's creator as owner, but they are the visitors':
the creator's own chat list leaves them out (they belong under the embed)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Conversation
from embeds import services as embed_services
from tests import factories

pytestmark = pytest.mark.django_db


def test_an_embed_visitors_conversation_is_not_in_the_creators_chat_list(client_as, org, owner, agent):
    embed = factories.embed(agent, created_by=owner)
    visitor = embed_services.create_conversation(embed, "visitor-1")
    Conversation.objects.filter(pk=visitor.pk).update(title="A visitor asks about prices")
    Conversation.objects.create(organization=org, agent=agent, owner=owner, title="My own question")
    page = client_as(owner, org).get(reverse("console:chat")).content.decode()
    assert "My own question" in page
    assert "A visitor asks about prices" not in page
    assert str(visitor.pk) not in page
