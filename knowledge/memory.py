"""Memory notes: which store a run touches, the note operations the tools use, and Settings → Memory.

A note belongs to exactly one person or one group chat, per agent. The store is derived on the server
from who will hear the answer (`knowledge.runtime.audience_for`), never from the model:

| who hears                                   | store                                         |
|---------------------------------------------|-----------------------------------------------|
| one person (web chat, direct message)       | that person's (unless personal memory is off) |
| a group chat                                | the chat's; the speaker's own notes never     |
| a widget, an embed, an API-key run          | none: the tools say so                        |
| a schedule / event trigger                  | none — unless it runs as its creator: then a  |
|                                             | schedule reads and writes the creator's, an   |
|                                             | event only reads it                           |

`MEMORY.md` is the index the agent keeps; it is injected in one-to-one conversations only, and left out
(never cut) past ~6,000 characters. Suspended notes are invisible to every tool; suspending or deleting a
note removes the index lines that name it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from knowledge.models import MemoryNote
from knowledge.runtime import Audience

INDEX_NAME = "MEMORY.md"
INDEX_LIMIT = 6_000
NAME_RE = re.compile(r"^[\w][\w .\-]{0,119}$")


@dataclass(frozen=True)
class Store:
    organization_id: str
    agent_id: str
    owner_user_id: int | None = None
    chat_key: str = ""
    writable: bool = True

    def notes(self):
        qs = MemoryNote.objects.filter(organization_id=self.organization_id, agent_id=self.agent_id)
        if self.owner_user_id is not None:
            return qs.filter(owner_user_id=self.owner_user_id, chat_key="")
        return qs.filter(owner_user__isnull=True, chat_key=self.chat_key)

    def active(self):
        return self.notes().filter(status=MemoryNote.Status.ACTIVE)


class NoStore(Exception):
    """This run has no memory store; the message says why (returned to the model as a refusal)."""


def store_for(audience: Audience, *, organization_id: str, agent_id: str, allow_personal: bool) -> Store:
    personal_off = NoStore("Personal memory is turned off for this agent, so nothing about a person is kept.")
    if audience.kind == "person":
        if not allow_personal:
            raise personal_off
        return Store(organization_id, agent_id, owner_user_id=audience.user_id)
    if audience.kind == "group":
        if not audience.chat_key:
            raise NoStore("This group chat cannot be identified, so it has no memory store.")
        return Store(organization_id, agent_id, chat_key=audience.chat_key)
    if audience.kind == "nobody":
        if audience.run_as_creator and audience.user_id is not None:
            if not allow_personal:
                raise personal_off
            return Store(organization_id, agent_id, owner_user_id=audience.user_id,
                         writable=audience.trigger_kind == "schedule")
        raise NoStore(
            "This run is a schedule or an event trigger: nobody is listening, so there is no memory store. "
            "Put what a scheduled run needs in its prompt or in a bound context file."
        )
    raise NoStore(
        "This chat has no memory store: it is a public widget, an embed or an API-key run, so nothing can be "
        "attributed to a person. Nothing was saved or read."
    )


# ------------------------------------------------------------------ tool operations (sync)


def valid_name(name: str) -> bool:
    return bool(NAME_RE.match(name or ""))


def list_notes(store: Store) -> list[MemoryNote]:
    return list(store.active().order_by("name"))


def read_note(store: Store, name: str) -> MemoryNote | None:
    return store.active().filter(name=name).first()


def write_note(store: Store, name: str, content: str) -> tuple[MemoryNote, bool]:
    """Create or replace. A suspended note's name stays taken: writing it again revives the row with the new
    content (what was suspended is overwritten, not restored)."""
    with transaction.atomic():
        note = store.notes().select_for_update().filter(name=name).first()
        now = timezone.now()
        if note is None:
            note = MemoryNote.objects.create(
                organization_id=store.organization_id, agent_id=store.agent_id, owner_user_id=store.owner_user_id,
                chat_key=store.chat_key, name=name, content=content, created_at=now, updated_at=now,
            )
            return note, True
        note.content = content
        note.status = MemoryNote.Status.ACTIVE
        note.updated_at = now
        note.save(update_fields=["content", "status", "updated_at"])
        return note, False


def edit_note(store: Store, name: str, old_text: str, new_text: str) -> str | MemoryNote:
    with transaction.atomic():
        note = store.active().select_for_update().filter(name=name).first()
        if note is None:
            return "missing"
        count = note.content.count(old_text) if old_text else 0
        if count != 1:
            return "none" if count == 0 else "many"
        note.content = note.content.replace(old_text, new_text, 1)
        note.updated_at = timezone.now()
        note.save(update_fields=["content", "updated_at"])
        return note


def delete_note(store: Store, name: str) -> bool:
    with transaction.atomic():
        note = store.active().filter(name=name).first()
        if note is None:
            return False
        note.delete()
        if name != INDEX_NAME:
            prune_index(store, name)
        return True


def index_text(store: Store) -> str | None:
    note = store.active().filter(name=INDEX_NAME).first()
    return note.content if note is not None else None


def prune_index(store: Store, name: str) -> None:
    """Remove MEMORY.md lines that name the note (the index is line-based and keyed on names)."""
    index = store.notes().filter(name=INDEX_NAME).first()
    if index is None:
        return
    kept = [line for line in index.content.splitlines() if name not in line]
    text = "\n".join(kept)
    if text != index.content:
        index.content = text
        index.save(update_fields=["content"])


def store_of(note: MemoryNote) -> Store:
    return Store(str(note.organization_id), str(note.agent_id), owner_user_id=note.owner_user_id,
                 chat_key=note.chat_key)


# ------------------------------------------------------------------ Settings → Memory (services)


def suspend(*, actor: Any, note: MemoryNote) -> MemoryNote:
    from agenticos import audit

    with transaction.atomic():
        note.status = MemoryNote.Status.SUSPENDED
        note.save(update_fields=["status"])
        prune_index(store_of(note), note.name)
        audit.record(actor=actor.user, organization=actor.organization, action="memory.suspend",
                     target_type="memorynote", target_id=str(note.pk), target_name=note.name)
    return note


def restore(*, actor: Any, note: MemoryNote) -> MemoryNote:
    """Back in use. The index line removed at suspension is not put back: the agent writes its index."""
    from agenticos import audit

    with transaction.atomic():
        note.status = MemoryNote.Status.ACTIVE
        note.save(update_fields=["status"])
        audit.record(actor=actor.user, organization=actor.organization, action="memory.restore",
                     target_type="memorynote", target_id=str(note.pk), target_name=note.name)
    return note


def delete(*, actor: Any, note: MemoryNote) -> None:
    from agenticos import audit

    with transaction.atomic():
        store = store_of(note)
        name, pk = note.name, note.pk
        note.delete()
        if name != INDEX_NAME:
            prune_index(store, name)
        audit.record(actor=actor.user, organization=actor.organization, action="memory.delete",
                     target_type="memorynote", target_id=str(pk), target_name=name)


def clear_person(*, actor: Any, user_id: int) -> dict[str, int]:
    """Everything agents of this organization remember about one person: the rows here and, for every agent
    whose draft or any kept version binds mem0, that person's mem0 memories. A mem0 failure raises (the
    rows are kept so the person can retry the whole clearing once access is restored)."""
    from agenticos import audit
    from knowledge import mem0 as mem0_client

    organization = actor.organization
    mem0_cleared = mem0_client.clear_owner_everywhere(organization, owner=str(user_id))
    with transaction.atomic():
        deleted, _ = MemoryNote.objects.filter(organization=organization, owner_user_id=user_id).delete()
        audit.record(actor=actor.user, organization=organization, action="memory.clear_person",
                     target_type="user", target_id=str(user_id),
                     details={"notes_deleted": deleted, "mem0_spaces_cleared": mem0_cleared})
    return {"notes_deleted": deleted, "mem0_spaces_cleared": mem0_cleared}


def clear_agent(*, actor: Any, agent: Any) -> dict[str, int]:
    """Everything one agent remembers, about everyone: its notes of every person and group chat, and the mem0
    memories of every owner at each mem0 endpoint its draft or any kept version binds. Needs edit access on
    the agent. mem0 goes first and a failure raises with the rows kept, so the clearing can be retried whole
    once access is restored (the same rule as clearing a person)."""
    from agenticos import audit
    from governance.grants import require_agent_access
    from knowledge import mem0 as mem0_client

    require_agent_access(actor, agent, "edit")
    mem0_cleared = mem0_client.clear_agent_everywhere(agent)
    with transaction.atomic():
        deleted, _ = MemoryNote.objects.filter(organization_id=agent.organization_id, agent=agent).delete()
        audit.record(actor=actor.user, organization=actor.organization, action="memory.clear_agent",
                     target=agent, details={"notes_deleted": deleted, "mem0_spaces_cleared": mem0_cleared},
                     ip_address=(getattr(actor, "extra", None) or {}).get("ip"))
    return {"notes_deleted": deleted, "mem0_spaces_cleared": mem0_cleared}
