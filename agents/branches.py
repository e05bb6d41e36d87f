"""A conversation as a tree: regenerate and edit in place, and the branch on screen.

Every message has a parent (the message it follows) and `on_branch`, true on the one path from a root that the
chat shows and the next turn's history reads (agents.runner.history reads only it). A new message follows the
newest message of the branch (`leaf`, evaluated in the statement that inserts it), so surfaces that know
nothing of branches keep writing a line.

- Regenerate an answer: the answer and what came after it leave the branch, and a new run answers the same
  message of the person (`options["reply_to"]`): the new answer is the old one's sibling.
- Edit a message: it and what came after leave the branch, and the edited text is a new message with the same
  parent — a sibling of the one edited.
- Show a sibling (the version arrows): the shown sibling's subtree leaves the branch, and the chosen one comes
  back with the descendants it had on screen when it left (its newest ones if it never was).

A kept compacted history (capabilities/compaction) that covers a message which left the branch quotes the other
branch: it is dropped, and the next turn reads the branch's transcript as text.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Q, Subquery

from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.tenancy import Actor
from agents.models import TERMINAL_STATUSES, CompactedHistory, Conversation, Message, NewestFirst, Run

# Conversation.state's key: message id → the child of it that was on screen when it left the branch.
SHOWN = "shown_versions"


def leaf(conversation_id: Any) -> Subquery:
    """The newest message of the conversation's branch on screen: the parent of the next message written."""
    # NewestFirst, not "-id": the index message_branch_newest, never a walk back along the primary key.
    return Subquery(Message.objects.filter(conversation_id=conversation_id, on_branch=True)
                    .order_by(NewestFirst("id")).values("id")[:1])


def _tree(conversation_id: Any) -> tuple[dict[int, dict[str, Any]], dict[int | None, list[int]]]:
    rows: dict[int, dict[str, Any]] = {row["id"]: dict(row) for row in Message.objects.filter(
        conversation_id=conversation_id).values("id", "parent_id", "role", "on_branch")}
    children: dict[int | None, list[int]] = defaultdict(list)
    for row in rows.values():
        parent = row["parent_id"] if row["parent_id"] in rows else None
        children[parent].append(row["id"])
    for ids in children.values():
        ids.sort()
    return rows, children


