"""Assemble a run from its frozen version: model, capabilities, instructions, history.

Everything here is synchronous ORM work, called on the run's DB thread.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import BigIntegerField, Subquery, Value
from django.db.models.functions import Coalesce

from agenticos import secret_access
from agenticos.models import Secret
from agenticos.queries import Loaded, load_row
from agents.models import Message, ModelProfile, Run
from agents.run_handle import AssemblyError
from agents.runner.history import get_recent_messages, to_model_messages
from agents.spec import AgentSpec

# Larger than any message id (bigint): "up to the newest" when a run has no message of its own.
NEWEST_POSSIBLE_ID = 2**63 - 1


@dataclass
class BuiltSetup:
    toolsets: list[Any] = field(default_factory=list)
    capabilities: list[Any] = field(default_factory=list)
    # tool name the model sees → "required" | "never" | "default"
    approval: dict[str, str] = field(default_factory=dict)
    # tool name the model sees → capability id (for the transcript and the approval rows)
    tool_capabilities: dict[str, str] = field(default_factory=dict)
    # tool name the model sees → stable tool id
    tool_ids: dict[str, str] = field(default_factory=dict)
    # tool names the model sees that only read (agents.runner.checkpoint: run again when a worker died mid-call)
    read_only: frozenset[str] = frozenset()
    setup_text: str = ""
    extra_instructions: list[str] = field(default_factory=list)


def with_channel_grants(spec: AgentSpec, run: Run) -> AgentSpec:
    """channel_tools is granted by the bot binding a message arrived through, never by the spec."""
    from agents.spec import CapabilityBinding

    channel = (run.options or {}).get("channel") or {}
    capabilities = [b for b in spec.capabilities if b.id != "channel_tools"]
    if channel.get("tools"):
        config: dict[str, Any] = {"tools": channel["tools"]}
        if channel.get("tools_limit"):
            config["default_limit"] = channel["tools_limit"]
        capabilities.append(CapabilityBinding(id="channel_tools", config=config))
    return spec.model_copy(update={"capabilities": capabilities})


# A model profile with its key's row, and whether it has fallbacks (most have none: the run then skips
# their query). Hand-written from the models' fields, as the run's own load is: every turn reads it.
PROFILE_LAYOUT = (Loaded(ModelProfile, "p"), Loaded(Secret, "s"))


@lru_cache(maxsize=1)
def _profile_sql() -> str:
    quote = connection.ops.quote_name
    profiles, secrets = (quote(part.model._meta.db_table) for part in PROFILE_LAYOUT)
    fallbacks = ModelProfile._meta.get_field("fallbacks")
    through, source = quote(fallbacks.m2m_db_table()), quote(fallbacks.m2m_column_name())
    columns = ", ".join(part.columns(quote) for part in PROFILE_LAYOUT)
    # Table and column names come from the models; every value is a parameter.
    return (
        f"SELECT {columns}, EXISTS (SELECT 1 FROM {through} f WHERE f.{source} = p.id)"  # noqa: S608
        f" FROM {profiles} p LEFT JOIN {secrets} s ON s.id = p.secret_id WHERE p.id = %s AND p.organization_id = %s"
    )


def model_profile(run: Run, spec: AgentSpec) -> ModelProfile:
    if not spec.model_profile_id:
        raise AssemblyError("This agent version names no model profile; choose one in the Builder and publish.")
    row = None
    try:
        profile_id = uuid.UUID(spec.model_profile_id)
    except ValueError:
        pass
    else:
        with connection.cursor() as cursor:
            cursor.execute(_profile_sql(), [profile_id, run.organization_id])
            row = cursor.fetchone()
    if row is None:
        raise AssemblyError("The model profile this version names no longer exists; choose another and publish.")
    profile, secret = load_row(row[:-1], PROFILE_LAYOUT)
    profile.secret = secret if profile.secret_id is not None else None  # type: ignore[attr-defined]
    profile.has_fallbacks = row[-1]  # type: ignore[attr-defined]
    return profile  # type: ignore[return-value]


# The built model per profile row, per process. A pydantic-ai model holds its provider's SDK client and that
# client's HTTP connection pool; building them was a millisecond and a vault opening per run, and every run
# opened new connections to the model server. pydantic-ai models are made to be shared by concurrent runs
# (a run's settings and messages travel with each request), and a provider replaces its client when a run
# comes on another event loop. The key is a digest of everything the model is built from: the organization,
# the profile's id, provider, model, base URL and settings, and its key's row (id, organization, key version,
# wrapped key and ciphertext) — so an edited profile or a rotated key is built afresh on the next run, a profile
# of one organization never serves another's, and nothing unsealed is kept outside the model's own client.
# Profiles with fallbacks (their candidates are read per run) and the offline demo model are built per run.
MODEL_CACHE_SIZE = 256
_models: OrderedDict[bytes, Any] = OrderedDict()
_models_lock = threading.Lock()


def model_key(profile: ModelProfile) -> bytes | None:
    """The cache key of a profile's model, or None when it is built per run."""
    if getattr(profile, "has_fallbacks", True) is not False or profile.provider == "demo":
        return None
    secret = getattr(profile, "secret", None) if profile.secret_id is not None else None
    if profile.secret_id is not None and secret is None:
        return None
    digest = hashlib.sha256()
    for part in (profile.organization_id, profile.pk, profile.provider, profile.model, profile.base_url,
                 json.dumps(profile.settings or {}, sort_keys=True, default=str)):
        digest.update(str(part).encode() + b"\0")
    if secret is not None:
        for part in (secret.pk, secret.organization_id, secret.key_version):
            digest.update(str(part).encode() + b"\0")
        digest.update(bytes(secret.wrapped_key) + b"\0" + bytes(secret.ciphertext))
    return digest.digest()


