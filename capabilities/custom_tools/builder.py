"""The AI tool builder: a built-in agent that researches a provider's docs and builds a kit through the
same runner as every other agent, in a long-lived conversation (surface web).

The `tool_builder` capability gives it phase tools: each takes a list, so one operation type runs across
all tools of the kit at once (≈6 steps for 3 tools, not 18):
    start_kit → (web_search / web_fetch the official docs) → configure_drafts → test_drafts
              → attach_notes (warnings + samples) → finalize_kit
`configure_drafts` refuses a definition whose `docs_url` was not read with web_fetch in this run: the
builder never guesses parameter names from a tool's name.
Tools act for the person running the builder (their role decides), in their organization only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import anyio.to_thread
from django.db import connection
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext

from agenticos.errors import DomainError
from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, NoConfig, ToolDecl, function_toolset

BUILDER_SLUG = "tool-builder"
BUILDER_INSTRUCTIONS = """You build custom REST tools for this organization, one kit at a time (one provider + one
credential). Work in phases across all tools of the kit, never tool by tool:
1. start_kit with every tool the person wants.
2. Research: web_search for the provider's official API reference, then web_fetch each endpoint's page.
   Never guess parameter names from a tool's name; use what the docs say.
3. configure_drafts for all tools at once, each with the docs_url you read.
4. test_drafts for all tools at once with real arguments (these are real calls).
5. attach_notes: warnings for non-obvious limits (pagination, async jobs, sandbox-only), samples of useful output.
   An endpoint that only works asynchronously: prefer a synchronous variant, or split it into submit_* and
   get_*_result, or attach a critical warning. Async tools are never finalized without a warning.
