"""`WS /api/v1/embed/<key>/ws`: admit a visitor, turn `message` frames into runs, relay filtered frames.

Admission refuses with one close code and one message whatever the cause (4003), tells "too fast" apart
(4029), stops writing to a client that does not read (1011) and closes on a frame no visitor could have
typed (4003 again, with its own reason: see agents.consumers.FRAME_REFUSED_CODE). A frame that is not JSON
or is nested too deep gets a `bad_frame` error frame. Every close carries its reason text in the ASGI message
(daphne 4.2 sends only the code: django/daphne#374, agenticos.daphne_close_reason). Agent, model and
environment come only from the embed row; a frame cannot choose them.

A signed visitor's thread is the token's `sub` (services.thread_of), never the continuity key the browser
presents: another person's key with your own token replays nothing of theirs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from agenticos import metrics, ratelimit
from agenticos.errors import DomainError
from agents import rollouts, runs
from agents.consumers import FRAME_REFUSED_CODE, TOO_BIG_MESSAGE, BadFrame, FrameTooBig, decode_frame
from agents.consumers import max_frame_chars as max_frame_chars
from agents.models import Run
from agents.run_handle import group_name
from agents.runner.frames import ending_frames
from embeds import services
from embeds.frames import Toggles, TurnFilter
from embeds.models import Embed, EmbedFile

logger = logging.getLogger(__name__)

# What embeds.models.new_public_key makes (URL-safe base64), at most the column's 64 characters. A key of any
# other shape is refused before a query: a NUL byte in one was a database error.
PUBLIC_KEY_PATTERN = r"[A-Za-z0-9_-]{1,64}"

REFUSED_CODE = 4003
RATE_LIMITED_CODE = 4029
SLOW_READER_CODE = 1011
TOO_BIG_CODE = FRAME_REFUSED_CODE
REFUSED_MESSAGE = "Refused. Do not retry: the answer will not change."
RATE_LIMITED_MESSAGE = "Too many connections from this address in the last minute. Wait and retry."
SLOW_READER_MESSAGE = "This client was not reading. Reconnect."
STALE_TURN_SECONDS = 15 * 60


def slow_reader_seconds() -> float:
    return float(getattr(settings, "EMBED_SLOW_READER_SECONDS", 30))


def watchdog_seconds() -> float:
    return float(getattr(settings, "EMBED_TURN_WATCHDOG_SECONDS", 5))


async def in_db_thread(fn: Any, *args: Any) -> Any:
    """Run `fn` on a pooled thread, not on Channels' single database thread, and close that thread's
    connection after. Admission of hundreds of sockets at once would otherwise queue behind one thread
    (daphne drops a handshake not answered in 5 s); closing keeps no connection parked on a pool thread."""

    def call() -> Any:
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return await sync_to_async(call, thread_sensitive=False)()


# The widget and the hosted page name their continuity key and a signed visitor's token in the handshake's
# Sec-WebSocket-Protocol (`agenticos.v1, agenticos.visitor.<key>, agenticos.token.<jwt>`), never in the URL: a URL
# reaches access logs, a reverse proxy's among them (issue 37.6). A client of its own may still use the spec's
# `?visitor=` and `?token=`; a value in the header wins. Both are HTTP tokens (hex; a JWT's base64url and dots).
PROTOCOL = "agenticos.v1"
_CARRIED = ("agenticos.visitor.", "agenticos.token.")


def carried(subprotocols: list[str]) -> dict[str, str]:
    """{"visitor": …, "token": …} from the offered subprotocols (the first of each; the rest ignored)."""
    found: dict[str, str] = {}
    for offered in subprotocols:
        for prefix in _CARRIED:
            name = prefix.split(".")[1]
            if isinstance(offered, str) and offered.startswith(prefix) and name not in found:
                found[name] = offered[len(prefix):]
    return found


@dataclass
class Turn:
    run_id: uuid.UUID
    group: str
    filter: TurnFilter
    started: float
    last_frame: float = 0.0
    watchdog: asyncio.Task | None = None


class TurnRefused(Exception):
    """A message that gets an `error` frame instead of a run (the socket stays open)."""

    def __init__(self, message: str, code: str = "refused"):
        super().__init__(message)
        self.message = message
        self.code = code


class EmbedConsumer(AsyncWebsocketConsumer):
    embed: Embed
    visitor: str
    visitor_sub: str | None
    thread: str  # services.thread_of: the `sub` for a signed visitor, else the continuity key
    address: str
    turn: Turn | None = None
    gone: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._frame_lock = asyncio.Lock()

    # ------------------------------------------------------------------ connect

    async def connect(self) -> None:
        # No key at all (the catch-all route in embeds/routing.py) is refused like an unknown one.
        key = self.scope["url_route"]["kwargs"].get("key") or ""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        headers = {k.lower(): v.decode("latin-1") for k, v in self.scope.get("headers", [])}
        client = self.scope.get("client") or ("unknown", 0)
        self.address = ratelimit.client_address(client[0], headers.get(b"x-forwarded-for"))
        offered = carried(self.scope.get("subprotocols") or [])
        outcome = await in_db_thread(
            self._admit,
            key,
            headers.get(b"origin"),
            offered.get("token") or (query.get("token") or [None])[0],
            offered.get("visitor") or (query.get("visitor") or [None])[0],
        )
        # A refusal before accept would be an HTTP 403 with no code a client can read: accept, then close.
        # A browser fails a handshake whose answer names none of the subprotocols it offered: ours offer PROTOCOL.
        await self.accept(subprotocol=PROTOCOL if PROTOCOL in (self.scope.get("subprotocols") or []) else None)
        if outcome in ("rate_limited", "refused"):
            code, reason = (
                (RATE_LIMITED_CODE, RATE_LIMITED_MESSAGE) if outcome == "rate_limited" else (REFUSED_CODE, REFUSED_MESSAGE)
            )
            await self.close(code=code, reason=reason)
            # Done with this socket: a flood of refused connections holds no channel-layer listener.
            raise StopConsumer()
        history = outcome
        metrics.socket_opened("embed")
        self._socket_counted = True
        # `media`: what this surface's generated-file links carry instead of the continuity key (never in a URL).
        media = services.media_token(self.embed, self.thread)
        await self.send_frame({"type": "ready", "data": {"visitor": self.visitor_sub is not None, "media": media}})
        if self.embed.kind in (Embed.Kind.PAGE, Embed.Kind.WIDGET):
            # Both clients keep a continuity key; a raw socket replays nothing it did not ask for.
            await self.send_frame({"type": "history", "data": {"messages": history}})

    def _admit(self, key: str, origin: str | None, token: str | None, visitor: str | None) -> Any:
        limit = int(getattr(settings, "RATE_LIMIT_EMBED_PER_MINUTE", 30))
        allowed, _ = ratelimit.hit("embed-ws", self.address, limit)
        if not allowed:
            return "rate_limited"
        try:
            admission = services.admit(key, origin, token)
        except services.Refused as exc:
            logger.info("embed socket refused (%s) from %s", exc, self.address)
            return "refused"
        self.embed = admission.embed
        self.visitor_sub = admission.visitor_sub
        self.visitor = services.clean_visitor_key(visitor) or secrets.token_hex(16)
        self.thread = services.thread_of(self.visitor_sub, self.visitor)
        if self.embed.kind in (Embed.Kind.PAGE, Embed.Kind.WIDGET):
            return services.history_messages(services.find_conversation(self.embed, self.thread), self.embed)
        return []

    # ------------------------------------------------------------------ inbound

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.gone:
            return
        try:
            payload = decode_frame(text_data, bytes_data)
        except FrameTooBig:
            await self._stop(TOO_BIG_CODE, TOO_BIG_MESSAGE)
        except BadFrame as exc:
            await self.send_error(exc.message, "bad_frame")
            return
        # Unknown types and fields are ignored: a cached client may be older than this server.
        if isinstance(payload, dict) and payload.get("type") == "feedback":
            await self._feedback(payload)
            return
        if not isinstance(payload, dict) or payload.get("type") != "message":
            return
        if self.turn is not None and time.monotonic() - self.turn.started < STALE_TURN_SECONDS:
            await self.send_error("Wait for the answer to finish before sending another message.", "busy")
            return
        await self._drop_turn()
        run_id = uuid.uuid4()
        group = group_name(run_id)
        # Join before the run exists, so not a single frame can be published before we listen. Before the checks
        # too: they and the run's start are one trip to the database thread (one pool checkout, not two); a refused
        # message leaves the group again.
        await self.channel_layer.group_add(group, self.channel_name)
        try:
            await in_db_thread(self._prepare_and_start, payload, run_id)
        except services.Refused:
            await self.channel_layer.group_discard(group, self.channel_name)
            await self._refuse_and_close()
            return
        except (TurnRefused, DomainError) as exc:
            await self.channel_layer.group_discard(group, self.channel_name)
            await self.send_error(exc.message, exc.code)
            return
        # No frame of the run is relayed before this handler returns (a consumer handles one message at a time).
        now = time.monotonic()
        turn = Turn(run_id=run_id, group=group, filter=TurnFilter(Toggles.of(self.embed), run_id=str(run_id)),
                    started=now, last_frame=now)
        self.turn = turn
        turn.watchdog = asyncio.create_task(self._watch(turn))

    def _prepare_and_start(self, payload: dict, run_id: uuid.UUID) -> None:
        self._start(self._prepare(payload), run_id)

    def _prepare(self, payload: dict) -> dict:
        embed = (services.with_publisher_role(Embed.objects.select_related("agent", "organization", "created_by"))
                 .filter(pk=self.embed.pk).first())
        if embed is None or embed.is_paused:
            raise services.Refused("paused or deleted while connected")
        self.embed = embed
        identity = f"{embed.pk}:{self.visitor_sub or self.address}"
        allowed, retry = ratelimit.hit("embed-msg", identity, embed.rate_limit_per_minute)
        if not allowed:
            raise TurnRefused(f"You are sending messages too fast. Try again in {retry} seconds.", "rate_limited")
        text = payload.get("text")
        text = text.strip() if isinstance(text, str) else ""
        if not text:
            raise TurnRefused("The message is empty.", "empty")
        environment = services.resolve_environment(embed)
        if environment is None:
            raise TurnRefused("This assistant is not available right now.", "unavailable")
        file_ids = payload.get("file_ids") or []
        if file_ids and not (embed.kind == Embed.Kind.PAGE and embed.allow_uploads):
            raise TurnRefused("Files are not accepted here.", "files_not_accepted")
        if not isinstance(file_ids, list) or len(file_ids) > services.MAX_FILES_PER_MESSAGE:
            raise TurnRefused(f"At most {services.MAX_FILES_PER_MESSAGE} files per message.", "too_many_files")
        variables = services.visitor_variables(embed, payload.get("context"))
        return {"text": text, "environment": environment, "file_ids": [str(f) for f in file_ids], "variables": variables}

    async def _feedback(self, payload: dict) -> None:
        """👍/👎 on an answer of this visitor's own thread (embeds.services.visitor_feedback): answered with
        `feedback_saved`, or an error frame; the socket stays open either way."""
        try:
            saved = await in_db_thread(self._rate, payload)
        except services.Refused:
            await self._refuse_and_close()
            return
        except (TurnRefused, services.FeedbackRefused) as exc:
            await self.send_error(exc.message, exc.code)
            return
        await self.send_frame({"type": "feedback_saved", "data": saved})

    def _rate(self, payload: dict) -> dict:
        embed = Embed.objects.filter(pk=self.embed.pk).first()
        if embed is None or embed.is_paused:
            raise services.Refused("paused or deleted while connected")
        # Limited like messages, in a bucket of its own: rating answers never costs the visitor a message.
        identity = f"{embed.pk}:{self.visitor_sub or self.address}"
        allowed, retry = ratelimit.hit("embed-feedback", identity, embed.rate_limit_per_minute)
        if not allowed:
            raise TurnRefused(f"You are rating too fast. Try again in {retry} seconds.", "rate_limited")
        return services.visitor_feedback(embed, self.thread, self.visitor_sub, payload)

    def _start(self, prepared: dict, run_id: uuid.UUID) -> None:
        embed = self.embed
        user, role = services.publisher_authority(embed)
        with transaction.atomic():
            files = self._claim_files(embed, prepared["file_ids"])
            existing = services.find_conversation(embed, self.thread)
            conversation = existing or services.new_conversation(embed, self.thread)  # written with the run
            instructions, placement = services.turn_instructions(
                conversation, services.extra_instructions(embed, prepared["variables"]), fresh=existing is None
            )
            environment = prepared["environment"]
            # The visitor's thread is the sticky key; an existing conversation keeps its first run's version.
            served = rollouts.route(base=environment.version, rollout_id=environment.rollout_id, key=self.thread,
                                    conversation=conversation)
            run = runs.start_run(
                agent=embed.agent,
                version=served.version,
                surface="embed",
                prompt=prepared["text"],
                user=user,
                acting_role=role,
                conversation=conversation,
                embed_id=embed.pk,
                author_label=f"visitor {self.visitor_sub}" if self.visitor_sub else "",
                options={
                    "history_limit": services.HISTORY_LIMIT,
                    "extra_instructions": instructions,
                    # What of the context note and visitor variables this turn carried (see turn_instructions).
                    **({"placement": placement} if placement else {}),
                    "can_ask_user": False,
                    "recorded_prompt": prepared["text"],
                    "embed_kind": embed.kind,
                    **served.options(),
                },
                run_id=run_id,
                attachments=[
                    {"file_id": str(f.pk), "name": f.name, "mime": f.mime, "size": f.size, "path": f.path}
                    for f in files
                ],
            )
            if files:
                message = run.messages.order_by("id").first()
                EmbedFile.objects.filter(pk__in=[f.pk for f in files]).update(
                    message=message, attached_at=timezone.now()
                )

    def _claim_files(self, embed: Embed, file_ids: list[str]) -> list[EmbedFile]:
        if not file_ids:
            return []
        if embed.created_by_id is None:
            raise TurnRefused("Files are not available on this page.", "files_not_accepted")
        try:
            ids = [uuid.UUID(f) for f in file_ids]
        except ValueError:
            raise TurnRefused("One of those files is not available.", "file_not_found") from None
        files = list(
            EmbedFile.objects.select_for_update().filter(
                pk__in=ids, embed=embed, user_id=embed.created_by_id, attached_at__isnull=True
            )
        )
        if len(files) != len(set(ids)):
            raise TurnRefused("One of those files is not available.", "file_not_found")
        return files

    # ------------------------------------------------------------------ outbound

    async def dispatch(self, message: dict) -> None:
        # Channels hops to the one database thread (close_old_connections) before every handler. A run
        # frame touches no database, and with hundreds of sockets streaming word by word that hop per
        # word serialises every socket of the process behind one thread.
        # Every handler here does its database work through `in_db_thread`, which closes its own
        # connection, so that hop is skipped for every message, not only for run frames.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message.get('type')}")
        await handler(message)

    async def run_frame(self, event: dict) -> None:
        await self._relay(event.get("run_id"), [event.get("frame") or {}])

    async def run_frames(self, event: dict) -> None:
        # The runner batches frames that piled up while the socket was busy; each is filtered alone.
        await self._relay(event.get("run_id"), list(event.get("frames") or []))

    async def _relay(self, run_id: str | None, frames: list[dict]) -> None:
        turn = self.turn
        if turn is None or self.gone:
            return
        if run_id is not None and run_id != str(turn.run_id):
            # A late frame of a turn that already ended (its watchdog answered from the run row): it
            # was in this socket's inbox before the group was left. Never part of the current turn.
            return
        turn.last_frame = time.monotonic()
        async with self._frame_lock:
            for incoming in frames:
                if incoming.get("type") == "complete" and not (turn.filter.answered or turn.filter.parked):
                    # Nothing of the answer reached us (the channel layer drops for a full channel):
                    # the run row has it, so this is not "a turn that produced nothing".
                    output = await in_db_thread(self._output_of, turn.run_id)
                    if output:
                        for frame in turn.filter.apply({"type": "final_result", "data": {"output": output}}):
                            await self.send_frame(frame)
                for frame in turn.filter.apply(incoming):
                    await self.send_frame(frame)
                if turn.filter.finished:
                    break
        if turn.filter.finished and self.turn is turn:
            await self._drop_turn()

    async def _watch(self, turn: Turn) -> None:
        """The channel layer drops a message for a full channel without a word, so a turn must not hang
        on a `complete` that never comes: when frames stop, ask the run itself whether it has ended."""
        try:
            while self.turn is turn and not self.gone:
                await asyncio.sleep(watchdog_seconds())
                if self.turn is not turn or time.monotonic() - turn.last_frame < watchdog_seconds():
                    continue
                ending = await in_db_thread(self._ending_of, turn.run_id)
                if not ending or self.turn is not turn:
                    continue
                async with self._frame_lock:
                    for frame in ending:
                        for out in turn.filter.apply(frame):
                            await self.send_frame(out)
                if self.turn is turn:
                    await self._drop_turn()
                return
        except (StopConsumer, asyncio.CancelledError):
            return

    @staticmethod
    def _output_of(run_id: uuid.UUID) -> str:
        return Run.objects.filter(pk=run_id).values_list("output", flat=True).first() or ""

    @staticmethod
    def _ending_of(run_id: uuid.UUID) -> list[dict] | None:
        return ending_frames(run_id)

    async def send_frame(self, frame: dict) -> None:
        try:
            async with asyncio.timeout(slow_reader_seconds()):
                await self.send(text_data=json.dumps(frame, default=str))
        except TimeoutError:
            # Stop writing rather than hold the turn's stream open once per frame for a client that
            # is not reading; the run goes on and writes its transcript, a page resumes its thread.
            await self._stop(SLOW_READER_CODE, SLOW_READER_MESSAGE)

    async def send_error(self, message: str, code: str) -> None:
        await self.send_frame({"type": "error", "data": {"message": message, "code": code}})

    async def _refuse_and_close(self) -> None:
        await self._stop(REFUSED_CODE, REFUSED_MESSAGE)

    async def _drop_turn(self) -> None:
        turn, self.turn = self.turn, None
        if turn is not None:
            if turn.watchdog is not None and turn.watchdog is not asyncio.current_task():
                turn.watchdog.cancel()
            await self.channel_layer.group_discard(turn.group, self.channel_name)

    async def disconnect(self, code: int) -> None:
        self.gone = True
        self._uncount()
        await self._drop_turn()

    def _uncount(self) -> None:
        """The open-sockets gauge, once per counted socket: on the client's close, and on the server's own (1011,
        4003 after accept), where the consumer stops and no disconnect follows."""
        if getattr(self, "_socket_counted", False):
            self._socket_counted = False
            metrics.socket_closed("embed")

    async def _stop(self, code: int, reason: str) -> None:
        self.gone = True
        await self._drop_turn()
        self._uncount()
        await self.close(code=code, reason=reason)
        raise StopConsumer()