def _subtree(children: dict[int | None, list[int]], root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(children.get(node, ()))
    return out


def _path_down(children: dict[int | None, list[int]], start: int, shown: dict[str, int]) -> list[int]:
    """`start` and, at every step down, the child that was on screen when it left (else the newest): the branch a
    chosen sibling brings back, as it was."""
    path = [start]
    while children.get(path[-1]):
        below = children[path[-1]]
        remembered = shown.get(str(path[-1]))
        path.append(remembered if remembered in below else below[-1])
    return path


def siblings(messages: list[Message]) -> dict[int, list[int]]:
    """For each given message, the ids of it and its siblings of the same role, oldest first (one query)."""
    if not messages:
        return {}
    conversation_id = messages[0].conversation_id
    parents = {m.parent_id for m in messages}
    linked = Q(parent_id__in=[p for p in parents if p is not None])
    rows = Message.objects.filter(conversation_id=conversation_id).filter(
        linked | Q(parent__isnull=True) if None in parents else linked)
    groups: dict[tuple[int | None, str], list[int]] = defaultdict(list)
    for row in rows.values("id", "parent_id", "role").order_by("id"):
        if row["parent_id"] in parents:
            groups[(row["parent_id"], row["role"])].append(row["id"])
    return {m.pk: groups.get((m.parent_id, m.role), [m.pk]) for m in messages}


def _locked(actor: Actor, conversation_id: Any) -> Conversation:
    from agents.chat import own_conversation

    conversation = own_conversation(actor, conversation_id, draft=False)
    conversation = Conversation.objects.select_for_update().get(pk=conversation.pk)
    if Run.objects.filter(conversation=conversation).exclude(status__in=list(TERMINAL_STATUSES)).exists():
        raise Conflict("A run of this conversation is still going or waiting for a decision: stop it first.",
                       code="run_active")
    return conversation


def _message(conversation: Conversation, message_id: Any) -> Message:
    try:
        return Message.objects.get(conversation=conversation, pk=int(message_id))
    except (TypeError, ValueError, Message.DoesNotExist):
        raise NotFound("Message not found.") from None


def _leave(conversation: Conversation, ids: list[int], rows: dict[int, dict[str, Any]],
           children: dict[int | None, list[int]]) -> None:
    """`ids` leave the branch; which child of each was on screen is kept (Conversation.state["shown"]), so the
    arrows bring that branch back as it was."""
    if not ids:
        return
    shown = conversation.state.setdefault(SHOWN, {})
    for node in ids:
        on = [c for c in children.get(node, ()) if rows[c]["on_branch"]]
        if rows[node]["on_branch"] and on:
            shown[str(node)] = on[0]
    conversation.save(update_fields=["state"])
    Message.objects.filter(conversation=conversation, pk__in=ids, on_branch=True).update(on_branch=False)
    CompactedHistory.objects.filter(conversation=conversation, through_message_id__gte=min(ids)).delete()


def show_branch(*, actor: Actor, conversation_id: Any, message_id: Any) -> Message:
    """The owner shows another version (a sibling) of a message: the chat, another tab, the API and the next
    turn's history all follow the branch through it (its newest descendants below it)."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked(actor, conversation_id)
        message = _message(conversation, message_id)
        if message.on_branch:
            return message
        rows, children = _tree(conversation.pk)
        parent = message.parent_id if message.parent_id in rows else None
        if parent is not None and not rows[parent]["on_branch"]:
            raise Invalid("That message is not a version of one on screen.", code="not_on_screen")
        shown = [s for s in children.get(parent, []) if rows[s]["on_branch"]]
        off = [node for s in shown for node in _subtree(children, s)]
        on = _path_down(children, message.pk, conversation.state.get(SHOWN) or {})
        _leave(conversation, off, rows, children)
        Message.objects.filter(pk__in=on).update(on_branch=True)
        CompactedHistory.objects.filter(conversation=conversation, through_message_id__gte=min(on)).delete()
    return message


def answer_to_regenerate(*, actor: Actor, conversation_id: Any, message_id: Any) -> tuple[Conversation, Message]:
    """Inside the caller's transaction: the person's message an answer replied to, once the answer and what
    followed it have left the branch (the new run answers that message again: agents.chat.regenerate)."""
    conversation = _locked(actor, conversation_id)
    answer = _message(conversation, message_id)
    if answer.role != Message.Role.ASSISTANT or not answer.on_branch:
        raise Invalid("Only an answer on screen can be regenerated.", code="not_an_answer")
    rows, children = _tree(conversation.pk)
    asked = answer.parent_id
    while asked is not None and asked in rows and rows[asked]["role"] != Message.Role.USER:
        asked = rows[asked]["parent_id"]
    if asked is None or asked not in rows:
        raise Invalid("This answer replies to no message of yours.", code="not_an_answer")
    # The whole turn goes: from the person's message's child on screen (a resumed run's answer is several).
    first = next(c for c in children[asked] if rows[c]["on_branch"])
    _leave(conversation, _subtree(children, first), rows, children)
    return conversation, Message.objects.get(pk=asked)


def message_to_edit(*, actor: Actor, conversation_id: Any, message_id: Any) -> Message:
    """Inside the caller's transaction: the person's message being edited, once it and what followed have left
    the branch (the edited text is written next, with the same parent: agents.chat.start_member_run)."""
    conversation = _locked(actor, conversation_id)
    message = _message(conversation, message_id)
    if message.role != Message.Role.USER or not message.on_branch:
        raise Invalid("Only a message of yours on screen can be edited.", code="not_editable")
    rows, children = _tree(conversation.pk)
    _leave(conversation, _subtree(children, message.pk), rows, children)
    return message

