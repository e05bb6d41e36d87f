"""Past conversations: find one by what was said in it (PostgreSQL full-text search), then open it.

The corpus is the person the run answers — and only where that person is the only one listening: in a
group chat both tools refuse (the corpus is personal), and so do schedules and event triggers (they answer
nobody, even when running as their creator), widgets/embeds and API-key runs (no person to attribute to).
Removing the `conversations:read` scope turns the capability off deployment-wide (the registry skips it).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from knowledge import conversations
from knowledge.runtime import audience_for

REFUSALS = {
    "group": "Past conversations are personal, and this is a group chat: reading them here would show one "
             "person's private conversations to everyone in the room.",
    "nobody": "This run is a schedule or an event trigger: it answers nobody, so there is no person whose "
              "conversations could be searched.",
    "anonymous": "This run has no signed-in person behind it (a public widget, an embed or an API key), so "
                 "there are no conversations of theirs to search.",
}


async def _person(ctx: RunContext[Any]) -> tuple[int | None, str | None]:
    audience = await sync_to_async(audience_for)(ctx.deps)
    if audience.kind != "person" or audience.user_id is None:
        return None, failures.refuse(REFUSALS.get(audience.kind, REFUSALS["anonymous"]))
    return audience.user_id, None


async def search_conversations(ctx: RunContext[Any], query: str, limit: int = 5) -> str:
    """Find the person's past conversations by what was said in them.

    Use it when the person refers to an earlier discussion ("what did we decide about Q3 pricing?") and
    your memory has nothing. Words match whole and case-insensitively but are not stemmed: "meeting" does
    not find "meetings", so if nothing comes back try another form of the word before concluding it was
    never said. Supports "quoted phrases", `or` between alternatives and a leading - to exclude a word.
    When very many messages match, the conversations come from the newest 200 matches and the result says
    so; narrow the query (a quoted phrase, more words, or -word) to reach older ones.

    Args:
        query: The words to look for, e.g. `"Q3 pricing" discount -draft`.
        limit: How many conversations to return, 1-20. Default 5.

    Returns:
        The best-matching conversations, each with its title and id, when it was last active, how many turns
        matched and its strongest passage with the matched words in **bold**; or a sentence saying nothing
        matched. A refusal explains why the search is not allowed in this chat.
    """
    user_id, refusal = await _person(ctx)
    if refusal or user_id is None:
        return refusal or failures.refuse("There is no person to search for.")
    if not query.strip():
        return failures.retry(ctx, "query is empty: give the words to look for.")
    if not 1 <= limit <= conversations.MAX_RESULTS:
        return failures.retry(ctx, f"limit must be between 1 and {conversations.MAX_RESULTS}; omit it for 5.")
    hits = await sync_to_async(conversations.search)(
        ctx.deps.organization_id, user_id, query, limit=limit, exclude_conversation_id=ctx.deps.conversation_id
    )
    return conversations.render_hits(hits, query)


async def read_conversation(ctx: RunContext[Any], conversation_id: str, start: int = 1) -> str:
    """Open one past conversation as Markdown, a window of turns at a time.

    Use it after search_conversations to read what was actually said around a match.

    Args:
        conversation_id: The id search_conversations gave.
        start: The first turn to show (1 = the beginning). Default 1; each answer says how to ask for the next.

    Returns:
        The turns in the order they were written as `USER:` / `AI:` lines (with the speaker's name when several
        people spoke), up to 20 turns, and a last line saying how to read the next window or that this is the
        end. An id that is not one of the person's conversations comes back as not found.
    """
    user_id, refusal = await _person(ctx)
    if refusal or user_id is None:
        return refusal or failures.refuse("There is no person to search for.")
    if start < 1:
        return failures.retry(ctx, "start must be 1 or more.")
    allowed = await sync_to_async(conversations.can_read)(ctx.deps.organization_id, user_id, conversation_id)
    if not allowed:
        return failures.bad_news(
            f"No conversation {conversation_id!r} among this person's conversations. Use an id from "
            "search_conversations.")
    return await sync_to_async(conversations.read_window)(ctx.deps.organization_id, conversation_id, start)


def build(ctx: BuildContext) -> list[Built]:
    return [function_toolset([search_conversations, read_conversation])]


CAPABILITY = Capability(
    id="conversation_search",
    name="Past conversations",
    category="knowledge",
    description="Finds the person's past conversations by what was said in them, and opens them.",
    offers="finding and reading the person's earlier conversations",
    examples=(
        "What did we decide about Q3 pricing?",
        "Find the chat where I pasted the VPN settings.",
        "Open our conversation about the launch plan.",
    ),
    never_does=(
        "It never reads anyone else's conversations, and never searches at all in a group chat, a schedule,"
        " an event trigger, a public widget, an embed or an API-key run."
    ),
    tools=(ToolDecl.from_function(search_conversations), ToolDecl.from_function(read_conversation)),
    scopes=("conversations:read",),
    voice="live",
    build=build,
)