6. finalize_kit when every tool is validated, after the person agrees."""


class DraftConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    draft_id: str
    docs_url: str = Field(description="The official documentation page you read with web_fetch for this endpoint.")
    definition: dict[str, Any] = Field(description="name, alias, description, usage_notes, method, url, parameters, auth")


class DraftTest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    draft_id: str
    args: dict[str, Any] = Field(default_factory=dict)


class DraftNote(BaseModel):
    model_config = ConfigDict(extra="forbid")

    draft_id: str
    kind: Literal["warning", "sample"] = "warning"
    level: Literal["info", "warning", "critical"] = "warning"
    text: str = ""


async def _db(fn: Any) -> Any:
    """ORM work on a worker thread, its connection closed afterwards (tools run on the event loop)."""

    def wrapped() -> Any:
        try:
            return fn()
        finally:
            connection.close()

    return await anyio.to_thread.run_sync(wrapped)


def _actor(deps: Any):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    membership = (Membership.objects.select_related("user", "organization")
                  .filter(user_id=deps.user_id, organization_id=deps.organization_id, is_suspended=False).first())
    if membership is None:
        raise DomainError("Only a member of this organization can build tools.")
    return actor_for_membership(membership)


def _session(deps: Any):
    from capabilities.models import ToolBuilderSession

    session = ToolBuilderSession.objects.filter(organization_id=deps.organization_id,
                                                conversation_id=deps.conversation_id).first()
    if session is None:
        raise DomainError("This conversation is not a tool-builder session.")
    return session


def _kit_state(kit: Any) -> dict[str, Any]:
    return {"kit_id": str(kit.pk), "name": kit.name, "status": kit.status, "drafts": [
        {"draft_id": str(d.pk), "name": d.name, "state": d.state,
         "alias": (d.definition or {}).get("alias"), "test_status": d.test_status,
         "test_preview": d.test_preview[:600], "test_error": d.test_error[:600],
         "warnings": d.warnings} for d in kit.drafts.order_by("created_at")]}


async def _run(ctx: RunContext[Any], work: Any) -> Any:
    try:
        return await _db(work)
    except DomainError as exc:
        details = f" {exc.details}" if exc.details else ""
        return failures.retry(ctx, f"{exc.message}{details}")


async def show_kits(ctx: RunContext[Any]) -> Any:
    """Show every kit of this builder session with its drafts, their states and last test results.

    Returns:
        A list of kits: kit_id, name, status and drafts (draft_id, name, state, alias, test preview/error).
    """
    def work() -> Any:
        session = _session(ctx.deps)
        return [_kit_state(k) for k in session.kits.order_by("created_at")]

    return await _run(ctx, work)


async def start_kit(ctx: RunContext[Any], name: str, provider: str, tools: list[str],
                    credential_id: str | None = None) -> Any:
    """Start a kit: one provider + one credential, with a blank draft for every tool wanted.

    Args:
        name: The kit's name, e.g. "HubSpot Contacts".
        provider: The provider, e.g. "HubSpot".
        tools: One short name per tool, e.g. ["Create contact", "Get contact"].
        credential_id: The id of the organization secret the tools authenticate with (never its value).

    Returns:
        The kit with its drafts (state "draft").
    """
    from capabilities.custom_tools import services

    def work() -> Any:
        actor = _actor(ctx.deps)
        kit = services.create_kit(actor=actor, session=_session(ctx.deps), name=name, provider=provider,
                                  credential_id=credential_id)
        for tool in tools:
            services.add_draft(actor=actor, kit=kit, name=tool)
        return _kit_state(kit)

    return await _run(ctx, work)


async def configure_drafts(ctx: RunContext[Any], drafts: list[DraftConfig]) -> Any:
    """Configure every draft of the kit at once from the documentation you read.

    Args:
        drafts: One entry per draft: draft_id, docs_url (a page you read with web_fetch in this conversation
            turn), and definition {name, alias, description, usage_notes, method, url, parameters, auth}.
            Parameters are named fields {name, location: path|query|header|body, type, required,
            mode: ai|fixed, value}; body fields one by one (dotted names nest), never one blob.

    Returns:
        The kit, each configured draft in state "configured". A definition the rules refuse comes back as a
        request to fix it, naming the field.
    """
    from capabilities.custom_tools import services

    read = ctx.deps.scratch.get("fetched_urls", set())
    unread = [d.docs_url for d in drafts if d.docs_url not in read]
    if unread:
        return failures.retry(ctx, "Read the documentation first: call web_fetch on " + ", ".join(unread)
                              + " before configuring from it. Never guess parameter names.")

    def work() -> Any:
        actor = _actor(ctx.deps)
        kit = None
        for item in drafts:
            draft = services.get_draft(actor, item.draft_id)
            services.configure_draft(actor=actor, draft=draft, definition=item.definition)
            kit = draft.kit
        return _kit_state(kit) if kit else []

    return await _run(ctx, work)


async def test_drafts(ctx: RunContext[Any], tests: list[DraftTest]) -> Any:
    """Run a real test call for every configured draft at once.

    Args:
        tests: One entry per draft: draft_id and args (the AI-visible arguments, as the agent would pass them).

    Returns:
        The kit: a passed test makes a draft "validated" with a compact preview; a failed one returns it to
        "configured" with the error, to fix and test again.
    """
    from capabilities.custom_tools import services

    def work() -> Any:
        actor = _actor(ctx.deps)
        kit = None
        for item in tests:
            draft = services.test_draft(actor=actor, draft=services.get_draft(actor, item.draft_id), args=item.args)
            kit = draft.kit
        return _kit_state(kit) if kit else []

    return await _run(ctx, work)


async def attach_notes(ctx: RunContext[Any], notes: list[DraftNote]) -> Any:
    """Attach warnings (from configured on) and sample outputs (once validated) to drafts, all at once.

    Args:
        notes: Entries {draft_id, kind: warning|sample, level: info|warning|critical, text}. A sample's text
            labels the draft's last successful test output.

    Returns:
        The kit with the notes attached.
    """
    from capabilities.custom_tools import services

    def work() -> Any:
        actor = _actor(ctx.deps)
        kit = None
        for note in notes:
            draft = services.get_draft(actor, note.draft_id)
            if note.kind == "sample":
                draft = services.attach_sample(actor=actor, draft=draft, label=note.text)
            else:
                draft = services.attach_warning(actor=actor, draft=draft, level=note.level, text=note.text)
            kit = draft.kit
        return _kit_state(kit) if kit else []

    return await _run(ctx, work)


async def finalize_kit(ctx: RunContext[Any], kit_id: str) -> Any:
    """Create every validated tool of a kit in the organization, as independent named tools.

    Args:
        kit_id: The kit to finalize (every draft must be validated; async ones need a warning).

    Returns:
        The created tools: id, alias and name.
    """
    from capabilities.custom_tools import services
    from capabilities.models import ToolKit

    def work() -> Any:
        actor = _actor(ctx.deps)
        kit = ToolKit.objects.filter(organization_id=ctx.deps.organization_id, pk=kit_id,
                                     session=_session(ctx.deps)).first()
        if kit is None:
            raise DomainError("No such kit in this builder session.")
        return [{"tool_id": str(t.pk), "alias": t.alias, "name": t.name}
                for t in services.finalize_kit(actor=actor, kit=kit)]

    return await _run(ctx, work)


PHASE_TOOLS: list[Callable[..., Any]] = [show_kits, start_kit, configure_drafts, test_drafts, attach_notes, finalize_kit]


def build(ctx: BuildContext) -> list[Built]:
    return [function_toolset(PHASE_TOOLS, max_retries=2)]


CAPABILITY = Capability(
    id="tool_builder",
    name="Tool builder",
    category="utility",
    description="Builds custom REST tools in kits: research the docs, configure, test for real, finalize.",
    tools=tuple(ToolDecl.from_function(f, side_effecting=f is not show_kits) for f in PHASE_TOOLS),
    config_model=NoConfig,
    selectable=False,
    build=build,
)


# ------------------------------------------------------------------ the built-in agent and its sessions
