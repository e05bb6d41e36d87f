"""Applications: `publish_artifact` puts one finished HTML or Markdown page under a stable link, `read_artifact`
reads the current version back as written.

Who it is for comes from the Run row, never the model: the first publish is private to the run's person
(for a schedule, the person it runs for), and only a person widens who reads it (console share dialog / API).
Reading opens only what that person could open in the console (an API key's run reads as the key's person,
as it publishes), and nothing where no identified person listens — a public widget, an embed, a schedule or an
event trigger. Wrong calls (more or fewer than one of
path | content | edits, a bad name, an unknown extension, an empty or oversized page, an edit that matches
no place or several, edits against a version published over since) are retries naming what to change; a
workspace read the permission rules refuse and a page the person cannot open are results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.artifacts import access, services
from capabilities.base import BuildContext, Built, Capability, NoConfig, ToolDecl, function_toolset

READ_KEY = "artifacts_read"  # deps.scratch: name → version number read this run (what edits apply to)


class Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old_text: str = Field(description="The exact passage to replace; it must occur exactly once in the page.")
    new_text: str = Field(description="The replacement (empty deletes the passage).")


@dataclass
class _Who:
    organization_id: str
    agent_id: str
    environment: str
    user_id: int | None
    role: str | None
    kind: str  # knowledge.runtime.Audience kind
    run_id: str | None
    # Started with an API key: the key acts for its person (anonymous to knowledge, which hears no one, but the
    # person publish_artifact writes for can read back what they may open).
    by_key: bool = False


def link(artifact: Any) -> str:
    return f"{settings.FRONTEND_URL}/apps/{artifact.pk}/"


def _who_sync(deps: Any) -> _Who:
    from agents.models import Run
    from knowledge.runtime import _uuid, audience_for

    audience = audience_for(deps)
    run_pk = _uuid(deps.run_id)
    run = Run.objects.filter(pk=run_pk, organization_id=deps.organization_id).first() if run_pk else None
    user_id = run.user_id if run is not None else deps.user_id
    environment = services.environment_of_run(run) if run is not None else str(
        deps.scratch.get("environment") or "production")
    return _Who(organization_id=str(deps.organization_id), agent_id=str(run.agent_id if run else deps.agent_id),
                environment=environment, user_id=user_id, role=access.member_role(deps.organization_id, user_id),
                kind=audience.kind, run_id=str(run.pk) if run is not None else None,
                by_key=run is not None and run.api_key_id is not None)


async def _who(ctx: RunContext[Any]) -> _Who:
    cached = ctx.deps.scratch.get("artifacts_who")
    if cached is None:
        cached = await sync_to_async(_who_sync)(ctx.deps)
        ctx.deps.scratch["artifacts_who"] = cached
    return cached


def _read_workspace(deps: Any, path: str) -> tuple[str | None, str]:
    """(text, "") or (None, why): the run's workspace file through the sandbox store and its permission rules."""
    from capabilities.sandbox.capability import is_withheld
    from workspaces import store

    workspace_id = deps.scratch.get("workspace_id")
    if not workspace_id:
        return None, "this agent has no workspace in this run: pass the page as content instead"
    full = store.normal(path)
    if is_withheld(full):
        return None, f"{full} is withheld by the workspace's permission rules"
    try:
        data = store.read(workspace_id, full)
    except FileNotFoundError:
        return None, f"there is no file {full} in the workspace"
    except (IsADirectoryError, NotADirectoryError):
        return None, f"{full} is not a file"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, f"{full} is not UTF-8 text"


