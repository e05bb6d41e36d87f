"""A parked call nobody decides expires with its run; its card in the thread then says so and loses its buttons
(the expiry is heard like a decision), so nobody clicks a button that can no longer do anything. End to end:
the real Slack route, worker and runner on a scripted model, the fake Slack Web API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Run
from agents.runner.finish import cancel_parked_or_queued, expire_approvals
from channelbots.models import ChannelBot
from governance.models import Approval
from tests import factories
from tests.channelbots.conftest import bind, wait_until
from tests.channelbots.test_chat_approvals import gated_model, link, park_on_slack


@pytest.fixture
def slack(celery_worker, scripted_model, fake_slack, sender, builder, org):
    agent = factories.published_agent(org, builder, name="Support Agent",
                                      capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(gated_model())
    return fake_slack


def test_an_expired_approval_rewrites_its_card_without_buttons(slack, sender, settings, org, admin_user):
    _event, card, approval = park_on_slack(slack, sender)
    pressed = next(b["value"] for b in card.buttons() if b["action_id"] == "agenticos_approve")
    Approval.objects.filter(pk=approval.pk).update(
        created_at=timezone.now() - timedelta(hours=settings.APPROVAL_EXPIRY_HOURS, minutes=1))
    assert expire_approvals() == 1
    approval.refresh_from_db()
    assert approval.status == "expired"
    assert Run.objects.get(pk=approval.run_id).status == "cancelled"
    expired = wait_until(lambda: (post := slack.post("C1", card.ts)).edits and post)
    assert expired.final.startswith("Expired without a decision")
    assert not expired.buttons()
    # A click that arrives on the old card afterwards changes nothing and says it was closed.
    link(org, "slack", "T1", "UADA", admin_user)
    sender.click(card, "agenticos_approve", user="UADA", value=pressed)
    wait_until(lambda: slack.ephemerals)
    assert "decided already" in slack.ephemerals[-1]["text"]
    approval.refresh_from_db()
    assert approval.status == "expired"


def test_a_stopped_parked_run_closes_its_card_too(slack, sender):
    _event, card, approval = park_on_slack(slack, sender)
    assert cancel_parked_or_queued(approval.run_id)
    closed = wait_until(lambda: (post := slack.post("C1", card.ts)).edits and post)
    assert closed.final.startswith("Expired without a decision") and not closed.buttons()
