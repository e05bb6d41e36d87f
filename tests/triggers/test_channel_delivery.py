"""A trigger whose answer goes to a chat channel: one of the agent's bot bindings posts the run's output in
the named channel and thread (the fake Slack Web API, real HTTP)."""

from __future__ import annotations

import pytest

from agents.models import Run
from tests.channelbots.conftest import bind, slack_bot
from tests.fakes.slack_api import fake_slack  # noqa: F401  (fixture)
from tests.runner.conftest import actor_of
from tests.triggers.conftest import make_trigger, run_now
from triggers import delivery, firing

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fake_platforms_are_local(settings):
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake Slack listens there


@pytest.fixture
def queued(monkeypatch):
    """The delivery task's enqueue, recorded instead of sent (the test delivers in this thread)."""
    ids: list[int] = []
    monkeypatch.setattr("triggers.tasks.deliver_to_channel.delay", ids.append)
    return ids


def test_the_answer_is_posted_in_the_channel_through_the_agents_binding(org, owner, agent, fake_slack, script,  # noqa: F811
                                                                        queued):
    bot = slack_bot(org, owner, fake=fake_slack)
    binding = bind(agent, bot, owner, org)
    trigger, _ = make_trigger(owner, org, agent, delivery="channel", delivery_binding_id=str(binding.pk),
                              delivery_chat_id="C-reports", delivery_thread="1700000000.000100")
    script()
    fired = firing.fire_now(actor=actor_of(owner, org), trigger=trigger)
    assert queued == [fired.firing.pk]
    run_now(fired.run.pk)
    assert delivery.deliver_to_channel(fired.firing.pk) == "posted"
    posts = fake_slack.answers("C-reports")
    assert [(p.final, p.thread_ts) for p in posts] == [("done", "1700000000.000100")]
    assert Run.objects.get(pk=fired.run.pk).output == "done"


def test_a_paused_bot_posts_nothing(org, owner, agent, fake_slack, script, queued):  # noqa: F811
    bot = slack_bot(org, owner, fake=fake_slack)
    binding = bind(agent, bot, owner, org)
    trigger, _ = make_trigger(owner, org, agent, delivery="channel", delivery_binding_id=str(binding.pk),
                              delivery_chat_id="C-reports")
    type(bot).objects.filter(pk=bot.pk).update(is_paused=True)
    script()
    fired = firing.fire_now(actor=actor_of(owner, org), trigger=trigger)
    run_now(fired.run.pk)
    assert delivery.deliver_to_channel(fired.firing.pk) == "paused"
    assert fake_slack.answers("C-reports") == []
