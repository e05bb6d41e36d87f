"""A trigger whose answer goes to a chat channel: one of the agent's bot bindings posts the run's output in
the named channel and thread (the fake Slack Web API, real HTTP)."""

from __future__ import annotations

import pytest

from agents.models import Run
from channelbots import approvals
from channelbots.models import ApprovalCard, ChannelIdentity
from governance.models import Approval
from tests import factories
from tests.channelbots.conftest import SIGNING_SECRET, bind, slack_bot, wait_until
from tests.fakes.slack_api import SlackEventSender, fake_slack  # noqa: F401  (fixture)
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


# ------------------------------------------------------------------ a trigger run that parks on an approval

GATED = [{"id": "charts", "tool_approval": {"create_chart": "required"}}]
CHART = {"chart_type": "bar", "title": "Warsaw", "x_values": ["now"], "series": [{"name": "hour", "values": [9]}]}
THREAD = "1700000000.000100"


@pytest.fixture
def parked(celery_worker, org, owner, fake_slack, script):  # noqa: F811
    """A channel-delivered trigger whose run asks for a chart (gated), fired, its card posted in the thread."""
    gated = factories.published_agent(org, owner, name="Reporter", capabilities=GATED)
    bot = slack_bot(org, owner, fake=fake_slack)
    binding = bind(gated, bot, owner, org)
    trigger, _ = make_trigger(owner, org, gated, delivery="channel", delivery_binding_id=str(binding.pk),
                              delivery_chat_id="C-reports", delivery_thread=THREAD)
    script([("create_chart", CHART)])
    fired = firing.fire_now(actor=actor_of(owner, org), trigger=trigger)
    card = wait_until(lambda: next((p for p in fake_slack.answers("C-reports") if p.buttons()), None))
    # The worker records the card after Slack answered the post: the fake can have it before the row exists.
    wait_until(lambda: ApprovalCard.objects.filter(approval__run_id=fired.run.pk).exists())
    return fired.run.pk, bot, card


def test_a_parked_trigger_run_links_the_console_and_posts_a_card_in_the_thread(parked, fake_slack):  # noqa: F811
    run_id, bot, card = parked
    run = Run.objects.get(pk=run_id)
    assert run.status == "awaiting_approval"
    assert card.thread_ts == THREAD
    assert "create_chart" in card.text and '"title": "Warsaw"' in card.text
    assert [b["action_id"] for b in card.buttons()] == ["agenticos_approve", "agenticos_reject"]
    url = approvals.run_url(run_id)
    assert url.endswith(f"/activity/runs/{run_id}/")
    told = next(p for p in fake_slack.answers("C-reports") if "must decide" in p.final)
    assert url in told.final and told.thread_ts == THREAD
    assert f"/runs/{run_id}" not in told.final.replace(url, "")
    assert run.options["channel"] == {"bot_id": str(bot.pk), "chat_id": "C-reports", "thread": THREAD,
                                      "platform": "slack"}
    assert ApprovalCard.objects.get(approval__run_id=run_id).message_ref == card.ts


def test_approving_in_the_console_resumes_and_the_answer_lands_in_the_same_thread(parked, fake_slack, org,  # noqa: F811
                                                                                  owner):
    from django.test import Client

    from agenticos.tenancy import SESSION_KEY

    run_id, _bot, card = parked
    approval = Approval.objects.get(run_id=run_id)
    console = Client()
    console.force_login(owner)
    session = console.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    response = console.post(f"/approvals/{approval.pk}/decide", {"decision": "approve"},
                            HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    answer = wait_until(lambda: next((p for p in fake_slack.answers("C-reports") if p.final == "done"), None))
    assert answer.thread_ts == THREAD
    assert Run.objects.get(pk=run_id).status == "completed"
    wait_until(lambda: fake_slack.post("C-reports", card.ts).final.startswith(f"Approved by {owner} in the console"))
    assert not fake_slack.post("C-reports", card.ts).buttons()


def test_rejecting_in_the_thread_continues_there_and_an_unlinked_clicker_changes_nothing(parked, fake_slack, org,  # noqa: F811
                                                                                        owner, client):
    run_id, bot, card = parked
    sender = SlackEventSender(client, str(bot.pk), SIGNING_SECRET)
    sender.click(card, "agenticos_reject", user="U9")  # nobody linked
    wait_until(lambda: fake_slack.ephemerals)
    assert "Link your chat account" in fake_slack.ephemerals[-1]["text"]
    assert Approval.objects.get(run_id=run_id).status == "pending"

    ChannelIdentity.objects.create(organization=org, platform="slack", workspace="T1", account_id="UOWN", user=owner)
    assert sender.click(card, "agenticos_reject", user="UOWN").status_code == 200
    answer = wait_until(lambda: next((p for p in fake_slack.answers("C-reports") if p.final == "done"), None))
    assert answer.thread_ts == THREAD
    assert Approval.objects.get(run_id=run_id).status == "rejected"
    wait_until(lambda: fake_slack.post("C-reports", card.ts).final.startswith(f"Rejected by {owner} in Slack"))
