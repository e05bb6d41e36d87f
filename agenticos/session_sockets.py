"""Open sockets of a session that stopped: a member's console sockets (web chat, the Builder's test chat, the live
browse view) are admitted once, at the handshake, so a session signed out, closed for an organization, or a member
suspended or removed there would otherwise keep a socket that goes on acting. Each such socket joins its person's
group on the channel layer; whoever ends access sends one event there after the ending commits, and the sockets it
concerns close at once with the surfaces spec's 4003 ("refused — do not retry, the answer will not change").

The event names sessions by a digest of their key, never the key itself (the channel layer is Redis: a session key
there is a credential at rest). Kernel code: the consumers (agents, capabilities) and the services that end access
(agenticos.services, identity) all sit above it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

CLOSE_SIGNED_OUT = 4003  # the spec's one refusal code: a reconnect would be refused the same way
EVENT_TYPE = "session.ended"  # handled by SessionBoundSocket.session_ended


def user_group(user_id: Any) -> str:
    return f"signin.user.{user_id}"


def session_tag(session_key: str | None) -> str:
    return hashlib.sha256((session_key or "").encode()).hexdigest()[:32] if session_key else ""


def end_sockets(*, user_id: Any, organization_id: Any = None, session_keys: Iterable[str] | None = None) -> None:
    """Close, once the current transaction commits, the person's sockets that act in `organization_id` (any
    organization when None) through one of `session_keys` (any session when None)."""
    event = {"type": EVENT_TYPE, "organization": str(organization_id) if organization_id is not None else None,
             "sessions": sorted({session_tag(k) for k in session_keys if k}) if session_keys is not None else None}
    if event["sessions"] == []:
        return
    group = user_group(user_id)

    def send() -> None:
        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(group, event)

    transaction.on_commit(send)


def concerns(event: dict[str, Any], *, organization_id: Any, session_key: str | None) -> bool:
    """Whether a socket acting in `organization_id` through `session_key` is one the event ends."""
    organization = event.get("organization")
    if organization is not None and organization != str(organization_id):
        return False
    sessions = event.get("sessions")
    return sessions is None or session_tag(session_key) in sessions


class SessionBoundSocket:
    """Mixed into a cookie-authenticated consumer (before channels' consumer class): `join_session_group` once
    admitted, `leave_session_group` on disconnect; the close comes by itself."""

    channel_layer: Any
    channel_name: str
    scope: dict[str, Any]
    _session_group = ""

    def _bound_organization_id(self) -> Any:
        actor = getattr(self, "actor", None)
        return actor.organization.pk if actor is not None else None

    async def join_session_group(self) -> None:
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            self._session_group = user_group(user.pk)
            await self.channel_layer.group_add(self._session_group, self.channel_name)

    async def leave_session_group(self) -> None:
        if self._session_group:
            await self.channel_layer.group_discard(self._session_group, self.channel_name)
            self._session_group = ""

    async def session_ended(self, event: dict[str, Any]) -> None:
        session = self.scope.get("session")
        if concerns(event, organization_id=self._bound_organization_id(),
                    session_key=session.session_key if session is not None else None):
            await self.close(code=CLOSE_SIGNED_OUT)  # type: ignore[attr-defined]
