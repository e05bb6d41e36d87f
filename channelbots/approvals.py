"""Approvals in the thread: a parked call is shown where the question was asked, with Approve / Reject, and
can be decided there by a person who may decide approvals in the agent's organization.

- `post_cards`: when a channel run parks, one card per pending call (tool and arguments as the Approvals page
  shows them, the buttons, and the console's link to the run).
- `decide`: a click, verified by its platform's route; only a chat account linked to an active member holding
  `approvals:decide` in the bot's organization decides, and only on the card the button sits on. Anyone else is
  told why, and nothing changes.
- `update_card`: after any decision (console, REST API or chat), the card says who decided where.
- `follow_resumed`: after a resume, the continued answer is written live into the same thread.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse

from agenticos.errors import Conflict, Forbidden
from agenticos.tenancy import Actor
from channelbots.incoming import Click
from channelbots.models import ApprovalCard, ChannelBot, ChannelIdentity, Platform
from channelbots.platforms import APPROVE, Card, PlatformClient, PlatformError

logger = logging.getLogger(__name__)

NOT_LINKED = ("Only a linked member who may decide approvals can use these buttons. Link your chat account "
              "first: send me `link` in a direct message.")
NOT_ALLOWED = "Your role in this organization cannot decide approvals, so nothing was changed."
NOT_THIS_CARD = "This button does not belong to a step waiting here, so nothing was changed."
PLACES = {"": "in the console", Platform.SLACK: "in Slack", Platform.TELEGRAM: "in Telegram",
          Platform.MATTERMOST: "in Mattermost"}


def run_url(run_id) -> str:
    """The console's page of a run (where its parked calls can be decided too)."""
    return settings.FRONTEND_URL.rstrip("/") + reverse("console:run-detail", args=[str(run_id)])


def args_text(args) -> str:
    """The arguments exactly as the Approvals page prints them."""
    return json.dumps(args, indent=2, ensure_ascii=False)


def outcome_line(approval, via: str | None) -> str:
    """"Approved by Ada in the console"; `via` None leaves the place out (not known)."""
    from governance.models import Approval

    if approval.status == Approval.Status.PENDING:
        return ""
    if approval.status == Approval.Status.EXPIRED:
        return "Expired without a decision"
    verb = "Approved" if approval.status == Approval.Status.APPROVED else "Rejected"
    who = str(approval.decided_by) if approval.decided_by_id else "someone"
    if via is None:
        return f"{verb} by {who}"
    return f"{verb} by {who} {PLACES.get(via, 'in the console')}"


def card_for(bot: ChannelBot, approval, *, via: str = "") -> Card:
    return Card(bot_id=str(bot.pk), approval_id=str(approval.pk), tool_name=approval.tool_name,
                args_text=args_text(approval.args), console_url=run_url(approval.run_id),
                outcome=outcome_line(approval, via))


# ------------------------------------------------------------------ posting


def post_cards(client: PlatformClient, bot: ChannelBot, chat_id: str, thread: str, run_id) -> int:
    """One card per pending call of the run that has none yet. A card the platform refuses costs the buttons,
    never the decision: the console link stays in the parked reply."""
    from governance.models import Approval

    pending = (Approval.objects.filter(run_id=run_id, organization_id=bot.organization_id,
                                       status=Approval.Status.PENDING, channel_card__isnull=True)
               .order_by("created_at"))
    posted = 0
    for approval in pending:
        try:
            ref = client.post_card(chat_id, card_for(bot, approval), reply_to=thread)
        except PlatformError as exc:
            logger.warning("bot %s: the card of approval %s was not posted (%s)", bot.pk, approval.pk, exc)
            continue
        if ref:
            ApprovalCard.objects.create(organization_id=bot.organization_id, approval=approval, bot=bot,
                                        chat_id=chat_id, thread=thread, message_ref=ref)
            posted += 1
    return posted


def update_card(approval_id, via: str = "") -> str:
    """Rewrite the card of a decided call: who decided, and where. Returns what happened (logs, tests)."""
    from channelbots.platforms import client_for

    card = (ApprovalCard.objects.select_related("bot", "approval", "approval__decided_by")
            .filter(approval_id=approval_id).first())
    if card is None:
        return "no_card"
    if card.bot.organization_id != card.approval.organization_id:
        return "refused"
    try:
        client_for(card.bot).update_card(card.chat_id, card.message_ref, card_for(card.bot, card.approval, via=via))
    except PlatformError as exc:
        logger.info("bot %s: the card of approval %s was not updated (%s)", card.bot_id, approval_id, exc)
        return "failed"
    return "updated"


