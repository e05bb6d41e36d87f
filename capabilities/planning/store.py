"""The plan belongs to the conversation, not to one turn of it: `Conversation.state["plan"]`.

Seeded from the stored plan when the run first reads it — unless every step is completed or cancelled:
a finished checklist is history, and the next turn starts clean (the row keeps it; nothing is deleted).
Written through on every change, so a turn that never touches the plan writes nothing (an empty store
opened over a finished plan must not wipe the row) and a crash keeps what was done so far.
A surface without a conversation (a bare API call) keeps its plan in memory for the run.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from pydantic_ai_harness.planning import InMemoryPlanStore, PlanItem, TaskStatus

STATE_KEY = "plan"
FINISHED = {TaskStatus.completed, TaskStatus.cancelled}


def _items(raw: Any) -> list[PlanItem]:
    if not isinstance(raw, list):
        return []
    items = []
    for entry in raw:
        try:
            items.append(PlanItem.model_validate(entry))
        except ValueError:
            continue  # a step that no longer parses is dropped rather than failing the run
    return items


def seedable(items: list[PlanItem]) -> bool:
    """A plan is carried into a new turn unless every step is completed or cancelled (blocked is pending work)."""
    return any(item.status not in FINISHED for item in items)


def stored_plan(conversation_id: str, organization_id: str | None = None) -> list[PlanItem]:
    from agents.models import Conversation

    qs = Conversation.objects.filter(pk=conversation_id)
    if organization_id is not None:
        qs = qs.filter(organization_id=organization_id)
    state = qs.values_list("state", flat=True).first() or {}
    return _items(state.get(STATE_KEY))


def _write(conversation_id: str, organization_id: str | None, items: list[PlanItem]) -> None:
    from agents.models import Conversation

    with transaction.atomic():
        qs = Conversation.objects.select_for_update().filter(pk=conversation_id)
        if organization_id is not None:
            qs = qs.filter(organization_id=organization_id)
        conversation = qs.first()
        if conversation is None:
            return
        state = dict(conversation.state or {})
        state[STATE_KEY] = [item.model_dump(mode="json") for item in items]
        conversation.state = state
        conversation.save(update_fields=["state"])


def reset_in_progress_steps(conversation_id: str) -> int:
    """A run that failed, was stopped or ran out of budget is working on nothing: its in-progress steps go
    back to pending, so the next turn's reminder does not tell a new run it is already doing them.
    Called by the runner (not for a parked run or a turn that ends on a question). Returns how many moved."""
    from agents.models import Conversation

    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            return 0
        items = _items((conversation.state or {}).get(STATE_KEY))
        moved = 0
        for item in items:
            if item.status is TaskStatus.in_progress:
                item.status = TaskStatus.pending
                moved += 1
        if moved:
            state = dict(conversation.state)
            state[STATE_KEY] = [item.model_dump(mode="json") for item in items]
            conversation.state = state
            conversation.save(update_fields=["state"])
        return moved


areset_in_progress_steps = sync_to_async(reset_in_progress_steps)


class ConversationPlanStore(InMemoryPlanStore):
    """An in-memory plan seeded from, and written through to, the conversation row."""

    def __init__(self, conversation_id: str, organization_id: str | None = None) -> None:
        super().__init__()
        self.conversation_id = conversation_id
        self.organization_id = organization_id
        self._loaded = False

    async def _load(self) -> None:
        if self._loaded:
            return
        items = await sync_to_async(stored_plan)(self.conversation_id, self.organization_id)
        self._items = items if seedable(items) else []
        self._loaded = True

    async def _save(self) -> None:
        await sync_to_async(_write)(self.conversation_id, self.organization_id, self._items)

    async def get_items(self) -> list[PlanItem]:
        await self._load()
        return await super().get_items()

    async def get_item(self, item_id: str) -> PlanItem | None:
        await self._load()
        return await super().get_item(item_id)

    async def set_items(self, items: list[PlanItem]) -> None:
        await self._load()
        await super().set_items(items)
        await self._save()

    async def add_item(self, item: PlanItem) -> PlanItem:
        await self._load()
        added = await super().add_item(item)
        await self._save()
        return added

    async def update_item(self, item_id: str, **changes: Any) -> PlanItem | None:
        await self._load()
        updated = await super().update_item(item_id, **changes)
        if updated is not None:
            await self._save()
        return updated

    async def remove_item(self, item_id: str) -> bool:
        await self._load()
        removed = await super().remove_item(item_id)
        if removed:
            await self._save()
        return removed
