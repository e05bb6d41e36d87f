"""The live view's socket `/ws/browse/<run_id>/<call_id>/`: a member who may read the run watches the browse; the
run's person or an editor of the agent may take the tab. Thin: admit, route by type, relay (live.py does the
rest, in the worker that holds the tab).

Frames out: `hello` {can_control, control, live, ended, steps, frame, agent}, then what the worker publishes — `frame`
{jpeg (base64), width, height}, `step` {line}, `agent` {state: paused | resumed | needs_person, reason?},
`ended` — and `control` {holder (a label) or null, mine}. Frames in: `take`, `release`, `input` {event:
{kind: click|scroll|text|key, x, y, dy, text, key}} (only from who holds the tab).

`?preview=1` is the chat's preview of the browse (`console/static/console/browse-preview.js`, the binding's `preview`): the
same people may open it, only while the browse runs with `preview` on (else it is accepted and closed at once with
4003, so no frame reaches the chat and the browser logs no failed handshake), and it only watches: `hello` {live, ended, frame}, then `frame` and `ended`; nothing it sends acts.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from agenticos.errors import NotFound
from agenticos.session_sockets import SessionBoundSocket
from agenticos.tenancy import SESSION_KEY, resolve_actor
from capabilities.browser import live

CLOSE_REFUSED = 4003  # the chat socket's and the embeds' one refusal code, whatever the cause
PREVIEW_FRAMES = ("frame", "ended")  # what the chat's preview is sent: the picture, and that it is over


class BrowseLiveConsumer(SessionBoundSocket, AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        kwargs = self.scope["url_route"]["kwargs"]
        self.run_id, self.call_id = str(kwargs["run_id"]), str(kwargs["call_id"])
        self.joined = False
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.preview = query.get("preview") == ["1"]
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_REFUSED)
            return
        await self.join_session_group()  # before admission: an ending while it is checked still reaches it
        try:
            self.actor, self.can_control = await database_sync_to_async(self._admit)(user)
            self.label = str(getattr(user, "label", "") or user.get_username())
        except NotFound:
            await self.leave_session_group()
            await self.close(code=CLOSE_REFUSED)
            return
        if self.preview and not await asyncio.to_thread(live.previewable, self.run_id, self.call_id):
            # Accepted, then closed with the refusal code: the chat asks for the picture of every running browse
            # it may watch, and a handshake answered 403 is an error in the browser's console; a close is not.
            await self.accept()
            await self.close(code=CLOSE_REFUSED)
            return
        await self.channel_layer.group_add(live.view_group(self.run_id, self.call_id), self.channel_name)
        self.joined = True
        await self.accept()
        state = await asyncio.to_thread(live.snapshot, self.run_id, self.call_id)
        if self.preview:
            await self.send_json(live.frame("hello", live=state["live"], ended=state["ended"], frame=state["frame"]))
            return
        await self.send_json(live.frame("hello", can_control=self.can_control,
                                        control=await self._control(), **state))

    def _admit(self, user: Any) -> tuple[Any, bool]:
        session = self.scope.get("session")
        actor = resolve_actor(None, user=user, header_org=session.get(SESSION_KEY) if session is not None else None,
                              session_key=session.session_key if session is not None else None)
        self.run, can_control = live.viewer_of(actor, self.run_id)
        return actor, can_control

    def _client_address(self) -> str | None:
        return (self.scope.get("client") or [None])[0]

    async def disconnect(self, code: int) -> None:
        await self.leave_session_group()
        if self.joined:
            await self.channel_layer.group_discard(live.view_group(self.run_id, self.call_id), self.channel_name)
            if self.preview:  # the chat's picture holds nothing; the same person's live view may hold the tab
                return
            # A person who closes the view while holding the tab hands it back, rather than leave the agent
            # waiting out the 15 minutes.
            await self._release()

    async def _control(self) -> dict[str, Any]:
        holder = await asyncio.to_thread(live.controller, self.run_id, self.call_id)
        return {"holder": holder.get("label") if holder else None,
                "mine": bool(holder and holder.get("user_id") == self.actor.user_id)}

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if self.preview:
            await self.send_json(live.frame("error", code="bad_frame", message="The chat's preview only watches."))
            return
        handler = {"take": self._on_take, "release": self._on_release, "input": self._on_input}.get(str(kind))
        if handler is None:
            await self.send_json(live.frame("error", code="bad_frame", message=f"Unknown frame type {kind!r}."))
            return
        await handler(content)

    async def _on_take(self, content: dict[str, Any]) -> None:
        if not self.can_control:
            await self.send_json(live.frame("error", code="forbidden",
                                            message="Only the run's person or an editor of the agent can take "
                                                    "control; you can watch."))
            return
        taken = await asyncio.to_thread(live.take_control, self.run_id, self.call_id,
                                        user_id=self.actor.user_id, label=self.label)
        if not taken:
            await self.send_json(live.frame("error", code="conflict",
                                            message="Someone else has the browser, or the browse is over."))
            return
        await database_sync_to_async(live.audit_control)(self.actor, self.run, self.call_id, "browser.taken_over",
                                                        self._client_address())
        await self._broadcast_control()

    async def _on_release(self, content: dict[str, Any]) -> None:
        await self._release()

    async def _release(self) -> None:
        """While the browse is live, the hand-back goes to the worker behind this person's inputs (the same
        group, in order), and the worker releases and tells the views; a browse that is over is released here."""
        holder = await asyncio.to_thread(live.controller, self.run_id, self.call_id)
        if holder is None or holder.get("user_id") != self.actor.user_id:
            return
        await database_sync_to_async(live.audit_control)(self.actor, self.run, self.call_id, "browser.handed_back",
                                                        self._client_address())
        if await asyncio.to_thread(live.is_live, self.run_id, self.call_id):
            await self.channel_layer.group_send(live.input_group(self.run_id, self.call_id), {
                "type": "browse.input", "user_id": self.actor.user_id, "release": True})
        elif await asyncio.to_thread(live.release_control, self.run_id, self.call_id, user_id=self.actor.user_id):
            await self._broadcast_control()

    async def _broadcast_control(self) -> None:
        holder = await asyncio.to_thread(live.controller, self.run_id, self.call_id)
        await self.channel_layer.group_send(live.view_group(self.run_id, self.call_id), {
            "type": "browse.control", "holder": holder})

    async def _on_input(self, content: dict[str, Any]) -> None:
        holder = await asyncio.to_thread(live.controller, self.run_id, self.call_id)
        if holder is None or holder.get("user_id") != self.actor.user_id:
            return  # a viewer's clicks go nowhere
        event = content.get("event")
        if isinstance(event, dict):
            await self.channel_layer.group_send(live.input_group(self.run_id, self.call_id), {
                "type": "browse.input", "user_id": self.actor.user_id, "event": event})

    async def browse_frame(self, event: dict[str, Any]) -> None:
        if self.preview and event["frame"].get("type") not in PREVIEW_FRAMES:
            return
        await self.send_json(event["frame"])

    async def browse_control(self, event: dict[str, Any]) -> None:
        if self.preview:
            return
        holder = event.get("holder")
        await self.send_json(live.frame("control", holder=holder.get("label") if holder else None,
                                        mine=bool(holder and holder.get("user_id") == self.actor.user_id)))