# ------------------------------------------------------------------ deciding


@dataclass
class Verdict:
    decided: bool
    text: str  # what the clicker is told


def _approval(bot: ChannelBot, approval_id: str):
    from governance.models import Approval

    try:
        pk = uuid.UUID(str(approval_id))
    except ValueError:
        return None
    return Approval.objects.select_related("run").filter(pk=pk, organization_id=bot.organization_id).first()


def _decider(bot: ChannelBot, click: Click) -> Actor | Verdict:
    """The member behind the clicking chat account, or why there is none. Looked up, never created: a refused
    click leaves no row behind."""
    from channelbots import services

    identity = ChannelIdentity.objects.filter(organization_id=bot.organization_id, platform=bot.platform,
                                              workspace=click.workspace or "", account_id=click.account_id).first()
    membership = services.active_membership(identity) if identity is not None else None
    if membership is None:
        return Verdict(False, NOT_LINKED)
    actor = Actor(user=membership.user, organization=membership.organization, role=membership.role)
    if not actor.has("approvals:decide"):
        return Verdict(False, NOT_ALLOWED)
    return actor


def decide(click: Click) -> Verdict:
    """Decide a parked call from its card. Everything is checked before anything is written."""
    from governance import services as governance

    bot = ChannelBot.objects.select_related("organization").filter(pk=click.bot_id, platform=click.platform).first()
    if bot is None or not click.signed:
        return Verdict(False, NOT_THIS_CARD)
    approval = _approval(bot, click.approval_id)
    card = ApprovalCard.objects.filter(approval=approval, bot=bot).first() if approval is not None else None
    if card is None or card.chat_id != str(click.chat_id) or card.message_ref != str(click.message_ref):
        logger.info("bot %s: a click named no card of this message (approval %s)", bot.pk, click.approval_id)
        return Verdict(False, NOT_THIS_CARD)
    actor = _decider(bot, click)
    if isinstance(actor, Verdict):
        return actor
    try:
        decided = governance.decide_approval(actor=actor, approval=approval, decision=click.decision,
                                             via=bot.platform)
    except Conflict:
        approval.refresh_from_db()
        return Verdict(False, f"This step was decided already: {outcome_line(approval, None) or 'it is closed'}.")
    except Forbidden:
        return Verdict(False, NOT_ALLOWED)
    # The decision itself continues the run once nothing else waits (governance.decide_approval).
    logger.info("bot %s: approval %s %s on run %s", bot.pk, decided.pk, decided.status, decided.run_id)
    word = "Approved" if click.decision == APPROVE else "Rejected"
    return Verdict(True, f"{word}. I'll continue in the thread.")


# ------------------------------------------------------------------ after a decision


def on_approval_decided(sender=None, *, approval_id, via: str = "", **kwargs) -> None:
    if ApprovalCard.objects.filter(approval_id=approval_id).exists():
        from channelbots import tasks

        tasks.update_card.delay(str(approval_id), via)


# The runs that answer in a thread: a bot's own, and a trigger's whose answer a binding posts in a channel
# (triggers.delivery records the channel on such a run when it parks).
THREAD_SURFACES = (*Platform.values, "schedule", "event")


def on_run_resumed(sender=None, *, run_id, **kwargs) -> None:
    from agents.models import Run

    options = Run.objects.filter(pk=run_id, surface__in=THREAD_SURFACES).values_list("options", flat=True).first()
    if options and (options or {}).get("channel"):
        from channelbots import tasks

        tasks.follow_resumed.delay(str(run_id))


