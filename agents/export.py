"""A conversation exported: the branch on screen as Markdown (what was said, for a person to read or paste), or
the whole tree as JSON (every version, with `parent_id` and `on_branch`, for a program). Text and file names only:
no tool arguments or results, no internal ids of other objects."""

from __future__ import annotations

from typing import Any

from agents.models import Conversation, Message


def _messages(conversation: Conversation, *, branch_only: bool) -> list[Message]:
    qs = Message.objects.filter(conversation=conversation, role__in=[Message.Role.USER, Message.Role.ASSISTANT])
    if branch_only:
        qs = qs.filter(on_branch=True)
    return list(qs.only("id", "parent_id", "role", "author_label", "content", "attachments", "on_branch",
                        "created_at").order_by("id"))


def as_markdown(conversation: Conversation) -> str:
    title = conversation.title or conversation.agent.name
    lines = [f"# {title}", "", f"*{conversation.agent.name} · {conversation.created_at:%Y-%m-%d %H:%M} UTC*", ""]
    for message in _messages(conversation, branch_only=True):
        who = (message.author_label or "You") if message.role == Message.Role.USER else conversation.agent.name
        lines += [f"## {who}", ""]
        files = [str(a.get("name", "")) for a in message.attachments or [] if isinstance(a, dict)]
        if files:
            lines += [f"*Attached: {', '.join(files)}*", ""]
        lines += [message.content.strip(), ""]
    return "\n".join(lines).rstrip() + "\n"


def as_json(conversation: Conversation) -> dict[str, Any]:
    messages = _messages(conversation, branch_only=False)
    return {
        "id": str(conversation.pk),
        "title": conversation.title,
        "agent": {"id": str(conversation.agent_id), "name": conversation.agent.name},
        "created_at": conversation.created_at.isoformat(),
        "branch": [m.pk for m in messages if m.on_branch],
        "messages": [{
            "id": m.pk, "parent_id": m.parent_id, "on_branch": m.on_branch, "role": m.role,
            "author": m.author_label, "content": m.content, "created_at": m.created_at.isoformat(),
            "attachments": [str(a.get("name", "")) for a in m.attachments or [] if isinstance(a, dict)],
        } for m in messages],
    }
