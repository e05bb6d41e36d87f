"""Where a trigger's answer goes when it is a chat channel: one of the agent's bot bindings posts it.

The delivery follows the run's frames on the default queue like a bot reply does (a live placeholder,
edited as the answer arrives); what is posted at the end is the run's own output read back from its row,
so frames published before the delivery subscribed cost nothing but the early live edits.

A run that parks on an approval links its page in the console and posts a card per pending call in the thread
(Approve / Reject, `channelbots.approvals`); the run then remembers the channel (`options["channel"]`, as a
bot's own runs do), so after a decision — in the thread or in the console — the continued answer is written
into the same thread.
"""

from __future__ import annotations

import logging

from django.db import transaction

from agents.models import Run, RunStatus
from triggers.models import Trigger, TriggerFiring

logger = logging.getLogger(__name__)

ENDED = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.BUDGET_EXCEEDED,
         RunStatus.GUARDRAIL_BLOCKED, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER}


def _text(run: Run) -> str:
    from channelbots.approvals import run_url

    if run.status == RunStatus.COMPLETED:
        return run.output or "(no answer)"
    if run.status in (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER):
        where = "here below, or in the console" if run.status == RunStatus.AWAITING_APPROVAL else "in the console"
        return ((run.output + "\n\n" if run.output else "")
                + f"A person must decide on a step before I can finish — {where}: {run_url(run.pk)}")
    return f"The scheduled run did not finish ({run.get_status_display().lower()})."


def channel_of(trigger: Trigger, bot) -> dict:
    """Where the run answers, spelled as a bot's own runs have it in `options["channel"]` (no channel tools:
    those come with a person's message through a binding, never with a trigger)."""
    return {"bot_id": str(bot.pk), "chat_id": trigger.delivery_chat_id, "thread": trigger.delivery_thread,
            "platform": bot.platform}


def _remember_channel(run_id: str, channel: dict) -> bool:
    """Record the channel on a parked run, so its resumed answer is followed into the thread. Only while it is
    parked: a run no worker is executing, whose options nothing else writes then."""
    with transaction.atomic():
        run = (Run.objects.select_for_update().only("options", "status")
               .filter(pk=run_id, status=RunStatus.AWAITING_APPROVAL).first())
        if run is None:
            return False
        if (run.options or {}).get("channel") != channel:
            Run.objects.filter(pk=run_id).update(options={**(run.options or {}), "channel": channel})
    return True


def deliver_to_channel(firing_id: int) -> str:
    from channelbots import delivery
    from channelbots.platforms import client_for

    firing = (TriggerFiring.objects.select_related("trigger__delivery_binding__bot", "run")
              .filter(pk=firing_id, trigger__delivery=Trigger.Delivery.CHANNEL).first())
    if firing is None or firing.run is None or firing.trigger.delivery_binding is None:
        return "nothing"
    trigger, binding = firing.trigger, firing.trigger.delivery_binding
    if binding.agent_id != trigger.agent_id or binding.organization_id != trigger.organization_id:
        logger.warning("trigger %s: its binding no longer serves its agent; nothing posted", trigger.pk)
        return "refused"
    bot = binding.bot
    if bot.is_paused:
        return "paused"
    client = client_for(bot)
    run_id = str(firing.run_id)
    subscription = delivery.Subscription(run_id)
    subscription.open()
    live = delivery.LiveReply(client, trigger.delivery_chat_id, trigger.delivery_thread)
    try:
        if Run.objects.filter(pk=run_id, status__in=ENDED).exists():
            outcome_kind = "ended"
        else:
            live.start()
            outcome_kind = delivery.follow(subscription, live, run_id).kind
    finally:
        subscription.close()
    run = Run.objects.get(pk=run_id)
    parked = run.status == RunStatus.AWAITING_APPROVAL and _remember_channel(run_id, channel_of(trigger, bot))
    live.finish(_text(run))
    if parked:
        from channelbots import approvals

        approvals.post_cards(client, bot, trigger.delivery_chat_id, trigger.delivery_thread, run.pk)
    logger.info("trigger %s: run %s delivered to %s %s (%s)", trigger.pk, run_id, bot.platform,
                trigger.delivery_chat_id, outcome_kind)
    return "posted"