def follow_resumed(run_id: str) -> str:
    """Write a resumed channel run's continuation into the thread it came from, live, like the first turn."""
    from agents.models import Run
    from channelbots import delivery, router
    from channelbots.incoming import CHANNEL, Incoming
    from channelbots.models import Binding, ChannelSession
    from channelbots.platforms import client_for

    run = Run.objects.filter(pk=run_id).first()
    channel = (run.options or {}).get("channel") if run is not None else None
    if run is None or not channel:
        return "nothing"
    bot = ChannelBot.objects.select_related("organization").filter(
        pk=channel.get("bot_id"), organization_id=run.organization_id).first()
    binding = Binding.objects.select_related("agent", "created_by", "bot").filter(bot=bot).first() if bot else None
    if bot is None or bot.is_paused or binding is None or binding.agent_id != run.agent_id:
        logger.info("run %s: its bot is gone, paused or serves another agent; the continuation is not posted", run_id)
        return "refused"
    session = (ChannelSession.objects.filter(bot=bot, conversation_id=run.conversation_id).first()
               if run.conversation_id else None)
    thread = str(channel.get("thread") or "")
    incoming = Incoming(platform=bot.platform, bot_id=str(bot.pk), chat_id=str(channel["chat_id"]),
                        chat_type=session.chat_type if session else CHANNEL, sender_id="", reply_to=thread,
                        thread_key=session.thread_key if session else "", via="resume")
    client = client_for(bot)
    turn = router.Turn(incoming, bot, binding, client)
    subscription = delivery.Subscription(run_id)
    subscription.open()
    live = delivery.LiveReply(client, incoming.chat_id, thread)
    live.start()
    outcome = delivery.follow(subscription, live, str(run_id), check_first=True)
    return router.finish(turn, session, live, outcome, [], False)


# ------------------------------------------------------------------ the platforms' clicks


def slack_interaction(bot: ChannelBot, payload: dict, client: PlatformClient | None = None) -> str:
    """A verified block_actions payload (the Events-style signature at the route, or the Socket Mode socket).
    A refusal is told to the clicker alone (chat.postEphemeral); a decision shows on the card itself."""
    from channelbots import follow_ups as chat_apps
    from channelbots.platforms import client_for
    from channelbots.slack.parse import parse_click

    if chat_apps.is_slack_click(payload):  # a suggested next step: a new message from the clicker
        return chat_apps.slack_click(bot, payload)
    click = parse_click(payload, bot_id=str(bot.pk))
    if click is None:
        return "ignored"
    click.signed = True  # the request signature (or the app-token socket) covers the whole payload
    verdict = decide(click)
    if not verdict.decided:
        client = client or client_for(bot)
        try:
            client.post_ephemeral(click.chat_id, click.account_id, verdict.text, reply_to=click.thread)  # type: ignore[attr-defined]
        except PlatformError as exc:
            logger.info("bot %s: could not tell a clicker why (%s)", bot.pk, exc)
    return "decided" if verdict.decided else "refused"


def telegram_callback(bot: ChannelBot, update: dict, client: PlatformClient | None = None) -> str:
    """A callback_query from the webhook or from polling. Always answered (the button spins until then): the
    outcome, as an alert when the click changed nothing."""
    from channelbots import follow_ups as chat_apps
    from channelbots.platforms import client_for
    from channelbots.telegram.parse import parse_callback

    if chat_apps.is_telegram_click(update):  # a suggested next step: a new message from the clicker
        return chat_apps.telegram_click(bot, update, client)
    parsed = parse_callback(update, bot_id=str(bot.pk))
    if parsed is None:
        return "ignored"
    click, callback_id, signature = parsed
    client = client or client_for(bot)
    from channelbots.telegram.client import CALLBACK_SIGNATURE

    click.signed = client.signature_ok(click.approval_id, click.decision, signature, length=CALLBACK_SIGNATURE)
    verdict = decide(click)
    try:
        client.answer_callback(callback_id, verdict.text, alert=not verdict.decided)  # type: ignore[attr-defined]
    except PlatformError as exc:
        logger.info("bot %s: could not answer a callback (%s)", bot.pk, exc)
    return "decided" if verdict.decided else "refused"


def mattermost_action(bot: ChannelBot, body: dict, client: PlatformClient | None = None) -> dict:
    """The integration request of a card's button; the answer is the response body Mattermost reads
    (`ephemeral_text` is shown to the clicker alone)."""
    from channelbots import follow_ups as chat_apps
    from channelbots.mattermost.parse import parse_action
    from channelbots.platforms import client_for

    if chat_apps.is_mattermost_click(body):  # a suggested next step: a new message from the clicker
        return chat_apps.mattermost_click(bot, body, client)
    parsed = parse_action(body, bot_id=str(bot.pk), server=bot.api_base_url)
    if parsed is None:
        return {"ephemeral_text": NOT_THIS_CARD}
    click, signature = parsed
    client = client or client_for(bot)
    try:
        click.signed = client.signature_ok(click.approval_id, click.decision, signature)
    except PlatformError:
        click.signed = False
    verdict = decide(click)
    return {} if verdict.decided else {"ephemeral_text": verdict.text}
