"""Webhook routes: verify, parse, claim, answer 200 — before any work. The work runs in Celery.

An unknown bot id answers 200 and nothing (a prober learns only that the endpoint exists, which the URL
already said). Credentials are compared in constant time and never echoed.
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from agenticos.errors import json_error
from channelbots import reactions, router, services
from channelbots.models import ChannelBot, CredentialKind, Platform

logger = logging.getLogger(__name__)


def _bot(bot_id: str, platform: str) -> ChannelBot | None:
    try:
        pk = uuid.UUID(str(bot_id))
    except ValueError:
        return None
    return ChannelBot.objects.filter(pk=pk, platform=platform).first()


def _ok() -> HttpResponse:
    return HttpResponse(status=200)


@csrf_exempt
@require_POST
def slack_events(request: HttpRequest, bot_id: str) -> HttpResponse:
    from channelbots.slack import parse, verify

    bot = _bot(bot_id, Platform.SLACK)
    if bot is None:
        return _ok()
    creds = services.reveal_credentials(bot)
    signing_secret = creds.get(CredentialKind.SIGNING_SECRET, "")
    if not signing_secret:
        logger.warning("slack bot %s has no signing secret: every event is refused (500)", bot.pk)
        return json_error(500, "not_configured", "This bot has no signing secret.")
    body = request.body
    if not verify.is_valid(signing_secret, body, request.headers.get("X-Slack-Request-Timestamp"),
                           request.headers.get("X-Slack-Signature")):
        return json_error(401, "bad_signature", "The request signature is missing, stale or wrong.")
    try:
        payload = json.loads(body)
    except ValueError:
        return json_error(400, "bad_request", "The body is not JSON.")
    if payload.get("type") == "url_verification":
        return JsonResponse({"challenge": str(payload.get("challenge") or "")})
    if bot.is_paused:
        return _ok()
    if reactions.handle(bot, reactions.slack_reaction(payload)):
        return _ok()
    incoming = parse.parse_incoming(payload, bot_id=str(bot.pk), bot_user_id=bot.platform_bot_user_id)
    if incoming is None:
        return _ok()
    retry = request.headers.get("X-Slack-Retry-Num")
    if retry:
        incoming.retry_note = f"x-slack-retry-num={retry} reason={request.headers.get('X-Slack-Retry-Reason', '')}"
    router.accept(incoming)
    return _ok()


@csrf_exempt
@require_POST
def slack_interactions(request: HttpRequest, bot_id: str) -> HttpResponse:
    """Slack's Interactivity Request URL: a click on a card's button. Verified exactly like events (the signing
    secret's v0 signature over the raw form body, five-minute window) before the payload is read."""
    from channelbots import approvals
    from channelbots.slack import verify

    bot = _bot(bot_id, Platform.SLACK)
    if bot is None:
        return _ok()
    signing_secret = services.reveal_credentials(bot).get(CredentialKind.SIGNING_SECRET, "")
    if not signing_secret:
        logger.warning("slack bot %s has no signing secret: every interaction is refused", bot.pk)
        return json_error(403, "not_configured", "This bot has no signing secret.")
    body = request.body
    if not verify.is_valid(signing_secret, body, request.headers.get("X-Slack-Request-Timestamp"),
                           request.headers.get("X-Slack-Signature")):
        return json_error(401, "bad_signature", "The request signature is missing, stale or wrong.")
    from urllib.parse import parse_qs

    try:
        payload = json.loads((parse_qs(body.decode()).get("payload") or [""])[-1])
    except (ValueError, UnicodeDecodeError):
        return json_error(400, "bad_request", "The body carries no JSON payload.")
    if not isinstance(payload, dict):
        return json_error(400, "bad_request", "The payload is not a JSON object.")
    if bot.is_paused:
        return _ok()
    try:
        approvals.slack_interaction(bot, payload)
    except Exception:
        logger.exception("slack bot %s: a button click could not be handled", bot.pk)
    return _ok()


@csrf_exempt
@require_POST
def telegram_webhook(request: HttpRequest, bot_id: str) -> HttpResponse:
    from channelbots.telegram import parse

    bot = _bot(bot_id, Platform.TELEGRAM)
    if bot is None:
        return _ok()
    secret = services.reveal_credentials(bot).get(CredentialKind.WEBHOOK_SECRET, "")
    given = request.headers.get("X-Telegram-Bot-Api-Secret-Token") or ""
    if not secret or not hmac.compare_digest(secret.encode(), given.encode()):
        return json_error(403, "bad_secret", "The webhook secret is missing or wrong.")
    try:
        update = json.loads(request.body)
    except ValueError:
        return json_error(400, "bad_request", "The body is not JSON.")
    if bot.is_paused:
        return _ok()
    if isinstance(update, dict) and reactions.handle(bot, reactions.telegram_reaction(update)):
        return _ok()
    if isinstance(update, dict) and "callback_query" in update:
        from channelbots import approvals

        try:
            approvals.telegram_callback(bot, update)
        except Exception:
            logger.exception("telegram bot %s: a button click could not be handled", bot.pk)
        return _ok()
    incoming = parse.parse_incoming(update, bot_id=str(bot.pk), bot_username=bot.platform_bot_username,
                                    bot_user_id=bot.platform_bot_user_id, via="webhook")
    if incoming is not None:
        router.accept(incoming)
    return _ok()


@csrf_exempt
@require_POST
def mattermost_webhook(request: HttpRequest, bot_id: str) -> HttpResponse:
    from channelbots.mattermost import parse

    bot = _bot(bot_id, Platform.MATTERMOST)
    if bot is None:
        return _ok()
    if (request.content_type or "").startswith("application/json"):
        try:
            body = json.loads(request.body)
        except ValueError:
            return json_error(400, "bad_request", "The body is not JSON.")
    else:
        body = request.POST.dict()
    if not isinstance(body, dict):
        return json_error(400, "bad_request", "The body is not a JSON object.")
    secret = services.reveal_credentials(bot).get(CredentialKind.WEBHOOK_SECRET, "")
    given = str(body.get("token") or "")
    if not secret or not hmac.compare_digest(secret.encode(), given.encode()):
        return json_error(403, "bad_secret", "The webhook secret is missing or wrong.")
    if bot.is_paused:
        return JsonResponse({})
    incoming = parse.parse_outgoing_webhook(body, bot_id=str(bot.pk), server=bot.api_base_url)
    if incoming is not None:
        router.accept(incoming)
    # An empty object: Mattermost posts nothing itself; the answer comes through the REST API.
    return JsonResponse({})


@csrf_exempt
@require_POST
def mattermost_actions(request: HttpRequest, bot_id: str) -> HttpResponse:
    """The integration URL of a card's buttons. Mattermost does not sign these requests, so the context the card
    was posted with carries this deployment's signature (keyed from the bot's token), checked before anything
    else is believed; the clicker is the user Mattermost names."""
    from channelbots import approvals

    bot = _bot(bot_id, Platform.MATTERMOST)
    if bot is None:
        return JsonResponse({})
    try:
        body = json.loads(request.body)
    except ValueError:
        return json_error(400, "bad_request", "The body is not JSON.")
    if not isinstance(body, dict):
        return json_error(400, "bad_request", "The body is not a JSON object.")
    if bot.is_paused:
        return JsonResponse({"ephemeral_text": "This bot is paused, so nothing was changed."})
    try:
        return JsonResponse(approvals.mattermost_action(bot, body))
    except Exception:
        logger.exception("mattermost bot %s: a button click could not be handled", bot.pk)
        return JsonResponse({"ephemeral_text": "Sorry — that click could not be handled."})
