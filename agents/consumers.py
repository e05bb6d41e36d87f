"""Web chat socket `/ws/chat/` for signed-in members. Thin: admit, route by type, relay frames.

Also the inbound-frame rules both sockets (this one and the embed socket) share: `decode_frame` and the close a
frame larger than any message gets."""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from agenticos import metrics
from agenticos.errors import DomainError, NotFound
from agenticos.middleware import MAX_JSON_DEPTH
from agenticos.session_sockets import SessionBoundSocket
from agenticos.tenancy import SESSION_KEY, resolve_actor
from agents.chat import Admitted, member_run, regenerate_answer, start_member_run
from agents.models import TERMINAL_STATUSES, Run
from agents.run_handle import group_name
from agents.runner.frames import ending_frames, frame
from agents.runs import request_stop
from governance import services as governance
from governance import signals as governance_signals

logger = logging.getLogger(__name__)

CLOSE_REFUSED = 4003
# A frame larger than any message closes the socket with the surfaces spec's 4003 ("refused — do not retry, the
# answer will not change"): the same frame sent again gets the same answer. Not RFC 6455's 1009: daphne closes
# through autobahn's sendClose, which sends only 1000 and 3000–4999 and raises on anything else, so the client
# got daphne's 1011 ("reconnect") and a traceback was logged — and a client that reconnects resends the frame.
FRAME_REFUSED_CODE = 4003
TOO_BIG_MESSAGE = "That frame is too large. Do not resend it."


