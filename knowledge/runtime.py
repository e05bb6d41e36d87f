"""What knowledge capabilities need to know about the run they serve, loaded once per run.

`BuildContext.spec` is the frozen spec being assembled (its `collection_ids`, `context_ids`, `skill_ids`);
when a caller builds without it, the spec is read from the version named by `deps.version_id` (an
`AgentVersion` never changes, so it is the spec the run executes). Build runs on the runner's DB thread.

`Audience` answers "who will hear the answer", decided on the server from the Run row, never from the
model: it is what memory, mem0 and conversation search scope themselves by.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agents.run_handle import RunDeps
    from agents.spec import AgentSpec

PERSONAL_SURFACES = {"web", "slack", "telegram", "mattermost"}
CHANNEL_SURFACES = {"slack", "telegram", "mattermost"}
# Runs a trigger started (triggers app): nobody listens; the creator lends authority, not identity.
TRIGGER_SURFACES = {"schedule", "event"}


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None


class BuildContext(Protocol):
    """What this module reads of a capability's build context (capabilities.base.BuildContext: the
    capabilities sit above knowledge, so it is named by the shape it has, not imported)."""

    @property
    def deps(self) -> RunDeps: ...

    @property
    def organization_id(self) -> str: ...

    @property
    def spec(self) -> AgentSpec | None: ...


def spec_for(ctx: BuildContext) -> AgentSpec | None:
    """The run's frozen spec (cached in `deps.scratch`)."""
    if ctx.spec is not None:
        return ctx.spec
    cached = ctx.deps.scratch.get("_knowledge_spec")
    if cached is not None:
        return cached
    from agents.models import AgentVersion
    from agents.spec import load_spec

    version_id = _uuid(ctx.deps.version_id)
    if version_id is None:
        return None
    row = AgentVersion.objects.filter(pk=version_id, agent__organization_id=ctx.organization_id).values(
        "spec").first()
    if row is None:
        return None
    spec = load_spec(row["spec"])
    ctx.deps.scratch["_knowledge_spec"] = spec
    return spec


@dataclass(frozen=True)
class Audience:
    """Who hears this run's answer.

    kind: "person" (one-to-one: web chat or a direct message with a linked account), "group" (a group
    chat: everyone in it hears), "nobody" (schedule / event trigger), "anonymous" (widget, embed, API key).
    """

    kind: str
    user_id: int | None = None
    chat_key: str = ""
    # schedule/trigger runs: "schedule" | "event"; run_as_creator opens the creator's memory
    trigger_kind: str = ""
    run_as_creator: bool = False
    conversation_id: str | None = None

    @property
    def is_one_to_one(self) -> bool:
        return self.kind == "person"


def audience_for(deps: RunDeps) -> Audience:
    """Sync (ORM). Reads the Run row: surface, API key, options set by the surface that started it.

    Surfaces say what kind of chat a channel run is in `Run.options["chat_type"]` ("direct" | "group");
    a channel run without it counts as a group chat (the safe reading). Triggers set
    `options["trigger_kind"]` and `options["run_as_creator"]`.
    """
    from agents.models import Run

    run_id = _uuid(deps.run_id)
    run = Run.objects.filter(pk=run_id, organization_id=deps.organization_id).select_related(
        "conversation").first() if run_id else None
    surface = run.surface if run is not None else deps.surface
    options: dict[str, Any] = (run.options or {}) if run is not None else dict(deps.scratch.get("run_options") or {})
    user_id = run.user_id if run is not None else deps.user_id
    conversation_id = str(run.conversation_id) if run is not None and run.conversation_id else deps.conversation_id
    if surface in TRIGGER_SURFACES:
        return Audience(kind="nobody", user_id=user_id, trigger_kind=str(options.get("trigger_kind") or surface),
                        run_as_creator=bool(options.get("run_as_creator")), conversation_id=conversation_id)
    if surface == "embed" or (run is not None and run.api_key_id) or surface == "api":
        return Audience(kind="anonymous", conversation_id=conversation_id)
    if surface in CHANNEL_SURFACES:
        if options.get("chat_type") == "direct" and user_id is not None:
            return Audience(kind="person", user_id=user_id, conversation_id=conversation_id)
        key = str(options.get("chat_key") or "")
        if not key and run is not None and run.conversation is not None:
            key = run.conversation.external_key or str(run.conversation_id)
        return Audience(kind="group", user_id=user_id, chat_key=f"{surface}:{key}" if key else "",
                        conversation_id=conversation_id)
    if surface == "web" and user_id is not None:
        return Audience(kind="person", user_id=user_id, conversation_id=conversation_id)
    return Audience(kind="anonymous", conversation_id=conversation_id)
