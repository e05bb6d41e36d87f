"""The Architect's proposal carries a schedule (issue 46 §2: "a trigger or a surface"). Through the real runner and
the OpenAI client against the local fake server: the setup's `trigger` is checked with the triggers app's own
validators (a bad cron, a too-short interval, an unknown time zone, both or neither of cron and interval are
refused readably and the model reads why), drawn in words on the card ("it starts once you publish"), and created
with the draft when the person accepts — in the one transaction, by the accepting person, on the draft, where it
cannot act before a version is published: the beat dispatcher logs its due times as not fired and starts no run
until the person publishes, then the next due time runs the published version. A member cannot have it drawn,
someone demoted since cannot accept it, another member and an outsider do not find it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agenticos.errors import Forbidden, NotFound
from agenticos.models import AuditEvent, Membership
from agents import architect, services
from agents.models import Agent, Run
from tests.capabilities.test_architect import (  # noqa: F401 (fixtures)
    agent_card,
    ask,
    docs,
    drawn_proposal,
    model,
    proposals,
    setup_for,
)
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from triggers.firing import dispatch_due
from triggers.models import Trigger, TriggerFiring

pytestmark = pytest.mark.django_db(transaction=True)

WEEKDAYS_AT_NINE = {"name": "Morning refunds digest", "prompt": "Summarize yesterday's refund requests.",
                    "cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}


def test_a_proposed_schedule_is_drawn_in_words_and_accepting_creates_it_on_the_draft_idle_until_publish(  # noqa: F811
        org, owner, model, docs, fake_openai):
    call = drawn_proposal(org, owner, model, docs, fake_openai, trigger=WEEKDAYS_AT_NINE)
    words = call.result["cards"][0]["setup"]["trigger_words"]
    assert "Monday through Friday" in words and "Europe/Madrid" in words and "Morning refunds digest" in words
    assert "It starts once you publish the agent." in words
    assert not Trigger.objects.exists()  # proposing creates nothing

    accepted = architect.accept_setup(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    draft = accepted.agent
    trigger = Trigger.objects.get()
    assert accepted.trigger_id == str(trigger.pk) and accepted.trigger_refused == ""
    assert (trigger.agent_id, trigger.organization_id, trigger.creator_id) == (draft.pk, org.pk, owner.pk)
    assert (trigger.kind, trigger.cron, trigger.timezone, trigger.prompt) == (
        "schedule", "0 9 * * 1-5", "Europe/Madrid", "Summarize yesterday's refund requests.")
    assert trigger.enabled and trigger.next_run_at is not None
    assert trigger.delivery == "conversation" and trigger.delivery_conversation.owner_id == owner.pk
    assert not draft.versions.exists()
    assert AuditEvent.objects.filter(action="trigger.created", target_id=str(trigger.pk)).exists()
    assert AuditEvent.objects.get(action="architect.proposal.accepted").details["trigger_id"] == str(trigger.pk)
    call.refresh_from_db()
    assert call.result["cards"][0]["accepted_trigger_id"] == str(trigger.pk)

    # Before the person publishes, its due time starts no run: the firing is logged as not fired, and why.
    due = trigger.next_run_at
    assert dispatch_due(due + timedelta(seconds=5))["failed"] == 1
    firing = TriggerFiring.objects.get(trigger=trigger)
    assert firing.status == "failed" and "publish it first" in firing.reason and firing.run_id is None
    assert not Run.objects.filter(agent=draft).exists()

    # Once published, the next due time runs the published version with the schedule's prompt.
    version = services.publish_agent(actor=actor_of(owner, org), agent=draft)
    trigger.refresh_from_db()
    assert dispatch_due(trigger.next_run_at + timedelta(seconds=5))["started"] == 1
    run = Run.objects.get(agent=draft)
    assert (run.version_id, run.surface, run.prompt) == (version.pk, "schedule", trigger.prompt)


@pytest.mark.parametrize(("trigger", "words"), [
    ({"cron": "61 9 * * *"}, "trigger.cron: The cron expression is invalid"),
    ({"cron": "0 9 * *"}, "trigger.cron: A cron expression has 5 fields"),
    ({"cron": "", "every_seconds": 5}, "trigger.every_seconds: every_seconds must be at least"),
    ({"timezone": "Mars/Olympus_Mons"}, "trigger.timezone: 'Mars/Olympus_Mons' is not an IANA timezone"),
    ({"every_seconds": 3600}, "trigger.cron: A schedule needs exactly one of cron or every_seconds"),
    ({"cron": "", "every_seconds": None}, "trigger.cron: A schedule needs exactly one of cron or every_seconds"),
    ({"prompt": "   "}, "trigger.prompt: A trigger needs a prompt"),
])
def test_an_invalid_schedule_is_refused_readably_the_model_reads_why_and_nothing_is_drawn(  # noqa: F811
        org, owner, model, docs, fake_openai, trigger, words):
    agent = architect.install(actor_of(owner, org))
    setup = setup_for(model, docs, trigger={**WEEKDAYS_AT_NINE, **trigger})
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup)), Reply.text("Let me fix the schedule."))
    run = ask(owner, agent, "A refunds agent that reports every morning.")
    (call,) = proposals(run)
    assert call.result["cards"] == []
    error = call.result["error"]
    assert error.startswith("The agent setup was refused and nothing was drawn") and words in error, error
    assert words in fake_openai.chat_requests[1].text  # the model reads why and can correct it
    assert not Trigger.objects.exists() and Agent.objects.filter(organization=org).count() == 1


def test_a_schedule_beside_an_unknown_field_is_refused_as_the_rest_of_a_setup_is(org, owner, model, docs,  # noqa: F811
                                                                                 fake_openai):
    agent = architect.install(actor_of(owner, org))
    hostile = {**WEEKDAYS_AT_NINE, "creator_id": 1, "run_as_creator": True}
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup_for(model, docs, trigger=hostile))),
                      Reply.text("Noted."))
    run = ask(owner, agent, "A refunds agent that reports every morning.")
    # The tool's own argument validation refuses it (extra fields are forbidden): no card, no trigger, and the
    # model reads which field it may not set.
    (call,) = proposals(run)
    assert call.status != "ok" and not isinstance(call.result, dict), call.result
    assert "creator_id" in fake_openai.chat_requests[1].text
    assert not Trigger.objects.exists()


def test_a_member_gets_no_card_and_nobody_but_the_builder_accepts_it(org, owner, builder, member, model,  # noqa: F811
                                                                     docs, fake_openai, outsider, outsider_org):
    architect.install(actor_of(owner, org))
    agent = architect.find(org)
    fake_openai.queue(Reply.tool_call("propose_setup", agent_card(setup_for(model, docs, trigger=WEEKDAYS_AT_NINE))),
                      Reply.text("Noted."))
    (refused,) = proposals(ask(member, agent, "A refunds agent that reports every morning."))
    assert refused.result["cards"] == [] and "may not create agents" in refused.result["error"]

    call = drawn_proposal(org, builder, model, docs, fake_openai, trigger=WEEKDAYS_AT_NINE)
    with pytest.raises(NotFound):
        architect.accept_setup(actor_of(owner, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    with pytest.raises(NotFound):
        architect.accept_setup(actor_of(outsider, outsider_org), run_id=call.run_id, call_id=call.tool_call_id,
                               card=0)
    Membership.objects.filter(user=builder, organization=org).update(role="member")
    with pytest.raises(Forbidden):
        architect.accept_setup(actor_of(builder, org), run_id=call.run_id, call_id=call.tool_call_id, card=0)
    assert not Trigger.objects.exists() and Agent.objects.filter(organization=org).count() == 1


def test_the_triggers_app_registers_the_handler_the_architect_uses():
    """agents never imports triggers: the handler is registered from TriggersConfig.ready(), and a broken
    registration fails here instead of a proposal quietly dropping its schedule."""
    from agents import extensions
    from triggers import proposed

    handler = extensions.proposed_trigger()
    assert (handler.problems, handler.describe, handler.create) == (proposed.problems, proposed.describe,
                                                                    proposed.create)
