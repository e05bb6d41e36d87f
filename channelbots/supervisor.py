"""The supervisor: keeps every polling/socket/stream bot connected, in its own process
(`manage.py channel_supervisor`), never in the web process.

One loop serves the three platforms, so the policy cannot drift between them:
- a dropped session is retried after 5 s, doubling to 60 s; a session that ended cleanly restarts the ladder;
  the line logged before each wait names the delay;
- a missing or rejected credential is not a dropped session: the bot is recorded as `not_started` with the
  reason, logged once, and the loop stops (retrying would change nothing and would spin);
- a bot's connection is (re)opened after its row commits and whenever it changes (pause, delete, token,
  server URL, transport): services publish the bot id on a Redis channel the supervisor listens to, and a
  periodic rescan catches anything missed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.db import close_old_connections, connection

from agenticos import ratelimit
from channelbots import reactions
from channelbots.platforms import CredentialRejected, PlatformError

logger = logging.getLogger(__name__)

FIRST_DELAY = 5.0
MAX_DELAY = 60.0
RESCAN_SECONDS = 30.0
CLOSE_TIMEOUT = 3.0  # a stopping session waits this long for the server's closing handshake


class NotStarted(Exception):
    """A missing or rejected credential/setting: the loop records it and stops."""


def changes_channel() -> str:
    """The pub/sub channel bot changes are announced on: Redis pub/sub ignores the database number, so the
    name carries the deployment's namespace (parallel test workers each have their own)."""
    return ratelimit.redis_name("channelbots", "changed")


def notify_changed(bot_id: str) -> None:
    try:
        ratelimit.client().publish(changes_channel(), str(bot_id))
    except redis.RedisError:
        logger.warning("could not tell the supervisor that bot %s changed; its rescan will", bot_id)


def next_delay(delay: float) -> float:
    return min(delay * 2, MAX_DELAY)


def run_ladder(
    bot_id: str,
    open_session: Callable[[], Callable[[threading.Event], None]],
    stop: threading.Event,
    *,
    wait: Callable[[float], bool] | None = None,
    record: Callable[[str, str], None] | None = None,
) -> str:
    """Keep one bot's session alive until `stop`. Returns why it ended ("stopped" | "not_started")."""
    from channelbots.models import ConnectionState

    wait = wait or stop.wait
    record = record or (lambda state, reason: _record(bot_id, state, reason))
    delay = FIRST_DELAY
    while not stop.is_set():
        try:
            session = open_session()
            record(ConnectionState.CONNECTED, "")
            session(stop)
            delay = FIRST_DELAY  # a clean end restarts the ladder
            continue
        except (NotStarted, CredentialRejected) as exc:
            record(ConnectionState.NOT_STARTED, str(exc))
            logger.error("channel bot %s not started: %s", bot_id, exc)
            return "not_started"
        except Exception as exc:  # a dropped session: retried
            reason = str(exc) if isinstance(exc, PlatformError) else type(exc).__name__
            record(ConnectionState.RETRYING, reason)
            logger.warning("channel bot %s: session dropped (%s); retrying in %.0f s", bot_id, reason, delay)
            if wait(delay):
                break
            delay = next_delay(delay)
    return "stopped"


def _record(bot_id: str, state: str, reason: str) -> None:
    from channelbots.services import record_connection

    close_old_connections()
    record_connection(bot_id, state, reason)


# ------------------------------------------------------------------ sessions per platform


def session_opener(bot_id: str) -> Callable[[], Callable[[threading.Event], None]]:
    def open_session() -> Callable[[threading.Event], None]:
        from channelbots import services
        from channelbots.models import ChannelBot

        close_old_connections()
        bot = ChannelBot.objects.filter(pk=bot_id).first()
        if bot is None:
            raise NotStarted("the bot no longer exists")
        creds = services.reveal_credentials(bot)
        if not creds.get("token"):
            raise NotStarted("the bot has no token")
        if bot.platform == "telegram":
            return telegram_session(bot, creds)
        if bot.platform == "slack":
            return slack_socket_session(bot, creds)
        return mattermost_stream_session(bot, creds)

    return open_session


