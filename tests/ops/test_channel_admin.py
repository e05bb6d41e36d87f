"""The operator console lists chat bots, their bindings and the chat accounts that wrote to them, read-only,
with links between them and no credential ever shown; a member of an organization is kept out."""

from __future__ import annotations

import pytest
from django.urls import reverse

from channelbots import services as channel_services
from channelbots.models import Binding, ChannelBot, ChannelIdentity
from tests import factories

pytestmark = pytest.mark.django_db

TOKEN = "123456:telegram-token-never-shown"


@pytest.fixture
def chat_world(org, owner):
    agent = factories.published_agent(org, owner, name="Helpdesk")
    bot = ChannelBot.objects.create(organization=org, platform="telegram", name="Helpdesk bot")
    channel_services.set_credential(bot, "token", TOKEN)
    binding = Binding.objects.create(organization=org, agent=agent, bot=bot)
    account = ChannelIdentity.objects.create(organization=org, platform="telegram", account_id="42",
                                             display_name="Ana", user=owner)
    return bot, binding, account


def _url(model, action="changelist", *args):
    return reverse(f"admin:channelbots_{model._meta.model_name}_{action}", args=args)


def test_bots_bindings_and_chat_accounts_are_listed_with_links_and_no_credential(console, chat_world, owner):
    bot, binding, account = chat_world
    bots = console.get(_url(ChannelBot)).content.decode()
    assert "Helpdesk bot" in bots and "Helpdesk" in bots and TOKEN not in bots
    assert console.get(_url(ChannelBot, "change", bot.pk)).status_code == 200
    assert TOKEN not in console.get(_url(ChannelBot, "change", bot.pk)).content.decode()
    bindings = console.get(_url(Binding)).content.decode()
    assert _url(ChannelBot, "change", bot.pk) in bindings
    accounts = console.get(_url(ChannelIdentity)).content.decode()
    assert "Ana" in accounts and owner.email in accounts


def test_the_console_changes_nothing(console, chat_world):
    bot, binding, _account = chat_world
    assert console.get(_url(ChannelBot, "add")).status_code == 403
    console.post(_url(ChannelBot, "change", bot.pk), {"name": "Renamed", "is_paused": "on"})
    console.post(_url(Binding, "delete", binding.pk), {"post": "yes"})
    bot.refresh_from_db()
    assert bot.name == "Helpdesk bot" and not bot.is_paused
    assert Binding.objects.filter(pk=binding.pk).exists()


def test_an_organization_member_is_kept_out(client, owner, chat_world):
    client.force_login(owner)
    response = client.get(_url(ChannelBot))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
