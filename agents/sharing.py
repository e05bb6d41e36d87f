"""Read-only share links to a conversation. The owner makes one (at most one open per conversation) and revokes
it; a visitor with the link — signed in or not — reads the branch on screen as text: the person's words and the
answers' text, never tool steps, their arguments or results, thinking, or files (what an embed with every
"show" toggle off would show)."""

from __future__ import annotations

import secrets
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import NotFound
from agenticos.tenancy import Actor
from agents.models import Conversation, ConversationShare, Message


def open_share(conversation: Conversation) -> ConversationShare | None:
    return ConversationShare.objects.filter(conversation=conversation, revoked_at__isnull=True).first()


def share(*, actor: Actor, conversation_id: Any) -> ConversationShare:
    from agents.chat import own_conversation

    actor.require("agents:run")
    conversation = own_conversation(actor, conversation_id, draft=False)
    existing = open_share(conversation)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            made = ConversationShare.objects.create(conversation=conversation, created_by=actor.user,
                                                    token=secrets.token_urlsafe(32))
            audit.record(actor=actor.user, organization=actor.organization, action="conversation.shared",
                         target=conversation, details={"share_id": made.pk})
    except IntegrityError:  # a second click raced the first: its link is the one
        made = open_share(conversation)  # type: ignore[assignment]
    return made


def revoke(*, actor: Actor, conversation_id: Any) -> None:
    from agents.chat import own_conversation

    actor.require("agents:run")
    conversation = own_conversation(actor, conversation_id, draft=False)
    with transaction.atomic():
        if ConversationShare.objects.filter(conversation=conversation, revoked_at__isnull=True).update(
                revoked_at=timezone.now()):
            audit.record(actor=actor.user, organization=actor.organization, action="conversation.share_revoked",
                         target=conversation, details={})


def shared(token: str) -> Conversation:
    found = (ConversationShare.objects.select_related("conversation", "conversation__agent")
             .filter(token=token, revoked_at__isnull=True).first()) if token else None
    if found is None:
        raise NotFound("This link is unknown or was revoked.")
    return found.conversation


def shared_turns(conversation: Conversation) -> list[dict[str, Any]]:
    """The branch on screen as the turn renderer draws it, text only."""
    turns: list[dict[str, Any]] = []
    for message in Message.objects.filter(conversation=conversation, on_branch=True,
                                          role__in=[Message.Role.USER, Message.Role.ASSISTANT]).order_by("id"):
        if message.role == Message.Role.USER:
            turns.append({"role": "user", "text": message.content})
            continue
        if not message.content:
            continue
        previous = turns[-1] if turns else None
        if previous and previous["role"] == "assistant" and previous.get("run_id") == str(message.run_id):
            previous["parts"].append({"type": "text", "text": message.content})
            continue
        turns.append({"role": "assistant", "agent": conversation.agent.name, "run_id": str(message.run_id),
                      "parts": [{"type": "text", "text": message.content}]})
    for turn in turns:
        turn.pop("run_id", None)
    return turns
