"""Web chat socket `/ws/chat/` for signed-in members. Thin: admit, route by type, relay frames."""

from __future__ import annotations

import logging
import uuid

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer

from agenticos import metrics
from agenticos.errors import DomainError, NotFound
from agenticos.tenancy import SESSION_KEY, resolve_actor
from agents.chat import member_run, start_member_run
from agents.runner.frames import frame
from agents.runs import group_name, request_stop
from governance import services as governance
from governance import signals as governance_signals

logger = logging.getLogger(__name__)

CLOSE_REFUSED = 4003


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_REFUSED)
            return
        try:
            self.actor = await database_sync_to_async(self._resolve)(user)
        except NotFound:
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
        return resolve_actor(None, user=user, header_org=org_id)

    async def disconnect(self, code):
        if getattr(self, "_socket_counted", False):
            self._socket_counted = False
            metrics.socket_closed("chat")
        for group in getattr(self, "groups_joined", set()):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        handler = {
            "message": self._on_message,
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
        run_id = uuid.uuid4()
        # Join before the run can start, so no frame is missed.
        await self._join(str(run_id))
        try:
            run, admitted = await database_sync_to_async(start_member_run)(
                actor=self.actor,
                agent_id=content.get("agent_id"),
                text=content.get("text") or "",
                surface="web",
                conversation_id=content.get("conversation_id"),
                create_conversation=True,
                environment=content.get("environment") or "production",
                run_id=run_id,
                can_ask_user=True,
                # Ids the attachment upload answered (POST /api/v1/attachments): the sender's own, once each.
                attachment_ids=content.get("attachment_ids"),
            )
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


# Connected where the socket lives (every web process imports this module through agenticos.routing).
governance_signals.approval_decided.connect(broadcast_approval_decision, dispatch_uid="agents.chat.approval_decided")
