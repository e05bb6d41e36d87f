"""Visuals: `draw` puts a drawing under the message (kind svg | mermaid | html), `revise_visual` changes one
with exact replacements (each revision its own visual), `read_visual` reads one as it stands.

Only the tool call is stored (the transcript keeps it), so a reload redraws it: a draw's content is its
argument, a revision's full content is in its result. The drawing runs in the applications' sandbox (opaque
origin, connect-src 'none', nothing remote but the library bundle). While someone watches in web chat the
console reports how it ran and `draw` waits up to VISUAL_REPORT_WAIT_SECONDS for that report, so the model
fixes a broken drawing in the same turn; with nobody watching it answers at once and says it was not checked.
Too big (ARTIFACT_MAX_BYTES), an SVG that is not one <svg> element, something loaded from another site, an
{{image:NAME}} with no such image, more than six images: retries naming what to change. An image is a workspace file
or an https:// address on a host this agent's web_fetch / browser_use would read (web_images.py).
"""

from __future__ import annotations

import base64
import mimetypes
import re
from dataclasses import dataclass
from typing import Any, Literal
from xml.etree import ElementTree as ET  # noqa: S405 (only checks the shape of model-written SVG, never trusted)

from asgiref.sync import sync_to_async
from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from capabilities import failures
from capabilities.artifacts import services as artifact_services
from capabilities.artifacts.capability import Edit
from capabilities.artifacts.sandbox import LIBRARY_PATH
from capabilities.base import BuildContext, Built, Capability, NoConfig, ToolDecl, function_toolset
from capabilities.skills import bundled
from capabilities.visuals import maps, reports, web_images
from knowledge.runtime import spec_for

Kind = Literal["svg", "mermaid", "html"]
MAX_IMAGES = 6
MAX_IMAGE_BYTES = 2 * 1024 * 1024
IMAGE_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
PLACEHOLDER_RE = re.compile(r"\{\{image:([^}]*)\}\}")
VISUAL_TOOLS = ("draw", "revise_visual")
# A load from elsewhere: src/href/xlink:href/url()/@import naming a scheme-relative or absolute http(s) URL.
_REMOTE_RE = re.compile(
    r"""(?:\b(?:src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(?P<a>(?:https?:)?//[^"'\s>]+))"""
    r"""|(?:url\(\s*["']?\s*(?P<b>(?:https?:)?//[^"')\s]+))"""
    r"""|(?:@import\s+(?:url\()?\s*["']?(?P<c>(?:https?:)?//[^"')\s;]+))""",
    re.IGNORECASE)
_IMPORT_RE = re.compile(r"""\bimport\s*(?:[^'"]*?\bfrom\s*)?["'](?P<u>(?:https?:)?//[^"']+)["']""")