async def publish_artifact(
    ctx: RunContext[Any],
    name: str,
    title: str = "",
    path: str | None = None,
    content: str | None = None,
    edits: list[Edit] | None = None,
    format: Literal["html", "markdown"] = "html",  # noqa: A002 (the name the model reads)
) -> str:
    """Publish a finished page (a report, a small dashboard, a summary) as an application under a stable link.

    One self-contained HTML or Markdown document: embed your own data in it and load charts only from the
    deployment's library bundle (/apps/lib/: chart.umd.min.js, mermaid.min.js, three.module.min.js,
    leaflet.js), never a CDN — the page has no network at all. Publishing the same name again from this agent
    adds a version to the same link. Give exactly one of path, content or edits.

    Args:
        name: The application's name, its identity for this agent: 1-64 lowercase letters, digits and '-',
            e.g. weekly-report.
        title: Optional title shown in the Apps list. Default: the name.
        path: A .html/.htm/.md/.markdown file in your workspace to publish.
        content: The complete page, inline (for an agent without a workspace).
        edits: Exact replacements applied to the version read_artifact returned in this conversation's run.
        format: html or markdown, for content only (path takes it from the extension; edits keep it).
            Default html.

    Returns:
        The link and version ('Published … version N', or 'unchanged' when the bytes are identical). A wrong
        call comes back as a request to call again naming what to change; a file the workspace rules withhold
        or a page the person cannot change is a result saying so.
    """
    given = [label for label, value in (("path", path), ("content", content), ("edits", edits)) if value is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        return failures.retry(ctx, f"Give exactly one of path, content or edits (you gave {what}).")
    try:
        services.check_name(name)
    except services.Problem as exc:
        return failures.retry(ctx, str(exc))
    who = await _who(ctx)
    if who.user_id is None or who.role is None:
        return failures.refuse("This run has no person in this organization to own an application "
                               "(a public widget, an embed or an anonymous API call).")
    based_on: int | None = None
    if path is not None:
        try:
            fmt = services.format_of_path(path)
        except services.Problem as exc:
            return failures.retry(ctx, str(exc))
        text, why = await sync_to_async(_read_workspace)(ctx.deps, path)
        if text is None:
            return failures.refuse(f"The file cannot be published: {why}.")
    elif content is not None:
        fmt, text = format, content
    else:
        read = ctx.deps.scratch.get(READ_KEY, {}).get(name)
        if read is None:
            return failures.retry(ctx, f"Edits apply to the version read_artifact returned: call "
                                       f"read_artifact(name={name!r}) first.")
        based_on, fmt, base_text = read
        try:
            text = services.apply_edits(base_text, [(e.old_text, e.new_text) for e in edits or []])
        except services.Problem as exc:
            return failures.retry(ctx, str(exc))
    refusal = await sync_to_async(_may_publish)(who, name)
    if refusal:
        return failures.refuse(refusal)
    try:
        published = await sync_to_async(services.publish)(
            organization_id=who.organization_id, agent_id=who.agent_id, environment=who.environment, name=name,
            owner_id=who.user_id, text=text, fmt=fmt, title=title, run_id=who.run_id, based_on=based_on)
    except services.Problem as exc:
        return failures.retry(ctx, str(exc))
    version = published.version
    ctx.deps.scratch.setdefault(READ_KEY, {})[name] = (version.number, version.format, version.content)
    where = link(published.artifact)
    if published.outcome == "unchanged":
        return f"unchanged: {name!r} is already these bytes (version {version.number}). Link: {where}"
    private = (" It is private to the person this run is for until they share it from Apps."
               if published.outcome == "created" else "")
    return f"Published {name!r} version {version.number} ({version.format}, {version.size:,} bytes): {where}.{private}"


def _may_publish(who: _Who, name: str) -> str:
    existing = services.find(who.organization_id, who.agent_id, who.environment, name)
    if existing is None:
        return ""
    level = access.level_for(who.role, who.user_id, existing)
    if not access.GRANTS.at_least(level, access.EDIT):
        return (f"{name!r} is an application the person this run is for cannot change; publish under another "
                "name or ask its owner to share it with edit access.")
    return ""


async def read_artifact(ctx: RunContext[Any], name: str) -> str:
    """Read the current version of an application this agent published, as it was written.

    Read before edits: publish_artifact's edits apply to the version this returns.

    Args:
        name: The application's name, e.g. weekly-report.

    Returns:
        A header line (version, format, size, and whether the source was cut at 100,000 characters) then the
        source. A name this agent never published, one the person cannot open, or a chat where no identified
        person listens (widget, embed, schedule, event trigger) is a result saying so.
    """
    try:
        services.check_name(name)
    except services.Problem as exc:
        return failures.retry(ctx, str(exc))
    who = await _who(ctx)
    listening = who.kind not in ("anonymous", "nobody") or who.by_key
    if not listening or who.user_id is None or who.role is None:
        return failures.refuse("Applications are read only for an identified person in the console, a direct "
                               "chat, a group chat or an API key's run — not in a public widget, an embed, a "
                               "schedule or an event trigger.")
    found = await sync_to_async(_readable)(who, name)
    if isinstance(found, str):
        return failures.bad_news(found)
    number, fmt, text = found
    ctx.deps.scratch.setdefault(READ_KEY, {})[name] = (number, fmt, text)
    cut = len(text) > services.READ_LIMIT
    header = (f"{name} — version {number}, {fmt}, {len(text.encode('utf-8')):,} bytes"
              + (f"; cut at {services.READ_LIMIT:,} of {len(text):,} characters" if cut else ""))
    return f"{header}\n{text[:services.READ_LIMIT]}"


def _readable(who: _Who, name: str) -> tuple[int, str, str] | str:
    artifact = services.find(who.organization_id, who.agent_id, who.environment, name)
    if artifact is None or access.level_for(who.role, who.user_id, artifact) is None:
        # Absent and unreadable read the same, so the name of another person's private page is not confirmed.
        return f"This agent has no application named {name!r} that the person this run is for can open."
    version = services.current(artifact)
    if version is None:
        return f"{name!r} has no version yet."
    return version.number, version.format, version.content


def build(ctx: BuildContext) -> list[Built]:
    return [function_toolset([publish_artifact, read_artifact])]


CAPABILITY = Capability(
    id="artifacts",
    name="Apps",
    category="utility",
    description="Publishes a finished HTML or Markdown page — a report, a small dashboard — under a stable link.",
    offers="publishing reports and small dashboards as pages under a stable link",
    examples=(
        "Publish this week's numbers as a report page",
        "Turn the summary into a small dashboard I can share",
        "Update the weekly-report page with today's figures.",
    ),
    never_does=(
        "It never gives a page network access or anything remote but the deployment's library bundle, never "
        "shares a first publish beyond the person the run is for, and never reads a page in a public widget, an "
        "embed, a schedule or an event trigger."
    ),
    tools=(
        ToolDecl.from_function(publish_artifact, side_effecting=True),
        ToolDecl.from_function(read_artifact),
    ),
    config_model=NoConfig,
    voice="live",
    build=build,
)