def build_model(profile: ModelProfile):
    """The profile's model: the one this process built for the same profile row, or a new one. Sync (vault)."""
    from agents.providers import build_model as provider_build_model

    key = model_key(profile)
    if key is None:
        return provider_build_model(profile)
    with _models_lock:
        model = _models.get(key)
        if model is not None:
            _models.move_to_end(key)
    if model is not None:
        if profile.secret_id is not None:
            # The kept model serves this run with the key opened for an earlier one: still a use of the secret.
            secret_access.note(profile.secret)  # type: ignore[attr-defined]
        return model
    model = provider_build_model(profile)
    with _models_lock:
        model = _models.setdefault(key, model)
        while len(_models) > MODEL_CACHE_SIZE:
            _models.popitem(last=False)
    return model


def model_settings(profile: ModelProfile, spec: AgentSpec):
    from agents.providers import model_settings_for

    return model_settings_for(profile, spec.model_settings)


def build_capabilities(spec: AgentSpec, deps, run: Run) -> BuiltSetup:
    from agents.runner import checkpoint, missing
    from capabilities import registry

    built = registry.build_for_run(spec, deps, str(run.organization_id))
    card_tool = missing.toolset(run, spec)  # where a person can act on a missing-capability card
    toolsets = [*built.toolsets, *([card_tool] if card_tool is not None else [])]
    return BuiltSetup(
        toolsets=toolsets,
        read_only=checkpoint.read_only_tools(built.tools, toolsets),
        capabilities=list(built.capabilities),
        approval={name: route.approval for name, route in built.tools.items()},
        tool_capabilities={name: route.capability_id for name, route in built.tools.items()},
        tool_ids={name: route.tool_id for name, route in built.tools.items()},
        setup_text=built.instructions,
    )


def instructions(spec: AgentSpec, run: Run, built: BuiltSetup) -> str:
    sections = [spec.instructions.strip()] if spec.instructions.strip() else []
    if built.setup_text:
        sections.append(built.setup_text)
    sections.extend(text for text in built.extra_instructions if text)
    extra = (run.options or {}).get("extra_instructions")
    if extra:
        sections.append(extra)
    return "\n\n".join(sections)


def turn_and_history(run: Run) -> tuple[dict[str, Any] | None, list]:
    """The person's message that started this run (its id and attachments) and the turns before it. The
    message itself is already in the transcript; the prompt carries it, so it is not history.

    Usually it is the conversation's newest message, and one read of the newest gives both. When a later turn
    has written since (or this run wrote no message), a second read takes the newest up to this run's own.

    A conversation that keeps a compacted run's history (capabilities/compaction/persisted.py) replays it instead
    of the turns it covers: the same read says whether there is one, and only then is it loaded."""
    from capabilities.compaction import persisted

    limit = int((run.options or {}).get("history_limit") or settings.WEB_HISTORY_TURNS)
    if run.conversation_id is None:
        # No stored conversation: the turns the client sent with the run, if any (`client_history`).
        return None, client_history((run.options or {}).get("client_history"))[-limit:]
    fields = ("run_id", "attachments")
    marked = {"compacted_through": persisted.through_annotation(run)}
    # A regenerated answer's run answers an earlier message of the person again (agents.branches): the branch
    # up to that message.
    reply_to = (run.options or {}).get("reply_to")
    messages = get_recent_messages(str(run.conversation_id), limit + 1, through=reply_to, fields=fields,
                                   annotate=marked)
    if not _is_own_turn(run, messages):
        this_turn = Message.objects.filter(run_id=run.pk, role=Message.Role.USER).order_by("-id").values("id")[:1]
        # A run without a message of its own (none was recorded) reads the newest turns.
        upto = Coalesce(Subquery(this_turn), Value(NEWEST_POSSIBLE_ID, output_field=BigIntegerField()))
        messages = get_recent_messages(str(run.conversation_id), limit + 1, through=upto, fields=fields,
                                       annotate=marked)
    through = getattr(messages[-1], "compacted_through", None) if messages else None
    current = None
    if _is_own_turn(run, messages):
        last = messages.pop()
        current = {"id": last.pk, "attachments": last.attachments}
    kept = _compacted(run, through, current)
    if kept is not None:
        through, older = kept
        return current, [*older, *to_model_messages([m for m in messages if m.pk > through][-limit:])]
    return current, to_model_messages(messages[-limit:])


def _compacted(run: Run, through: int | None, current: dict[str, Any] | None) -> tuple[int, list] | None:
    """The kept compacted history, when the conversation has one that ends before this run's own turn (a run
    taken late never replays what was summarized after it)."""
    from capabilities.compaction import persisted

    if through is None or (current is not None and through >= current["id"]):
        return None
    kept = persisted.replayed(run)
    if kept is None or (current is not None and kept[0] >= current["id"]):
        return None
    return kept


def client_history(turns: Any) -> list:
    """`[{"role": "user" | "assistant", "content": str}, …]` as the model's message history, read exactly as a
    stored conversation's turns are (unsaved messages through history.to_model_messages)."""
    turns = turns if isinstance(turns, list) else []
    return to_model_messages([Message(role=str(t["role"]), content=str(t.get("content") or ""))
                              for t in turns if isinstance(t, dict) and t.get("role") in ("user", "assistant")])


def _is_own_turn(run: Run, messages: list[Message]) -> bool:
    if not messages or messages[-1].role != Message.Role.USER:
        return False
    return messages[-1].run_id == run.pk or messages[-1].pk == (run.options or {}).get("reply_to")
