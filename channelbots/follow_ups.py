"""Follow-ups in a chat app: after the reply, the steps are posted in its thread as the platform's buttons, and
a click is a new message from the person who clicked.

The click goes through the same path as a typed message (`channelbots.router.accept`): the router looks the
sender up again, checks the bot's binding, its access policy and the room membership before anything runs, so
a button never lends anyone more than typing the same text would.

- Slack: Block Kit buttons; the click arrives on the signed interactions route (or the Socket Mode socket).
- Telegram: an inline keyboard; the click is a `callback_query` (webhook or polling). A modified client can
  send any callback_data, so each button's data carries this deployment's signature (the approval buttons'
  HMAC, keyed from the bot's token) over the follow-up and the step.
- Mattermost: interactive message buttons; Mattermost does not sign the integration request, so the context it
  keeps server-side and sends back carries the same signature, checked before anything else is believed.

On every platform a click counts only on the message the steps were posted on, in the chat they were posted
to, by the bot that posted them, for a follow-up of the bot's own organization; anything else starts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agenticos.strings import digits_only
from capabilities.follow_ups.models import FollowUp

logger = logging.getLogger(__name__)

ACTION = "agenticos_follow_up"  # Slack action_id prefix; the index follows ("agenticos_follow_up_0")
HEADLINE = "Suggested next steps:"
# Telegram callback_data (at most 64 bytes): "fu:<follow-up id>:<index>:<signature, 16 hex>".
TELEGRAM_PREFIX = "fu"
TELEGRAM_SIGNATURE = 16
# Mattermost action ids: letters and digits only (the webapp drops a click on an id with "_" or "-").
MATTERMOST_ACTION = "agenticosfollowup"
NOT_THIS_MESSAGE = "This button does not belong to suggestions posted here, so nothing was sent."


def post(follow_up: FollowUp) -> str:
    """Post the steps in the thread the answer went to. Returns what happened (logs, tests)."""
    from channelbots.models import ChannelBot, Platform
    from channelbots.platforms import PlatformError, client_for

    channel = (follow_up.source_run.options or {}).get("channel") or {}
    bot_id = str(channel.get("bot_id") or "")
    bot = (ChannelBot.objects.filter(pk=bot_id, organization_id=follow_up.organization_id).first()
           if bot_id else None)
    if bot is None or bot.is_paused or not channel.get("chat_id"):
        return "no_channel"
    posters: dict[str, Callable[[Any, FollowUp, str, str], str]] = {
        Platform.SLACK: _post_slack, Platform.TELEGRAM: _post_telegram, Platform.MATTERMOST: _post_mattermost}
    poster = posters.get(bot.platform)
    if poster is None:
        return "unsupported"
    chat_id, thread = str(channel["chat_id"]), str(channel.get("thread") or "")
    try:
        ref = poster(client_for(bot), follow_up, chat_id, thread)
    except PlatformError as exc:
        logger.info("bot %s: the follow-ups of message %s were not posted (%s)", bot.pk, follow_up.message_id, exc)
        return "failed"
    FollowUp.objects.filter(pk=follow_up.pk).update(delivered_to={
        "platform": bot.platform, "bot_id": str(bot.pk), "chat_id": chat_id, "thread": thread, "message_ref": ref})
    return "posted"


def _post_slack(client: Any, follow_up: FollowUp, chat_id: str, thread: str) -> str:
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": HEADLINE}},
        {"type": "actions", "elements": [
            {"type": "button", "action_id": f"{ACTION}_{index}", "value": f"{follow_up.pk}:{index}",
             "text": {"type": "plain_text", "text": step[:75], "emoji": True}}
            for index, step in enumerate(follow_up.steps)]},
    ]
    text = HEADLINE + " " + " · ".join(follow_up.steps)  # the notification fallback
    kwargs: dict[str, Any] = {"channel": chat_id, "text": text, "blocks": blocks}
    if thread:
        kwargs["thread_ts"] = thread
    return str(client._call("chat.postMessage", **kwargs).get("ts") or "")


def _signed(pk: int | str) -> str:
    """What a follow-up button's signature covers besides the step: namespaced so that no approval button's
    signature (over an approval's UUID) can ever pass for one."""
    return f"follow_up:{pk}"


def _post_telegram(client: Any, follow_up: FollowUp, chat_id: str, thread: str) -> str:
    # One row per step: a step is a sentence, too long to share a row.
    keyboard = [[{"text": step, "callback_data": telegram_data(client, follow_up.pk, index)}]
                for index, step in enumerate(follow_up.steps)]
    params: dict[str, Any] = {"chat_id": chat_id, "text": HEADLINE, "reply_markup": {"inline_keyboard": keyboard}}
    if thread:
        params["reply_parameters"] = {"message_id": int(thread), "allow_sending_without_reply": True}
    return str((client.call("sendMessage", **params) or {}).get("message_id") or "")


def _post_mattermost(client: Any, follow_up: FollowUp, chat_id: str, thread: str) -> str:
    from channelbots.mattermost.client import actions_url

    actions = [
        {"id": f"{MATTERMOST_ACTION}{index}", "name": step, "style": "default", "integration": {
            "url": actions_url(client.bot),
            "context": {"follow_up": str(follow_up.pk), "index": index,
                        "signature": client.sign(_signed(follow_up.pk), str(index))}}}
        for index, step in enumerate(follow_up.steps)
    ]
    body: dict[str, Any] = {"channel_id": chat_id, "message": HEADLINE, "props": {"attachments": [
        {"text": "", "actions": actions}]}}
    if thread:
        body["root_id"] = thread
    return str(client._json("POST", "/posts", json=body).get("id") or "")


# ------------------------------------------------------------------ clicks


def _delivered(bot: Any, pk: str, index: str, chat_id: str, message_ref: str) -> FollowUp | None:
    """The follow-up a click names, when it is the bot's own organization's, the step exists, and the button
    sits on the message the steps were posted on by this bot in this chat; None otherwise."""
    follow_up = (FollowUp.objects.filter(pk=int(pk), organization_id=bot.organization_id).first()
                 if digits_only(pk) else None)
    sent = (follow_up.delivered_to or {}) if follow_up is not None else {}
    if (follow_up is None or not digits_only(index) or int(index) >= len(follow_up.steps)
            or sent.get("bot_id") != str(bot.pk) or sent.get("chat_id") != str(chat_id)
            or not message_ref or sent.get("message_ref") != str(message_ref)):
        logger.info("bot %s: a follow-up click named no follow-up of this message", bot.pk)
        return None
    return follow_up


def _send(bot: Any, follow_up: FollowUp, index: int, *, chat_id: str, sender_id: str, sender_name: str,
          message_id: str, workspace: str) -> None:
    """The step's text as a new message from the clicker, in the thread the answer went to."""
    from channelbots import router
    from channelbots.incoming import Incoming
    from channelbots.models import ChannelSession

    sent = follow_up.delivered_to or {}
    session = ChannelSession.objects.filter(bot=bot, conversation_id=follow_up.conversation_id).first()
    router.accept(Incoming(
        platform=bot.platform, bot_id=str(bot.pk), chat_id=chat_id,
        chat_type=session.chat_type if session else "channel", sender_id=sender_id, text=follow_up.steps[index],
        sender_name=sender_name, message_id=message_id,
        thread_key=session.thread_key if session else sent.get("thread", ""), reply_to=sent.get("thread", ""),
        mentioned=True, in_existing_thread=True, workspace=workspace, via="follow_up"))


def is_slack_click(payload: dict[str, Any]) -> bool:
    return payload.get("type") == "block_actions" and any(
        isinstance(a, dict) and str(a.get("action_id") or "").startswith(ACTION) for a in payload.get("actions") or [])


def slack_click(bot: Any, payload: dict[str, Any]) -> str:
    """A verified block_actions payload on a follow-up button → the step's text as a new message from the
    clicker, in the same thread. A button that is not ours, of another organization's answer or moved to another
    message is ignored."""
    action = next(a for a in payload["actions"] if str(a.get("action_id") or "").startswith(ACTION))
    pk, _, index = str(action.get("value") or "").partition(":")
    container, user = payload.get("container") or {}, payload.get("user") or {}
    chat_id = str((payload.get("channel") or {}).get("id") or container.get("channel_id") or "")
    message_ref = str(container.get("message_ts") or (payload.get("message") or {}).get("ts") or "")
    follow_up = _delivered(bot, pk, index, chat_id, message_ref)
    if follow_up is None:
        return "ignored"
    _send(bot, follow_up, int(index), chat_id=chat_id, sender_id=str(user.get("id") or ""),
          sender_name=str(user.get("name") or user.get("username") or ""),
          # One click is one message: a redelivered interaction is the same claim.
          message_id=f"follow_up:{message_ref}:{index}:{user.get('id')}:{action.get('action_ts') or ''}",
          workspace=str((payload.get("team") or {}).get("id") or user.get("team_id") or ""))
    return "sent"


# ------------------------------------------------------------------ Telegram


def telegram_data(client: Any, pk: int | str, index: int) -> str:
    return f"{TELEGRAM_PREFIX}:{pk}:{index}:{client.sign(_signed(pk), str(index))[:TELEGRAM_SIGNATURE]}"


def is_telegram_click(update: dict[str, Any]) -> bool:
    query = update.get("callback_query")
    return isinstance(query, dict) and str(query.get("data") or "").startswith(TELEGRAM_PREFIX + ":")


def telegram_click(bot: Any, update: dict[str, Any], client: Any = None) -> str:
    """A callback_query on a follow-up button (webhook or polling) → the step as a new message from the
    clicker, answered in the thread. The callback is always answered (the button spins until then): an alert
    when the click sent nothing."""
    from channelbots.platforms import PlatformError, client_for

    query = update["callback_query"]
    sender, message = query.get("from") or {}, query.get("message") or {}
    parts = str(query.get("data") or "").split(":")
    client = client or client_for(bot)
    follow_up = None
    if len(parts) == 4 and sender and not sender.get("is_bot") and digits_only(parts[1]) and digits_only(parts[2]):
        pk, index, signature = parts[1], parts[2], parts[3]
        if client.signature_ok(_signed(pk), index, signature, length=TELEGRAM_SIGNATURE):
            follow_up = _delivered(bot, pk, index, str((message.get("chat") or {}).get("id") or ""),
                                   str(message.get("message_id") or ""))
        else:
            logger.info("bot %s: a follow-up click without this deployment's signature", bot.pk)
    answer, alert = NOT_THIS_MESSAGE, True
    if follow_up is not None:
        answer, alert = follow_up.steps[int(parts[2])], False
        name = " ".join(p for p in (sender.get("first_name"), sender.get("last_name")) if p) or sender.get(
            "username") or ""
        _send(bot, follow_up, int(parts[2]), chat_id=str(message["chat"]["id"]), sender_id=str(sender.get("id")),
              sender_name=str(name), workspace="",
              # One click is one callback: a redelivered update is the same claim.
              message_id=f"follow_up:{message.get('message_id')}:{parts[2]}:{sender.get('id')}:{query.get('id')}")
    try:
        client.answer_callback(str(query.get("id") or ""), answer, alert=alert)
    except PlatformError as exc:
        logger.info("bot %s: could not answer a callback (%s)", bot.pk, exc)
    return "sent" if follow_up is not None else "ignored"


# ------------------------------------------------------------------ Mattermost


def is_mattermost_click(body: dict[str, Any]) -> bool:
    context = body.get("context")
    return isinstance(context, dict) and "follow_up" in context


def mattermost_click(bot: Any, body: dict[str, Any], client: Any = None) -> dict[str, Any]:
    """The integration request of a follow-up button → the step as a new message from the clicker, answered in
    the thread. The answer is the response body Mattermost reads: nothing on success, `ephemeral_text` (shown to
    the clicker alone) when the click sent nothing."""
    from channelbots.platforms import PlatformError, client_for

    context = body["context"]
    pk, index = str(context.get("follow_up") or ""), str(context.get("index", ""))
    user_id, post_id = str(body.get("user_id") or ""), str(body.get("post_id") or "")
    client = client or client_for(bot)
    try:
        signed = bool(pk) and client.signature_ok(_signed(pk), index, str(context.get("signature") or ""))
    except PlatformError:
        signed = False
    follow_up = (_delivered(bot, pk, index, str(body.get("channel_id") or ""), post_id)
                 if signed and user_id else None)
    if follow_up is None:
        if not signed:
            logger.info("bot %s: a follow-up click without this deployment's signature", bot.pk)
        return {"ephemeral_text": NOT_THIS_MESSAGE}
    _send(bot, follow_up, int(index), chat_id=str(body["channel_id"]), sender_id=user_id,
          sender_name=str(body.get("user_name") or ""), workspace=bot.api_base_url,
          # Mattermost names every click with its own trigger id.
          message_id=f"follow_up:{post_id}:{index}:{user_id}:{body.get('trigger_id') or ''}")
    return {}
