"""Memory: five tools over the run's one note store, plus the MEMORY.md index in the instructions.

No tool takes a scope: the store comes from who will hear the answer (see `knowledge.memory`). Where
there is no store (widget, embed, API key, schedule) every tool refuses and says why instead of saving
somewhere. The index is injected only in one-to-one conversations — in a group chat a teammate's line
would arrive as instructions — and left out, not cut, past ~6,000 characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from knowledge import memory
from knowledge.runtime import audience_for


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow_personal_memory: bool = Field(
        default=True, description="Keep notes per person. Off removes the per-person store; group chat notes stay."
    )


@dataclass
class _Resolved:
    store: memory.Store | None
    refusal: str
    one_to_one: bool


def _resolve_sync(deps: Any, allow_personal: bool) -> _Resolved:
    audience = audience_for(deps)
    try:
        store = memory.store_for(audience, organization_id=deps.organization_id, agent_id=deps.agent_id,
                                 allow_personal=allow_personal)
    except memory.NoStore as exc:
        return _Resolved(None, str(exc), False)
    return _Resolved(store, "", audience.is_one_to_one)


async def _resolved(ctx: RunContext[Any]) -> _Resolved:
    cached = ctx.deps.scratch.get("memory_resolved")
    if cached is None:
        allow = ctx.deps.scratch.get("memory_allow_personal", True)
        cached = await sync_to_async(_resolve_sync)(ctx.deps, allow)
        ctx.deps.scratch["memory_resolved"] = cached
    return cached


def _check_name(ctx: RunContext[Any], name: str) -> str | None:
    if not memory.valid_name(name):
        return failures.retry(ctx, f"{name!r} is not a note name: use letters, digits, spaces, '.', '_' or '-' "
                                   "(up to 120), e.g. 'preferences.md'.")
    return None


async def list_memory(ctx: RunContext[Any]) -> str:
    """List the notes you have saved in this conversation's memory.

    Your MEMORY.md index is usually already in your instructions; list when you need every note's name.

    Returns:
        One line per note: its name, size and when it was last changed; or a sentence saying there are none.
        Where this chat has no memory the answer is a refusal saying why.
    """
    resolved = await _resolved(ctx)
    if resolved.store is None:
        return failures.refuse(resolved.refusal)
    notes = await sync_to_async(memory.list_notes)(resolved.store)
    if not notes:
        return "No notes saved yet."
    return "\n".join(f"- {n.name} ({len(n.content)} characters, changed {n.updated_at:%Y-%m-%d})" for n in notes)


async def read_memory(ctx: RunContext[Any], name: str) -> str:
    """Read one saved note.

    Use it when a line of your MEMORY.md index (or list_memory) says the note is worth reading.

    Args:
        name: The note's name, e.g. preferences.md or MEMORY.md.

    Returns:
        The note's text, or a sentence saying there is no such note.
    """
    resolved = await _resolved(ctx)
    if resolved.store is None:
        return failures.refuse(resolved.refusal)
    note = await sync_to_async(memory.read_note)(resolved.store, name)
    if note is None:
        return failures.bad_news(f"There is no note named {name!r}. Call list_memory for the names.")
    return note.content


async def write_memory(ctx: RunContext[Any], name: str, content: str) -> str:
    """Save a note, creating it or replacing its whole text.

    Save what will help in later conversations (preferences, decisions, facts about ongoing work), then
    add or update a one-line entry for it in MEMORY.md, your index. For a small change use edit_memory.

    Args:
        name: The note's name, e.g. preferences.md; MEMORY.md is the index.
        content: The complete new text of the note.

    Returns:
        'Saved new note …' or 'Replaced note …'. Where this chat has no memory, or it is read-only here,
        the answer is a refusal saying why; nothing is saved then.
    """
    resolved = await _resolved(ctx)
    if resolved.store is None:
        return failures.refuse(resolved.refusal)
    if not resolved.store.writable:
        return failures.refuse("This run (an event trigger running as its creator) may read memory but not write it.")
    if (problem := _check_name(ctx, name)) is not None:
        return problem
    note, created = await sync_to_async(memory.write_note)(resolved.store, name, content)
    return f"{'Saved new' if created else 'Replaced'} note {note.name!r} ({len(content)} characters)."


async def edit_memory(ctx: RunContext[Any], name: str, old_text: str, new_text: str) -> str:
    """Change part of a saved note by replacing one exact passage.

    Args:
        name: The note's name.
        old_text: The exact text to replace; it must occur exactly once in the note.
        new_text: The replacement (empty deletes the passage).

    Returns:
        'Edited note …', or what was wrong: no such note, or old_text found zero or several times.
    """
    resolved = await _resolved(ctx)
    if resolved.store is None:
        return failures.refuse(resolved.refusal)
    if not resolved.store.writable:
        return failures.refuse("This run (an event trigger running as its creator) may read memory but not write it.")
    outcome = await sync_to_async(memory.edit_note)(resolved.store, name, old_text, new_text)
    if outcome == "missing":
        return failures.bad_news(f"There is no note named {name!r}. Call list_memory for the names.")
    if outcome == "none":
        return failures.retry(ctx, f"old_text does not occur in {name!r}: read_memory it and copy the exact text.")
    if outcome == "many":
        return failures.retry(ctx, f"old_text occurs several times in {name!r}: include more surrounding text.")
    return f"Edited note {name!r}."


async def delete_memory(ctx: RunContext[Any], name: str) -> str:
    """Delete a saved note for good, and the lines of MEMORY.md that name it.

    Args:
        name: The note's name.

    Returns:
        'Deleted note …' or a sentence saying there is no such note.
    """
    resolved = await _resolved(ctx)
    if resolved.store is None:
        return failures.refuse(resolved.refusal)
    if not resolved.store.writable:
        return failures.refuse("This run (an event trigger running as its creator) may read memory but not write it.")
    deleted = await sync_to_async(memory.delete_note)(resolved.store, name)
    if not deleted:
        return failures.bad_news(f"There is no note named {name!r}. Call list_memory for the names.")
    return f"Deleted note {name!r}."


@dataclass
class MemoryIndex(AbstractCapability[Any]):
    """MEMORY.md in the instructions, read before every model request (notes change mid-run)."""

    def get_instructions(self):
        async def index(ctx: RunContext[Any]) -> str:
            resolved = await _resolved(ctx)
            if resolved.store is None:
                return f"Memory: none in this chat. {resolved.refusal}"
            if not resolved.one_to_one:
                return ("Memory: this is a group chat; its notes are shared by everyone here. Your index "
                        f"{memory.INDEX_NAME} is not shown here; open it with read_memory when useful.")
            text = await sync_to_async(memory.index_text)(resolved.store)
            if not text or not text.strip():
                return (f"Memory: no index yet. Save notes with write_memory and keep a one-line entry per note "
                        f"in {memory.INDEX_NAME}.")
            if len(text) > memory.INDEX_LIMIT:
                return (f"Memory: your index {memory.INDEX_NAME} is too long to show here ({len(text)} "
                        "characters); read it with read_memory and shorten it.")
            return (f"Your memory index ({memory.INDEX_NAME}). Open a listed note with read_memory when its line "
                    f"says it is worth reading.\n<memory-index>\n{text}\n</memory-index>")

        return index


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, MemoryConfig)
    ctx.deps.scratch["memory_allow_personal"] = ctx.config.allow_personal_memory
    return [MemoryIndex(), function_toolset([list_memory, read_memory, write_memory, edit_memory, delete_memory])]


CAPABILITY = Capability(
    id="memory_files",
    name="Memory",
    category="knowledge",
    description="Keeps notes between conversations — per person, or per group chat — indexed by MEMORY.md.",
    offers="remembering preferences and facts between conversations",
    examples=(
        "Remember that I prefer metric units.",
        "What did I tell you about my project last week?",
        "Forget what I told you about my old address.",
    ),
    never_does=(
        "It never shares notes between agents or between people, never brings a person's own notes into a "
        "group chat, and keeps nothing in a public widget, an embed or an API-key run."
    ),
    tools=(
        ToolDecl.from_function(list_memory),
        ToolDecl.from_function(read_memory),
        ToolDecl.from_function(write_memory),
        ToolDecl.from_function(edit_memory),
        ToolDecl.from_function(delete_memory),
    ),
    config_model=MemoryConfig,
    voice="live",
    build=build,
)
