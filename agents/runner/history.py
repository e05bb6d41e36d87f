"""The next turn's history: the newest N transcript messages of the branch on screen (agents.branches), as
pydantic-ai messages (after a compacted history's kept dump, when the conversation keeps one:
capabilities/compaction/persisted.py)."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from agents.models import Conversation, Message, NewestFirst


def get_recent_messages(conversation: Conversation | str, limit: int, *, before_id: int | None = None,
                        through: Any = None, fields: tuple[str, ...] = (),
                        annotate: dict[str, Any] | None = None) -> list[Message]:
    """The newest `limit` messages of a conversation, oldest first: all of them, those before the message
    `before_id`, or those up to and including `through` (an id or an expression giving one). `fields`
    loads more than id, role, content and created_at; `annotate` reads more beside them in the same statement
    (the compacted history's mark, capabilities/compaction/persisted.py).

    Reads from the newest end (index message_branch_newest, by NewestFirst: ordering by `-id` let the planner
    walk the primary key instead) so a 10,000-message thread costs what a 10-message one does.
    """
    conversation_id = conversation.pk if isinstance(conversation, Conversation) else conversation
    # Only the branch on screen (agents.branches): a regenerated or edited-away turn is not history.
    qs = Message.objects.filter(conversation_id=conversation_id, on_branch=True)
    if before_id is not None:
        qs = qs.filter(id__lt=before_id)
    if through is not None:
        qs = qs.filter(id__lte=through)
    if annotate:
        qs = qs.annotate(**annotate)
    newest = list(qs.order_by(NewestFirst("id")).only("id", "role", "content", "created_at", *fields)[:limit])
    newest.reverse()
    return newest


def to_model_messages(messages: list[Message]) -> list[ModelMessage]:
    """Earlier turns as plain text: what was said, not how the tools got there."""
    history: list[ModelMessage] = []
    for message in messages:
        if not message.content:
            continue
        if message.role == Message.Role.USER:
            history.append(ModelRequest(parts=[UserPromptPart(content=message.content)]))
        elif message.role == Message.Role.ASSISTANT:
            history.append(ModelResponse(parts=[TextPart(content=message.content)]))
    return history
