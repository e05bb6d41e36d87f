"""Where a trigger's answer goes when it is a chat channel: one of the agent's bot bindings posts it.

The delivery follows the run's frames on the default queue like a bot reply does (a live placeholder,
edited as the answer arrives); what is posted at the end is the run's own output read back from its row,
so frames published before the delivery subscribed cost nothing but the early live edits.
"""

from __future__ import annotations

import logging

from django.conf import settings

from agents.models import Run, RunStatus
from triggers.models import Trigger, TriggerFiring

logger = logging.getLogger(__name__)

ENDED = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.BUDGET_EXCEEDED,
         RunStatus.GUARDRAIL_BLOCKED, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER}


def _text(run: Run) -> str:
    if run.status == RunStatus.COMPLETED:
        return run.output or "(no answer)"
    if run.status in (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER):
        url = f"{settings.FRONTEND_URL}/runs/{run.pk}"
        return (run.output + "\n\n" if run.output else "") + f"A person must decide on a step before I can finish: {url}"
    return f"The scheduled run did not finish ({run.get_status_display().lower()})."


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
    live.finish(_text(run))
    logger.info("trigger %s: run %s delivered to %s %s (%s)", trigger.pk, run_id, bot.platform,
                trigger.delivery_chat_id, outcome_kind)
    return "posted"
