"""Memory in mem0: `remember` stores a short self-contained sentence, `recall` finds those about a question
by meaning. The owner follows exactly the memory_files rule (one person, one group chat, none for
widgets/embeds/API keys/schedules), and mem0 gets the whole scope as its user_id `{org}:{agent}:{owner}`.
mem0 bills its own embeddings, so this deployment's spend ledger does not see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext

from agenticos import netguard
from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, KeyRequirement, ToolDecl, function_toolset
from knowledge import mem0 as mem0_client
from knowledge import memory
from knowledge.runtime import audience_for


class Mem0Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(default="", description="A self-hosted mem0 (https, in MEM0_ALLOWED_HOSTS). Empty = mem0 cloud.")
    top_k: int = Field(default=5, ge=1, le=20, description="Memories recall returns when the model asks for no number.")

    @field_validator("base_url")
    @classmethod
    def _https(cls, value: str) -> str:
        if value and not value.startswith("https://"):
            raise ValueError("a self-hosted mem0 base_url must start with https://")
        return value.rstrip("/")


@dataclass
class _Mem0State:
    config: Mem0Config
    reveal: Any


def _scope_sync(deps: Any) -> tuple[str | None, bool, str]:
    """(user_id for mem0, writable, refusal)."""
    try:
        store = memory.store_for(audience_for(deps), organization_id=deps.organization_id, agent_id=deps.agent_id,
                                 allow_personal=True)
    except memory.NoStore as exc:
        return None, False, str(exc)
    owner = str(store.owner_user_id) if store.owner_user_id is not None else store.chat_key
    return mem0_client.owner_scope(deps.organization_id, deps.agent_id, owner), store.writable, ""


def _client_sync(state: _Mem0State) -> mem0_client.Mem0Client:
    return mem0_client.Mem0Client(state.config.base_url, state.reveal())


async def _prepare(ctx: RunContext[Any]) -> tuple[Any, str | None, bool, str]:
    state: _Mem0State = ctx.deps.scratch["mem0"]
    user_id, writable, refusal = await sync_to_async(_scope_sync)(ctx.deps)
    if user_id is None:
        return None, None, False, failures.refuse(refusal)
    try:
        client = await sync_to_async(_client_sync)(state)
    except mem0_client.Mem0NotAllowed as exc:
        return None, None, False, failures.refuse(str(exc))
    try:
        # The address, checked now and not only at publish: a listed name (or mem0's cloud) that resolves to a
        # metadata address — or, unlisted, to a private one — never receives the key.
        await netguard.check_url(client.base_url, allowance=netguard.MEM0_HOSTS)
    except netguard.Refused as exc:
        return None, None, False, failures.refuse(f"The mem0 server's address was refused: {exc}")
    return client, user_id, writable, ""


async def remember(ctx: RunContext[Any], fact: str) -> str:
    """Save one short, self-contained fact to long-term memory.

    Use it for something worth knowing in later conversations ("Prefers replies in Polish"). Write it so
    it makes sense on its own, without this conversation around it.

    Args:
        fact: One sentence, under 500 characters.

    Returns:
        'Remembered.' — or a refusal where this chat has no memory, or a note that the memory service is down.
    """
    client, user_id, writable, refusal = await _prepare(ctx)
    if refusal:
        return refusal
    if not writable:
        return failures.refuse("This run (an event trigger running as its creator) may recall but not remember.")
    if not fact.strip() or len(fact) > 500:
        return failures.retry(ctx, "fact must be one sentence of 1-500 characters.")
    try:
        await sync_to_async(client.add)(user_id, fact.strip())
    except mem0_client.Mem0NotAllowed as exc:
        return failures.refuse(str(exc))
    except mem0_client.Mem0Error as exc:
        return failures.transient(ctx, str(exc))
    return "Remembered."


async def recall(ctx: RunContext[Any], query: str, limit: int | None = None) -> str:
    """Find remembered facts about a question, by meaning rather than exact words.

    Args:
        query: What you want to know, e.g. "language preference".
        limit: How many facts, 1-20. Default: the agent's setting (5 unless changed).

    Returns:
        One remembered fact per line, most relevant first, or a sentence saying nothing relevant is remembered.
    """
    client, user_id, _, refusal = await _prepare(ctx)
    if refusal:
        return refusal
    state: _Mem0State = ctx.deps.scratch["mem0"]
    if limit is not None and not 1 <= limit <= 20:
        return failures.retry(ctx, "limit must be between 1 and 20; omit it for the default.")
    try:
        rows = await sync_to_async(client.search)(user_id, query, limit or state.config.top_k)
    except mem0_client.Mem0NotAllowed as exc:
        return failures.refuse(str(exc))
    except mem0_client.Mem0Error as exc:
        return failures.transient(ctx, str(exc))
    facts = [str(r.get("memory") or "") for r in rows if r.get("memory")]
    if not facts:
        return failures.bad_news(f"Nothing remembered about {query!r}.")
    return "\n".join(f"- {fact}" for fact in facts)


def publish_check(config: Any) -> list[tuple[str, str]]:
    """A self-hosted base_url the run would refuse, refused at publish already: outside MEM0_ALLOWED_HOSTS, not
    https, or a listed name resolving to a metadata address. A name that does not resolve from here may still
    be published (the run checks again when it connects); mem0's cloud (no base_url) is checked then too."""
    assert isinstance(config, Mem0Config)
    if not config.base_url:
        return []
    try:
        url = mem0_client.check_base_url(config.base_url)
        netguard.check_url_blocking(url, allowance=netguard.MEM0_HOSTS)
    except netguard.Unresolvable:
        return []
    except (mem0_client.Mem0NotAllowed, netguard.Refused) as exc:
        return [("base_url", str(exc))]
    return []


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, Mem0Config)
    if ctx.secret_value is None:
        return []
    ctx.deps.scratch["mem0"] = _Mem0State(ctx.config, ctx.secret_value)
    return [function_toolset([remember, recall])]


CAPABILITY = Capability(
    id="memory_mem0",
    name="Memory (mem0)",
    category="knowledge",
    description="Remembers short facts in a mem0 service and recalls them by meaning.",
    offers="semantic long-term memory in mem0",
    examples=(
        "Remember that I prefer Polish.",
        "What do you know about my travel preferences?",
        "Remember that our fiscal year starts in April.",
    ),
    never_does=(
        "It never mixes memories between organizations, agents or people, and keeps nothing in a public "
        "widget, an embed or an API-key run. mem0's own charges never show in this deployment's spend or "
        "budgets."
    ),
    tools=(ToolDecl.from_function(remember), ToolDecl.from_function(recall)),
    key=KeyRequirement(kind="api_key", description="The mem0 API key"),
    config_model=Mem0Config,
    voice="live",
    build=build,
    publish_check=publish_check,
)
