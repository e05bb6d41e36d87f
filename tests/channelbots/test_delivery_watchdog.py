"""A channel reply whose run's frames were lost (the channel layer drops without a word) ends from the run's
own record once frames stop, instead of waiting out CHANNELBOTS_SILENCE_SECONDS with the person unanswered."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from agents.models import Run
from agents.runs import start_run
from channelbots import delivery
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def quiet_reply() -> delivery.LiveReply:
    client = SimpleNamespace(can_edit=False, bot=SimpleNamespace(pk="bot"))
    return delivery.LiveReply(client, "C1", "1.0")  # type: ignore[arg-type]


def a_run(org, owner) -> Run:
    agent = factories.published_agent(org, owner, name="Helper")
    return start_run(agent=agent, version=agent.environments.get(name="production").version, surface="slack",
                     prompt="hello", user=owner, acting_role="owner", enqueue=False)


def follow_in_background(run: Run) -> tuple[threading.Thread, list]:
    subscription = delivery.Subscription(run.pk)
    subscription.open()
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(delivery.follow(subscription, quiet_reply(), str(run.pk))))
    thread.start()
    return thread, outcome


@pytest.mark.parametrize(("status", "kind", "text"), [
    ("completed", "completed", "All done."),
    ("awaiting_approval", "awaiting", ""),
    ("failed", "failed", ""),
    ("cancelled", "cancelled", ""),
])
def test_a_run_that_ended_without_a_frame_reaching_the_reply_ends_it_from_its_record(
        org, owner, settings, status, kind, text):
    settings.CHANNELBOTS_WATCHDOG_SECONDS = 0.3
    settings.CHANNELBOTS_SILENCE_SECONDS = 60
    run = a_run(org, owner)
    thread, outcome = follow_in_background(run)
    Run.objects.filter(pk=run.pk).update(status=status, output="All done." if status == "completed" else "",
                                         error={"message": "org cap 100 (internal)"}, input_tokens=7)
    thread.join(15)
    assert not thread.is_alive()
    assert outcome[0].kind == kind and outcome[0].text == text
    assert "org cap" not in outcome[0].message  # the operator's error never reaches the chat
    if kind == "completed":
        assert outcome[0].usage["input_tokens"] == 7


def test_a_running_run_is_left_alone(org, owner, settings):
    settings.CHANNELBOTS_WATCHDOG_SECONDS = 0.2
    run = a_run(org, owner)
    Run.objects.filter(pk=run.pk).update(status="running")
    outcome = delivery.follow(delivery_subscription(run), quiet_reply(), str(run.pk), silence_limit=1.0)
    assert outcome.kind == "lost"  # still running when the silence limit came: not invented from the row


def delivery_subscription(run: Run) -> delivery.Subscription:
    subscription = delivery.Subscription(run.pk)
    subscription.open()
    return subscription
