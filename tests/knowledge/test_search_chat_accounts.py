"""Conversation search reaches a channel thread a member wrote in through a linked chat account, not only one
where a turn names them as its author: a turn written before the account was linked (or answered under the
binding creator's authority) records the account (`Message.chat_identity`) and no author. The account must be
linked to that member in this organization; the platform still confirms membership (the fake Slack)."""

from __future__ import annotations

import pytest

from agents.models import Conversation, Message
from channelbots.models import ChannelIdentity, ChannelSession
from knowledge import conversations
from tests import factories
from tests.channelbots.conftest import slack_bot
from tests.fakes.slack_api import fake_slack  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fake_platforms_are_local(settings):
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake Slack listens there


def identity(org, account_id: str, user=None) -> ChannelIdentity:
    return ChannelIdentity.objects.create(organization=org, platform="slack", workspace="T1", account_id=account_id,
                                          user=user, display_name=account_id)


def thread_written_by(org, bot, account: ChannelIdentity, text: str, thread_key: str) -> Conversation:
    """An ownerless Slack thread whose one person's turn records its chat account and no author."""
    agent = factories.published_agent(org, bot.created_by, name=f"Agent {thread_key}")
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=None, title="Slack thread",
                                               surface="slack")
    ChannelSession.objects.create(organization=org, bot=bot, chat_id="C1", thread_key=thread_key,
                                  conversation=conversation)
    Message.objects.create(conversation=conversation, role="user", author=None, chat_identity=account, content=text)
    Message.objects.create(conversation=conversation, role="assistant", content="Noted.")
    return conversation


def found(org, user) -> list[str]:
    return [hit.conversation_id for hit in conversations.search(org.pk, user.pk, "papaya")]


def test_a_member_finds_the_thread_written_through_their_linked_account(org, builder, member, fake_slack):  # noqa: F811
    bot = slack_bot(org, builder, fake=fake_slack)
    account = identity(org, "U5")  # unlinked when it wrote
    thread = thread_written_by(org, bot, account, "the papaya rollout starts Monday", "1.1")
    fake_slack.members["C1"] = ["U5"]
    assert found(org, member) == []

    ChannelIdentity.objects.filter(pk=account.pk).update(user=member)  # linked since
    assert found(org, member) == [str(thread.pk)]
    assert conversations.can_read(org.pk, member.pk, str(thread.pk))
    # Nobody else: another member with an account of their own in the channel, who never wrote there.
    identity(org, "U6", builder)
    fake_slack.members["C1"] = ["U5", "U6"]
    assert found(org, builder) == []


def test_only_an_account_linked_to_that_person_in_this_organization_counts(org, builder, member, outsider,
                                                                           outsider_org, settings,
                                                                           fake_slack):  # noqa: F811
    # The platform says yes to everyone: what decides is the query's own condition.
    settings.CHANNEL_MEMBERSHIP_CHECK = "tests.knowledge.test_search_chat_accounts.everyone_is_in"
    bot = slack_bot(org, builder, fake=fake_slack)
    unlinked = thread_written_by(org, bot, identity(org, "U5"), "papaya from an unlinked account", "1.1")
    # A turn whose account belongs to another organization (linked there to the outsider) is no claim here.
    foreign = ChannelIdentity.objects.create(organization=outsider_org, platform="slack", workspace="T1",
                                             account_id="U8", user=outsider)
    odd = thread_written_by(org, bot, foreign, "papaya through another organization's account", "1.2")
    assert found(org, member) == []
    assert found(org, builder) == []
    assert found(org, outsider) == []
    assert found(outsider_org, outsider) == []
    assert not conversations.can_read(org.pk, outsider.pk, str(odd.pk))
    assert not conversations.can_read(org.pk, member.pk, str(unlinked.pk))
    # The same account linked to the member makes that one thread theirs to find, and only it.
    ChannelIdentity.objects.filter(account_id="U5").update(user=member)
    assert found(org, member) == [str(unlinked.pk)]


def everyone_is_in(conversation, user_id) -> bool:
    return True
