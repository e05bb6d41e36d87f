"""Conversation search reaches a channel thread only while the platform confirms the person is still in the
channel: the deployment's default `CHANNEL_MEMBERSHIP_CHECK` asks Slack (conversations.members)."""

from __future__ import annotations

from agents.models import Conversation
from channelbots import dedup
from channelbots.models import ChannelBot, ChannelIdentity, ChannelSession
from knowledge import conversations
from tests.channelbots.conftest import bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model


def test_a_thread_someone_else_started_is_searchable_while_the_platform_says_the_person_is_in_the_channel(
        celery_worker, scripted_model, fake_slack, sender, agent, builder, org, member, outsider):
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(streaming_model("Noted."))
    ChannelIdentity.objects.create(organization=org, platform="slack", workspace="T1", account_id="U5", user=member)
    sender.send(sender.message("<@UBOT> the papaya rollout starts Monday", user="U5", channel="C1"))
    wait_until(lambda: any(p.final == "Noted." for p in fake_slack.answers("C1")))
    conversation = ChannelSession.objects.get().conversation
    Conversation.objects.filter(pk=conversation.pk).update(owner=None)  # someone else opened the thread

    fake_slack.members["C1"] = ["U5"]
    hits = conversations.search(org.pk, member.pk, "papaya")
    assert [h.conversation_id for h in hits] == [str(conversation.pk)]
    assert conversations.can_read(org.pk, member.pk, str(conversation.pk))
    # Another member of the organization who never spoke there, and an outsider, find nothing.
    assert conversations.search(org.pk, builder.pk, "papaya") == []
    assert conversations.search(org.pk, outsider.pk, "papaya") == []

    fake_slack.members["C1"] = []  # left the channel; once the ~1-minute cache lapses, the thread is gone
    dedup.client().flushdb()
    assert conversations.search(org.pk, member.pk, "papaya") == []
    assert not conversations.can_read(org.pk, member.pk, str(conversation.pk))