class Image(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The name the drawing uses as {{image:NAME}}: letters, digits, '_' or '-'.")
    source: str = Field(description="A workspace file, e.g. /workspace/uploads/photo.png; or an https:// address, "
                                    "only when this agent reads the web (web_fetch or browser_use) and only on a "
                                    "host it may read.")


def _problems(kind: str, content: str, images: list[Image]) -> list[str]:
    problems: list[str] = []
    size = len(content.encode("utf-8"))
    if not content.strip():
        problems.append("content is empty: give the complete drawing")
    if size > settings.ARTIFACT_MAX_BYTES:
        problems.append(f"the drawing is {size:,} bytes; the most a drawing can be is {settings.ARTIFACT_MAX_BYTES:,}: "
                        "draw less, or compute data in a script instead of writing it out")
    if kind == "svg" and content.strip():
        problems += _svg_problems(content)
    remote = _remote(content)
    if remote:
        problems.append(f"it loads {remote} from another site, and a drawing has no network: embed the data, or load "
                        f"a library from the deployment's bundle ({LIBRARY_PATH}chart.umd.min.js, mermaid.min.js, "
                        "three.module.min.js, leaflet.js) — an image goes in images")
    if len(images) > MAX_IMAGES:
        problems.append(f"{len(images)} images; a drawing takes at most {MAX_IMAGES}")
    names = [i.name for i in images]
    bad = [n for n in names if not IMAGE_NAME_RE.match(n)]
    if bad:
        problems.append(f"image names {bad} are not usable: letters, digits, '_' or '-' (up to 40)")
    if len(set(names)) != len(names):
        problems.append("two images share a name")
    missing = sorted({n for n in PLACEHOLDER_RE.findall(content)} - set(names))
    if missing:
        problems.append(f"the drawing uses {', '.join('{{image:' + m + '}}' for m in missing)} but images has no "
                        "such name")
    return problems


def _svg_problems(content: str) -> list[str]:
    text = re.sub(r"^\s*(<\?xml[^>]*\?>\s*)?(<!--.*?-->\s*)*", "", content, flags=re.DOTALL).strip()
    if not (text.startswith("<svg") and text.endswith("</svg>")):
        return ["an svg drawing is one <svg>…</svg> element and nothing around it: for more, use kind html"]
    try:
        root = ET.fromstring(PLACEHOLDER_RE.sub("x", text))  # noqa: S314 (shape check of a string, no entities fetched)
    except ET.ParseError as exc:
        return [f"the SVG is not well-formed XML ({exc}): close every element and quote every attribute"]
    if not root.tag.endswith("svg"):
        return ["an svg drawing is one <svg> element"]
    return []


def _remote(content: str) -> str:
    tiles = maps.tile_origin().lower()
    for match in _REMOTE_RE.finditer(content):
        url = match.group("a") or match.group("b") or match.group("c") or ""
        if tiles and url.lower().startswith(tiles + "/"):
            continue  # the deployment's tile server (VISUAL_MAP_TILES), which the frame's policy admits
        if url and not url.lower().startswith(("http://www.w3.org/", "https://www.w3.org/")):
            return url
    found = _IMPORT_RE.search(content)
    return found.group("u") if found else ""


def _is_address(source: str) -> bool:
    return bool(re.match(r"^\s*[a-z][a-z0-9+.-]*://", source, re.IGNORECASE))


async def _load_all(ctx: RunContext[Any], images: list[Image], content: str) -> tuple[dict[str, str], str]:
    """({name: data URI} of the images the drawing uses, "") or ({}, refusal): files from the workspace, addresses
    from the web only as the agent's own web readers would read them (web_images)."""
    used = set(PLACEHOLDER_RE.findall(content))
    wanted = [i for i in images if i.name in used]  # a visual keeps only the images its drawing still uses
    files = [i for i in wanted if not _is_address(i.source)]
    loaded, refusal = await sync_to_async(_load_images)(ctx.deps, files)
    if refusal:
        return {}, refusal
    web = ctx.deps.scratch.get("visual_web_readers") or web_images.WebReaders()
    for image in (i for i in wanted if _is_address(i.source)):
        uri, refusal = await web_images.load(image.name, image.source.strip(), web, MAX_IMAGE_BYTES)
        if refusal:
            return {}, refusal
        loaded[image.name] = uri
    return {i.name: loaded[i.name] for i in wanted}, ""


def _load_images(deps: Any, images: list[Image]) -> tuple[dict[str, str], str]:
    """({name: data URI} of these workspace images, "") or ({}, refusal)."""
    loaded: dict[str, str] = {}
    for image in images:
        from capabilities.sandbox.capability import is_withheld
        from workspaces import store

        workspace_id = deps.scratch.get("workspace_id")
        if not workspace_id:
            return {}, f"image {image.name!r} names a file, and this agent has no workspace in this run"
        path = store.normal(image.source)
        if is_withheld(path):
            return {}, f"image {image.name!r}: {path} is withheld by the workspace's permission rules"
        try:
            data = store.read(workspace_id, path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return {}, f"image {image.name!r}: there is no file {path} in the workspace"
        mime = mimetypes.guess_type(path)[0] or ""
        if not mime.startswith("image/"):
            return {}, f"image {image.name!r}: {path} is not an image file"
        if len(data) > MAX_IMAGE_BYTES:
            return {}, f"image {image.name!r} is {len(data):,} bytes; an image is at most {MAX_IMAGE_BYTES:,}"
        loaded[image.name] = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return loaded, ""


@dataclass(frozen=True)
class Stored:
    visual_id: str
    kind: str
    title: str
    content: str
    images: dict[str, str]


def _stored(organization_id: Any, conversation_id: Any, run_id: Any, visual_id: str) -> Stored | None:
    """A visual of this conversation (or, without one, of this run) by id — a draw or a revision."""
    from agents.models import ToolCall

    qs = ToolCall.objects.filter(run__organization_id=organization_id, tool_name__in=VISUAL_TOOLS,
                                 status=ToolCall.Status.OK, tool_call_id=visual_id)
    qs = qs.filter(run__conversation_id=conversation_id) if conversation_id else qs.filter(run_id=run_id)
    row = qs.order_by("-started_at").first()
    if row is None or not isinstance(row.result, dict):
        return None
    result = row.result
    content = result.get("content") if row.tool_name == "revise_visual" else (row.args or {}).get("content")
    if not isinstance(content, str):
        return None
    return Stored(visual_id, str(result.get("visual_kind") or ""), str(result.get("title") or ""), content,
                  dict(result.get("images") or {}))


async def _find(ctx: RunContext[Any], visual_id: str) -> Stored | None:
    mine = ctx.deps.scratch.get("visuals", {}).get(visual_id)
    if mine is not None:
        return mine
    return await sync_to_async(_stored)(ctx.deps.organization_id, ctx.deps.conversation_id, ctx.deps.run_id,
                                        visual_id)


def _watching(ctx: RunContext[Any]) -> bool:
    # Web chat with its person on the socket (the runs that can show an ask_user card) has a console drawing it.
    return ctx.deps.surface == "web" and bool(ctx.deps.can_ask_user) and ctx.deps.user_id is not None


@dataclass(frozen=True)
class Check:
    checked: bool
    errors: list[str]
    watched: bool  # someone watched web chat (a report was awaited), whether or not it came


async def _check(ctx: RunContext[Any], kind: str, content: str) -> Check:
    if not _watching(ctx):
        return Check(False, [], watched=False)
    found = await reports.wait(ctx.deps.organization_id, ctx.deps.user_id, reports.digest(kind, content),
                               settings.VISUAL_REPORT_WAIT_SECONDS)
    return Check(found is not None, found or [], watched=True)


def _result(visual_id: str, kind: str, title: str, images: dict[str, str], check: Check,
            *, content: str | None = None, revision_of: str | None = None) -> dict[str, Any]:
    checked, errors = check.checked, check.errors
    if not checked and check.watched:
        message = (f"Drawn; not checked: the console sent no report on how it rendered within "
                   f"{settings.VISUAL_REPORT_WAIT_SECONDS} s.")
    elif not checked:
        message = "Drawn; not checked: nobody is watching this conversation in web chat, so nothing reported how it rendered."
    elif errors:
        message = ("Drawn, but the console reported problems: " + " | ".join(errors)
                   + f" Fix them with revise_visual(visual_id={visual_id!r}, edits=[…]).")
    else:
        message = "Drawn and checked: the console reported no script errors, failed loads or refused requests."
    out: dict[str, Any] = {"kind": "visual", "visual_id": visual_id, "visual_kind": kind, "title": title,
                           "images": images, "checked": checked, "errors": errors, "message": message}
    if content is not None:
        out["content"] = content
    if revision_of is not None:
        out["revision_of"] = revision_of
    return out


def _remember(ctx: RunContext[Any], stored: Stored) -> None:
    ctx.deps.scratch.setdefault("visuals", {})[stored.visual_id] = stored


async def draw(ctx: RunContext[Any], kind: Kind, title: str, content: str,
               images: list[Image] | None = None) -> dict[str, Any] | str:
    """Draw in the conversation: a diagram, a map, a flow, an explanation, a 3D scene.

    Pick the form first: a fact is text, exact values are a Markdown table, numbers to look at are
    create_chart. Draw when the person must understand how something works, use a tool made for the moment,
    or follow places on a map. The drawing has no network: embed its data and load libraries only from
    /apps/lib/ (chart.umd.min.js, mermaid.min.js, three.module.min.js as an ES module, leaflet.js).
    Scripts run once the call is complete. agenticos.followUp(text) offers the person a next message they send
    with a click.

    Args:
        kind: svg (one <svg> element: diagrams, illustrations), mermaid (flowcharts, sequences, ER diagrams)
            or html (anything interactive: sliders, <canvas>, three.js, a map).
        title: A short title for the drawing (up to 200 characters).
        content: The complete drawing, as the kind says.
        images: Up to 6 images the drawing uses as {{image:NAME}}: a workspace file, or an https:// address on a
            host this agent may read with web_fetch or browser_use (2 MiB at most each).

    Returns:
        The visual's id and whether the console checked it: the script errors, failed loads and refused
        requests it reported (fix them with revise_visual), or that nobody was watching. Too big, an SVG that is
        not one <svg> element, a load from another site or an unknown {{image:…}} is a request to call again.
    """
    images = images or []
    problems = _problems(kind, content, images)
    if problems:
        return failures.retry(ctx, "The drawing cannot be shown: " + "; ".join(problems) + ".")
    loaded, refusal = await _load_all(ctx, images, content)
    if refusal:
        return failures.refuse(refusal)
    visual_id = ctx.tool_call_id or "visual"
    _remember(ctx, Stored(visual_id, kind, title[:200], content, loaded))
    check = await _check(ctx, kind, content)
    return _result(visual_id, kind, title[:200], loaded, check)


async def revise_visual(ctx: RunContext[Any], visual_id: str, edits: list[Edit],
                        title: str = "") -> dict[str, Any] | str:
    """Change a visual of this conversation with exact replacements, without drawing it again.

    The revision is a visual of its own under this message; the one it revises stays as it was. Read an
    earlier turn's visual with read_visual first: you see earlier turns only as text.

    Args:
        visual_id: The id draw (or an earlier revise_visual) returned.
        edits: Exact replacements, in order; each old_text must occur exactly once.
        title: A new title. Default: the revised visual's.

    Returns:
        The new visual's id and whether the console checked it, as draw says. An unknown id, an old_text found
        nowhere or in several places, or a result too big is a request to call again.
    """
    base = await _find(ctx, visual_id)
    if base is None:
        return failures.retry(ctx, f"There is no visual {visual_id!r} in this conversation: use an id draw or "
                                   "revise_visual returned (they are listed in your instructions).")
    try:
        content = artifact_services.apply_edits(base.content, [(e.old_text, e.new_text) for e in edits])
    except artifact_services.Problem as exc:
        return failures.retry(ctx, str(exc).replace("read_artifact", "read_visual"))
    problems = _problems(base.kind, content, [])
    problems = [p for p in problems if "images has no such name" not in p]
    missing = sorted(set(PLACEHOLDER_RE.findall(content)) - set(base.images))
    if missing:
        problems.append(f"the revision uses {missing} images the visual does not have")
    if problems:
        return failures.retry(ctx, "The revision cannot be shown: " + "; ".join(problems) + ".")
    used = set(PLACEHOLDER_RE.findall(content))
    images = {name: uri for name, uri in base.images.items() if name in used}
    new_id = ctx.tool_call_id or f"{visual_id}-r"
    new_title = title[:200] or base.title
    _remember(ctx, Stored(new_id, base.kind, new_title, content, images))
    check = await _check(ctx, base.kind, content)
    return _result(new_id, base.kind, new_title, images, check, content=content, revision_of=visual_id)


async def read_visual(ctx: RunContext[Any], visual_id: str) -> str:
    """Read a visual of this conversation as it stands, with its revisions applied.

    Args:
        visual_id: The id draw or revise_visual returned.

    Returns:
        A header line (id, kind, title, images) and the drawing's source, or a sentence saying there is no such
        visual in this conversation.
    """
    found = await _find(ctx, visual_id)
    if found is None:
        return failures.bad_news(f"There is no visual {visual_id!r} in this conversation.")
    images = ", ".join(sorted(found.images)) or "none"
    return f"{found.visual_id} — {found.kind}, {found.title!r}, images: {images}\n{found.content}"


def _earlier(organization_id: Any, conversation_id: Any) -> list[tuple[str, str, str]]:
    from agents.models import ToolCall

    if not conversation_id:
        return []
    rows = (ToolCall.objects.filter(run__organization_id=organization_id, run__conversation_id=conversation_id,
                                    tool_name__in=VISUAL_TOOLS, status=ToolCall.Status.OK)
            .order_by("started_at").values_list("tool_call_id", "tool_name", "result")[:50])
    return [(tid, name, str((r or {}).get("title") or "")) for tid, name, r in rows if isinstance(r, dict)]


@dataclass
class EarlierVisuals(AbstractCapability[Any]):
    """Names the conversation's earlier visuals, by id and title (earlier turns reach the model as text)."""

    def get_instructions(self):
        async def listing(ctx: RunContext[Any]) -> str:
            rows = await sync_to_async(_earlier)(ctx.deps.organization_id, ctx.deps.conversation_id)
            lines = ["## Visuals", "Drawings run without network in a sandbox. " + maps.instructions(),
                     "Before you draw, load the visual-design skill (load_capability): how a drawing should look and "
                     "five templates to start from."]
            if rows:
                lines.append("Earlier visuals in this conversation (read_visual before revising one):")
                lines += [f"- {tid}: {title or '(untitled)'}" + (" (a revision)" if name == "revise_visual" else "")
                          for tid, name, title in rows]
            return "\n".join(lines)

        return listing


def build(ctx: BuildContext) -> list[Built]:
    spec = spec_for(ctx)
    # An image from the web comes only as this agent's own web readers would read it.
    ctx.deps.scratch["visual_web_readers"] = web_images.readers_of(spec)
    built: list[Built] = [EarlierVisuals(), function_toolset([draw, revise_visual, read_visual])]
    # The bundled visual-design skill (capabilities/skills/bundled/), unless Skills lists it with the organization's.
    shipped = bundled.capability_for("visuals", spec)
    if shipped is not None:
        built.append(shipped)
    return built


CAPABILITY = Capability(
    id="visuals",
    name="Visuals",
    category="analysis",
    description="Draws diagrams, flows, maps and small interactive explanations in the conversation.",
    offers="diagrams, flows and interactive drawings in the conversation",
    examples=(
        "Draw how our deployment pipeline works",
        "Show me a slider that explains compound interest",
        "Sketch the order flow as a sequence diagram.",
    ),
    never_does=(
        "It never gives a drawing network access or anything remote but the deployment's library bundle, "
        "never runs a drawing's scripts before the call is complete, and never sends a follow-up without the "
        "person's click."
    ),
    tools=(ToolDecl.from_function(draw), ToolDecl.from_function(revise_visual), ToolDecl.from_function(read_visual)),
    config_model=NoConfig,
    voice="live",
    build=build,
    # The spec: the Builder binds it together with Charts. A number to look at is create_chart's, not a drawing's,
    # and the skill tells the model to choose so.
    binds_with=("charts",),
)