def telegram_session(bot, creds: dict[str, str]) -> Callable[[threading.Event], None]:
    from channelbots import router
    from channelbots.telegram.client import TelegramClient
    from channelbots.telegram.parse import parse_incoming

    client = TelegramClient(bot, creds)
    me = client.identity()  # CredentialRejected → not started
    _remember_identity(bot, me.user_id, me.username)
    client.delete_webhook()  # getUpdates refuses to run while a webhook is set

    def run(stop: threading.Event) -> None:
        offset: int | None = None
        while not stop.is_set():
            for update in client.get_updates(offset, timeout=poll_timeout()):
                offset = int(update["update_id"]) + 1
                if reactions.handle(bot, reactions.telegram_reaction(update)):
                    continue
                if "callback_query" in update:
                    from channelbots import approvals

                    try:
                        approvals.telegram_callback(bot, update, client)
                    except Exception:  # one bad click must not end the session (its update would come again)
                        logger.exception("channel bot %s: a button click could not be handled", bot.pk)
                    continue
                incoming = parse_incoming(update, bot_id=str(bot.pk), bot_username=me.username,
                                          bot_user_id=me.user_id, via="polling")
                if incoming is not None:
                    router.accept(incoming)

    return run


def poll_timeout() -> int:
    from django.conf import settings

    return int(getattr(settings, "CHANNELBOTS_POLL_TIMEOUT", 25))