class BadFrame(Exception):
    """An inbound frame that is no frame: answered with a `bad_frame` error frame, the socket stays open."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class FrameTooBig(Exception):
    """An inbound frame larger than any message: the socket is closed with FRAME_REFUSED_CODE."""


def max_frame_chars() -> int:
    """The largest inbound frame: a message at MAX_MESSAGE_CHARS written entirely as JSON escapes (six
    characters each), plus room for its context and file ids. Anything bigger is no message anyone typed."""
    return 6 * int(getattr(settings, "MAX_MESSAGE_CHARS", 32000)) + 64 * 1024


def _deeper_than(value: Any, limit: int) -> bool:
    # Iterative: the frame is walked without the recursion a deep one would exhaust.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def decode_frame(text_data: str | None, bytes_data: bytes | None = None) -> Any:
    """The JSON value of an inbound text frame. FrameTooBig past `max_frame_chars`, checked before parsing (a
    parse would hold a thread and memory for nothing); BadFrame for a binary frame, text that is not JSON, or
    JSON nested deeper than the HTTP API accepts (MAX_JSON_DEPTH) — at ~1,000 levels the parser's recursion
    runs out, and a RecursionError escaping the consumer closed the socket 1011 with a traceback."""
    if len(text_data or bytes_data or "") > max_frame_chars():
        raise FrameTooBig
    if text_data is None:
        raise BadFrame("Frames are JSON text, not binary.")
    try:
        payload = json.loads(text_data)
    except RecursionError:
        raise BadFrame(f"That frame is nested deeper than {MAX_JSON_DEPTH} levels.") from None
    except ValueError:
        raise BadFrame("That frame is not JSON.") from None
    if _deeper_than(payload, MAX_JSON_DEPTH):
        raise BadFrame(f"That frame is nested deeper than {MAX_JSON_DEPTH} levels.")
    return payload


class ChatConsumer(SessionBoundSocket, AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_REFUSED)
            return
        await self.join_session_group()  # before admission: an ending while it is checked still reaches it
        try:
            self.actor = await database_sync_to_async(self._resolve)(user)
        except NotFound:
            await self.leave_session_group()
            await self.close(code=CLOSE_REFUSED)
            return
        self.groups_joined: set[str] = set()
        self.current_run_id: str | None = None
        await self.accept()
        metrics.socket_opened("chat")
        self._socket_counted = True

    def _resolve(self, user):
        session = self.scope.get("session")
        org_id = session.get(SESSION_KEY) if session is not None else None
        return resolve_actor(None, user=user, header_org=org_id,
                             session_key=session.session_key if session is not None else None)

    async def disconnect(self, code):
        if getattr(self, "_socket_counted", False):
            self._socket_counted = False
            metrics.socket_closed("chat")
        await self.leave_session_group()
        for group in getattr(self, "groups_joined", set()):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        # Not AsyncJsonWebsocketConsumer's: its json.loads let a frame that is not JSON, or is nested 10,000
        # deep, end the consumer with an exception (1011 on the wire, a traceback in the log).
        try:
            content = decode_frame(text_data, bytes_data)
        except FrameTooBig:
            await self.close(code=FRAME_REFUSED_CODE, reason=TOO_BIG_MESSAGE)
            return
        except BadFrame as exc:
            await self.send_json(frame("error", message=exc.message, code="bad_frame"))
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        handler = {
            "message": self._on_message,
            "regenerate": self._on_regenerate,
            "stop": self._on_stop,
            "ask_user_response": self._on_answer,
            "watch": self._on_watch,
        }.get(kind)
        if handler is None:
            await self.send_json(frame("error", message=f"Unknown frame type {kind!r}.", code="bad_frame"))
            return
        try:
            await handler(content)
        except DomainError as exc:
            await self.send_json(frame("error", message=exc.message, code=exc.code, details=exc.details))

    async def _join(self, run_id: str) -> None:
        group = group_name(run_id)
        if group not in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.add(group)

    async def _on_message(self, content):
        await self._start(functools.partial(
            start_member_run,
            actor=self.actor,
            agent_id=content.get("agent_id"),
            text=content.get("text") or "",
            surface="web",
            conversation_id=content.get("conversation_id"),
            create_conversation=True,
            environment=content.get("environment") or "production",
            can_ask_user=True,
            # Ids the attachment upload answered (POST /api/v1/attachments): the sender's own, once each.
            attachment_ids=content.get("attachment_ids"),
            # An edited message of the person's: a sibling that forks the conversation there (agents.branches).
            edit_of=content.get("edit_of"),
        ))

    async def _on_regenerate(self, content):
        # The answer `message_id` again, in place: the old one stays as its sibling (agents.branches).
        await self._start(functools.partial(
            regenerate_answer, actor=self.actor, conversation_id=content.get("conversation_id"),
            message_id=content.get("message_id"), surface="web", can_ask_user=True))

    async def _start(self, start: Callable[..., tuple[Run, Admitted]]) -> None:
        run_id = uuid.uuid4()
        # Join before the run can start, so no frame is missed.
        await self._join(str(run_id))
        try:
            run, admitted = await database_sync_to_async(start)(run_id=run_id)
        except DomainError:
            await self.channel_layer.group_discard(group_name(str(run_id)), self.channel_name)
            self.groups_joined.discard(group_name(str(run_id)))
            raise
        self.current_run_id = str(run.pk)
        if admitted.created_conversation and admitted.conversation is not None:
            await self.send_json(
                frame("conversation_created", conversation_id=str(admitted.conversation.pk),
                      title=admitted.conversation.title)
            )
        await self.send_json(frame("run_started", run_id=str(run.pk),
                                   conversation_id=str(run.conversation_id) if run.conversation_id else None))
        if admitted.user_message_id:
            await self.send_json(frame("message_saved", message_id=admitted.user_message_id, role="user"))

    async def _on_stop(self, content):
        run_id = content.get("run_id") or self.current_run_id
        if not run_id:
            raise NotFound("There is no run to stop.")
        run = await database_sync_to_async(member_run)(self.actor, run_id)
        await database_sync_to_async(request_stop)(run)

    async def _on_answer(self, content):
        run_id = content.get("run_id") or self.current_run_id
        run = await database_sync_to_async(member_run)(self.actor, run_id)
        await self._join(str(run.pk))
        await database_sync_to_async(governance.answer_questions)(
            actor=self.actor, run=run, answers=content.get("answers") or []
        )

    async def _on_watch(self, content):
        # A reopened view of a run that still goes on or waits (a reloaded tab): it follows that run's frames,
        # among them the decision on its approval wherever it is made. Only a run this member may read.
        run = await database_sync_to_async(member_run)(self.actor, content.get("run_id"))
        await self._join(str(run.pk))
        # A run that ended between the page's read and this join sends nothing more: its ending, rebuilt from
        # its row, ends the view's turn instead (a run that waits for a person has not ended).
        ending = await database_sync_to_async(ending_frames)(run.pk)
        if ending and ending[-1]["data"].get("status") in TERMINAL_STATUSES:
            for payload in ending:
                await self.send_json(payload)

    async def run_frame(self, event):
        await self.send_json(event["frame"])

    async def run_frames(self, event):
        for payload in event["frames"]:
            await self.send_json(payload)


def broadcast_approval_decision(sender=None, *, approval_id, **kwargs) -> None:
    """Every open view of a run hears that one of its calls was decided — on the Approvals page, in the REST
    API, in a chat platform or in another tab — so no view keeps offering a decision already made. Sent after
    the deciding transaction commits (governance.signals)."""
    from governance.models import Approval

    row = Approval.objects.filter(pk=approval_id).values("run_id", "status").first()
    layer = get_channel_layer()
    if row is None or layer is None:
        return
    async_to_sync(layer.group_send)(group_name(row["run_id"]), {"type": "run.frame", "frame": frame(
        "approval_decided", approval_id=str(approval_id), run_id=str(row["run_id"]), status=row["status"])})


# Connected where the socket lives (every web process imports this module through config.routing).
governance_signals.approval_decided.connect(broadcast_approval_decision, dispatch_uid="agents.chat.approval_decided")