def slack_socket_session(bot, creds: dict[str, str]) -> Callable[[threading.Event], None]:
    """Socket Mode: apps.connections.open with the xapp- token, then envelopes over a WebSocket, each
    acknowledged by its envelope_id before it is handed to the router (the same parse_incoming and claim as
    the Events API, so a redelivered envelope is answered once). A `disconnect` envelope ends the session
    cleanly: the ladder opens a new one at once, with a new URL (Slack's tickets work once).

    Not slack_sdk's SocketModeClient: it runs its own reconnect loop and threads, which would bypass the one
    ladder (backoff, "not started") every platform shares here; slack-sdk still makes the Web API calls."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError, SlackClientError
    from websockets.sync.client import connect

    from channelbots import router
    from channelbots.slack.client import SlackClient, base_url_for
    from channelbots.slack.parse import parse_incoming

    app_token = creds.get("app_token")
    if not app_token:
        raise NotStarted("Socket Mode needs the Slack app-level token (xapp-)")
    me = SlackClient(bot, creds).identity()  # a rejected bot token → not started; answers need it too
    _remember_identity(bot, me.user_id, me.username)
    try:
        opened = WebClient(base_url=base_url_for(bot), timeout=15).apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error in ("invalid_auth", "not_authed", "not_allowed_token_type", "token_revoked"):
            raise NotStarted(f"Slack rejected the app-level token ({error})") from None
        raise PlatformError(f"Slack answered {error} to apps.connections.open") from None
    except (SlackClientError, OSError) as exc:
        raise PlatformError(f"Slack could not be reached ({type(exc).__name__})") from None
    url = opened["url"]

    def run(stop: threading.Event) -> None:
        with connect(url, open_timeout=10, close_timeout=CLOSE_TIMEOUT) as ws:
            while not stop.is_set():
                try:
                    raw = ws.recv(timeout=1)
                except TimeoutError:
                    continue
                envelope = json.loads(raw)
                if envelope.get("type") == "disconnect":
                    logger.info("channel bot %s: Slack asked to reconnect (%s)", bot.pk, envelope.get("reason"))
                    return
                if envelope.get("envelope_id"):
                    ws.send(json.dumps({"envelope_id": envelope["envelope_id"]}))
                if envelope.get("type") == "interactive":
                    # A click on a card's button: the socket is authenticated by the app token.
                    from channelbots import approvals

                    try:
                        approvals.slack_interaction(bot, envelope.get("payload") or {})
                    except Exception:  # one bad click must not end the session
                        logger.exception("channel bot %s: a button click could not be handled", bot.pk)
                    continue
                if envelope.get("type") == "events_api":
                    if reactions.handle(bot, reactions.slack_reaction(envelope.get("payload") or {})):
                        continue
                    incoming = parse_incoming(envelope.get("payload") or {}, bot_id=str(bot.pk),
                                              bot_user_id=bot.platform_bot_user_id, via="socket_mode")
                    if incoming is not None:
                        if envelope.get("retry_attempt"):
                            incoming.retry_note = (f"retry_attempt={envelope['retry_attempt']} "
                                                   f"reason={envelope.get('retry_reason', '')}")
                        router.accept(incoming)

    return run


def mattermost_stream_session(bot, creds: dict[str, str]) -> Callable[[threading.Event], None]:
    from websockets.sync.client import connect

    from channelbots import router
    from channelbots.mattermost.client import MattermostClient
    from channelbots.mattermost.parse import parse_event

    if not bot.api_base_url:
        raise NotStarted("a Mattermost bot needs its server URL")
    client = MattermostClient(bot, creds)
    try:
        me = client.identity()  # 401 → not started
        bot_user_id = me.user_id
        _remember_identity(bot, me.user_id, me.username)
    except CredentialRejected:
        raise
    except PlatformError:
        bot_user_id = ""  # cannot say who we are: answer everything rather than stay silent
    url = client.websocket_url()

    def run(stop: threading.Event) -> None:
        with connect(url, additional_headers={"Authorization": f"Bearer {creds['token']}"}, open_timeout=10,
                     close_timeout=CLOSE_TIMEOUT) as ws:
            ws.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": creds["token"]}}))
            while not stop.is_set():
                try:
                    raw = ws.recv(timeout=1)
                except TimeoutError:
                    continue
                event = json.loads(raw)
                if reactions.handle(bot, reactions.mattermost_reaction(event)):
                    continue
                incoming = parse_event(event, bot_id=str(bot.pk), bot_user_id=bot_user_id,
                                       server=bot.api_base_url)
                if incoming is not None:
                    router.accept(incoming)

    return run


def _remember_identity(bot, user_id: str, username: str) -> None:
    from channelbots.models import ChannelBot

    if bot.platform_bot_user_id != user_id or bot.platform_bot_username != username:
        ChannelBot.objects.filter(pk=bot.pk).update(platform_bot_user_id=user_id, platform_bot_username=username)
        bot.platform_bot_user_id, bot.platform_bot_username = user_id, username


# ------------------------------------------------------------------ the process


class Supervisor:
    """One thread per connected bot; (re)started when the bot's row says something else now.

    A replaced or retired session is stopped first and its replacement starts only once the old thread has
    ended, so two sessions never hold the same credential at once (Telegram answers a second getUpdates
    with 409 Conflict; Slack would deliver each envelope to either socket).
    """

    JOIN_SECONDS = 5.0

    def __init__(self) -> None:
        self.workers: dict[str, tuple[threading.Thread, threading.Event, Any]] = {}
        self.retiring: dict[str, threading.Thread] = {}
        self.outcomes: dict[str, str] = {}  # bot id → how its last ladder ended ("stopped" | "not_started")
        self.stopping = threading.Event()
        self.passes = 0  # reconcile passes done: lets a caller wait for "the supervisor has looked again"
        self._redis_warned = False

    def wanted(self) -> dict[str, Any]:
        """bot id → fingerprint of what the connection depends on, for every bot that should be connected."""
        from channelbots.models import BotCredential, ChannelBot, Transport

        close_old_connections()
        bots = ChannelBot.objects.filter(transport=Transport.POLLING, is_paused=False)
        stamps: dict[str, list] = {}
        for bot_id, kind, updated in BotCredential.objects.filter(bot__in=bots).values_list("bot_id", "kind",
                                                                                           "updated_at"):
            stamps.setdefault(str(bot_id), []).append((kind, updated.isoformat()))
        return {
            str(b.pk): (b.api_base_url, b.transport, sorted(stamps.get(str(b.pk), [])))
            for b in bots
        }

    def reconcile(self) -> None:
        wanted = self.wanted()
        for bot_id in list(self.workers):
            thread, stop, fingerprint = self.workers[bot_id]
            if wanted.get(bot_id) != fingerprint:  # a stopped (not started) loop waits for the row to change
                stop.set()
                del self.workers[bot_id]
                self.retiring[bot_id] = thread
        for bot_id, thread in list(self.retiring.items()):
            if not thread.is_alive():
                del self.retiring[bot_id]
                if bot_id not in wanted:
                    _record_paused(bot_id)
        for bot_id, fingerprint in wanted.items():
            if bot_id in self.workers or bot_id in self.retiring:
                continue  # a retiring session still holds the credential: the next pass starts this one
            stop = threading.Event()
            thread = threading.Thread(target=self._work, args=(bot_id, stop), name=f"bot-{bot_id[:8]}", daemon=True)
            self.workers[bot_id] = (thread, stop, fingerprint)
            thread.start()
        self.passes += 1

    def _work(self, bot_id: str, stop: threading.Event) -> None:
        try:
            self.outcomes[bot_id] = run_ladder(bot_id, session_opener(bot_id), stop)
        except Exception:
            logger.exception("channel bot %s: the supervisor's loop failed", bot_id)
            self.outcomes[bot_id] = "failed"
        finally:
            connection.close()  # this thread's own database connection

    def serve(self) -> None:
        pubsub = None
        last_scan: float | None = None
        while not self.stopping.is_set():
            if pubsub is None:
                pubsub = self._subscribe()
            changed = False
            if pubsub is not None:
                try:
                    changed = pubsub.get_message(timeout=1.0) is not None
                except redis.RedisError:
                    pubsub = None
            else:
                self.stopping.wait(1.0)
            due = last_scan is None or time.monotonic() - last_scan > RESCAN_SECONDS
            if changed or due or self.retiring:
                last_scan = time.monotonic()
                try:
                    self.reconcile()
                except Exception:
                    logger.exception("supervisor: reconcile failed")
        self.shutdown()
        if pubsub is not None:
            try:
                pubsub.close()
            except redis.RedisError:
                pass
        connection.close()

    def _subscribe(self):
        try:
            pubsub = ratelimit.client().pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(changes_channel())
        except redis.RedisError:
            if not self._redis_warned:
                logger.warning("supervisor: cannot listen for bot changes (Redis); rescanning every %.0f s",
                               RESCAN_SECONDS)
                self._redis_warned = True
            return None
        self._redis_warned = False
        return pubsub

    def shutdown(self) -> None:
        """Stop every session and wait for its thread (each notices within about a second)."""
        from channelbots.models import ConnectionState
        from channelbots.services import record_connection

        threads = [thread for thread, stop, _fp in self.workers.values()] + list(self.retiring.values())
        for _thread, stop, _fp in self.workers.values():
            stop.set()
        for thread in threads:
            thread.join(timeout=self.JOIN_SECONDS)
            if thread.is_alive():
                logger.warning("supervisor: %s did not stop in %.0f s; leaving it (daemon)", thread.name,
                               self.JOIN_SECONDS)
        # A bot is not "connected" while no supervisor runs; a not-started one keeps its reason.
        for bot_id in self.workers:
            if self.outcomes.get(bot_id) == "stopped":
                record_connection(bot_id, ConnectionState.CONNECTING, "the channel supervisor is not running")
        self.workers.clear()
        self.retiring.clear()


def _record_paused(bot_id: str) -> None:
    """A session retired because its bot was paused says so (a switch to webhook already recorded idle)."""
    from channelbots.models import ChannelBot, ConnectionState, Transport

    ChannelBot.objects.filter(pk=bot_id, is_paused=True, transport=Transport.POLLING).update(
        connection_state=ConnectionState.PAUSED, connection_reason="")
