"""Read web pages. `local` (default) downloads here through `agenticos.netguard` (the resolved address
pinned, every redirect re-checked including the domain filters, the body bounded while streaming,
unboundable encodings refused) and converts with pydantic-ai's own web-fetch converters; `native` lets the
model provider fetch; `auto` is native where the model has it, local elsewhere (pydantic-ai `WebFetch`).

Why not `web_fetch_tool` itself: its SSRF switch is all-or-nothing (`allow_local_urls`), and this
deployment's operator allowance is per host (`TOOL_ALLOWED_PRIVATE_HOSTS`); and it returns a PDF's raw
bytes, which a model behind an OpenAI-compatible endpoint rejects, so documents are extracted here.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import anyio.to_thread
import httpx2
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext
from pydantic_ai._utils import is_text_like_media_type
from pydantic_ai.capabilities import WebFetch
from pydantic_ai.common_tools import web_fetch as library
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import Tool

from agenticos import netguard
from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from capabilities.lifecycle import RunHooks
from capabilities.web_fetch import domains

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
MAX_PDF_PAGES = 2000
TIMEOUT = 30
OFFICE = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "presentation",
}


class WebFetchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["local", "native", "auto"] = Field(default="local", json_schema_extra={"x-enum-labels": {
        "local": "This deployment", "native": "Model provider", "auto": "Automatic"}})
    max_content_chars: int = Field(default=50_000, ge=1000, le=200_000)
    allowed_domains: list[str] | None = Field(default=None, description="Bare host names the agent may read; empty: any.")
    blocked_domains: list[str] | None = Field(default=None, description="Bare host names it may never read.")

    @field_validator("allowed_domains")
    @classmethod
    def _allowed(cls, value: list[str] | None) -> list[str] | None:
        return domains.normalize_list(value, allow_list=True)

    @field_validator("blocked_domains")
    @classmethod
    def _blocked(cls, value: list[str] | None) -> list[str] | None:
        return domains.normalize_list(value, allow_list=False)


def binding_problems(binding: Any, config: WebFetchConfig) -> list[str]:
    """Approval wraps tool execution here; a provider-executed fetch never reaches it (publish and assembly)."""
    required = binding.tool_approval.get("web_fetch", binding.approval) == "required"
    if required and config.method != "local":
        return [f"web_fetch requires approval but method is {config.method!r}: the provider would fetch without "
                "asking. Set method to local, or remove the approval requirement."]
    return []


def model_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    """`native` on a model whose provider does not fetch would fail every run (pydantic-ai raises on it; spec: "solo
    en modelos que lo admiten"): refused at publish, as web_research's native search is. `auto` falls back to local
    by itself, so it is never refused."""
    from capabilities.model_support import binding_on_model

    bound = binding_on_model(actor, data, "web_fetch", WebFetchConfig)
    if bound is None or bound.config.method != "native" or "web_fetch" in bound.native_tool_kinds():
        return []
    return [{"field": f"{format_path(('capabilities', bound.index), data)}.config.method",
             "message": f"The model of “{bound.label}” ({bound.model.model_name}) cannot fetch web pages itself, so "
                        "method 'native' would fail every run: choose local or auto, or a model that fetches."}]


def _pdf_text(data: bytes, limit: int) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    total = len(reader.pages)
    parts: list[str] = []
    size = 0
    stopped_at = None
    for number, page in enumerate(reader.pages, start=1):
        if number > MAX_PDF_PAGES:
            stopped_at = number
            break
        text = page.extract_text() or ""
        parts.append(text)
        size += len(text)
        if size >= limit:
            break
    body = "\n\n".join(p for p in parts if p.strip())
    note = ""
    if stopped_at is not None:
        note = f"\n\n[Stopped reading at page {stopped_at} of {total}: at most {MAX_PDF_PAGES} pages are read.]"
    return body + note if body.strip() else note.strip()


def _office_text(kind: str, data: bytes) -> str:
    from knowledge.parsers import parse

    return "\n\n".join(section.text for section in parse(kind, data))


def _cut(content: str, limit: int) -> str:
    content = library._clean_whitespace(content)
    return content if len(content) <= limit else content[:limit] + "\n\n[Content truncated]"


async def fetch_page(url: str, *, max_chars: int, allowed: list[str] | None, blocked: list[str] | None) -> Any:
    """Download and convert. Raises ModelRetry with a sentence the model can act on."""
    try:
        fetched = await netguard.safe_request(
            "GET", url, headers={"Accept": "text/markdown, text/html;q=0.9, */*;q=0.8"}, timeout=TIMEOUT,
            max_bytes=MAX_DOWNLOAD_BYTES, allowed_domains=allowed, blocked_domains=blocked)
    except netguard.Refused as exc:
        raise ModelRetry(f"Could not read {url}: {exc}") from None
    except httpx2.TimeoutException:
        raise ModelRetry(f"{url} did not answer within {TIMEOUT} seconds.") from None
    except (httpx2.RequestError, httpx2.InvalidURL) as exc:
        raise ModelRetry(f"{url} could not be reached ({type(exc).__name__}).") from None
    if not fetched.ok:
        raise ModelRetry(f"{url} answered HTTP {fetched.status}.")
    media = fetched.media_type
    title = ""
    if not media or is_text_like_media_type(media):
        text = fetched.text()
        if media in ("text/markdown", "text/x-markdown"):
            content = text
        elif not media or media in ("text/html", "application/xhtml+xml"):
            title, content = await anyio.to_thread.run_sync(library._convert_html, text)
        elif media == "application/json":
            import json

            try:
                content = f"```json\n{json.dumps(json.loads(text), indent=2)}\n```"
            except ValueError:
                content = text
        else:
            content = text
        return {"url": url, "title": title, "content": _cut(content, max_chars)}
    if media.startswith("image/"):
        return BinaryContent(data=fetched.content, media_type=media)
    if media == "application/pdf":
        try:
            text = await anyio.to_thread.run_sync(_pdf_text, fetched.content, max_chars)
        except Exception as exc:  # pypdf raises many kinds for a broken file
            raise ModelRetry(f"{url} is a PDF that could not be read ({type(exc).__name__}).") from None
        if not text.strip():
            raise ModelRetry(f"{url} is a PDF without readable text (a scan?), {len(fetched.content)} bytes.")
        return {"url": url, "title": "", "content": _cut(text, max_chars)}
    if media in OFFICE:
        try:
            text = await anyio.to_thread.run_sync(_office_text, OFFICE[media], fetched.content)
        except Exception as exc:
            raise ModelRetry(f"{url} is a {OFFICE[media]} document that could not be read: {exc}") from None
        return {"url": url, "title": "", "content": _cut(text, max_chars)}
    raise ModelRetry(f"{url} returned {media or 'an unknown type'} ({len(fetched.content)} bytes), which has no "
                     "readable text. Try another source.")


async def web_fetch(ctx: RunContext[Any], url: str) -> Any:
    """Read the whole page at a URL, as Markdown.

    Use it after a search to read a result, or for a URL the person gave. Pages (HTML, Markdown, JSON,
    text) come back as Markdown; images as images; PDFs and office documents as their extracted text.

    Args:
        url: The full http(s) URL to read.

    Returns:
        {url, title, content}: content is Markdown cut at the agent's limit (marked "[Content truncated]").
        A refused address or domain, an error status or unreadable binary comes back as a request to try
        again or use another source, saying what happened.
    """
    config: WebFetchConfig = ctx.deps.scratch["web_fetch_config"]
    try:
        page = await fetch_page(url, max_chars=config.max_content_chars, allowed=config.allowed_domains,
                                blocked=config.blocked_domains)
        # What was actually read this run (the tool builder configures only from pages it read).
        ctx.deps.scratch.setdefault("fetched_urls", set()).add(url)
        return page
    except ModelRetry as exc:
        # Retries are counted per tool, not per URL: on the last attempt the reason becomes the result.
        return failures.retry(ctx, str(exc))


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, WebFetchConfig)
    config = ctx.config  # approval + a provider-executed method never gets here: build_for_run refuses the run
    ctx.deps.scratch["web_fetch_config"] = config
    if config.method == "local":
        return [function_toolset([web_fetch], max_retries=2)]
    local: Any = Tool(web_fetch, name="web_fetch", max_retries=2) if config.method == "auto" else False
    return [WebFetch(native=True, local=local, allowed_domains=config.allowed_domains,
                     blocked_domains=config.blocked_domains)]


CAPABILITY = Capability(
    binding_check=binding_problems,
    id="web_fetch",
    name="Read web pages",
    category="research",
    description="Reads the full page at a URL as Markdown (images as images, PDFs and documents as text).",
    offers="reading whole web pages and documents at a URL",
    examples=(
        "Read this article and summarise it",
        "What does the pricing page say?",
        "List the recommendations in this PDF report.",
    ),
    never_does=(
        "It never submits forms or signs in: it only reads. When this deployment fetches (the default), it "
        "never reaches cloud-metadata addresses, private ones unless an operator allowed that host, or a "
        "blocked domain."
    ),
    tools=(ToolDecl.from_function(web_fetch),),
    scopes=("web:fetch",),
    config_model=WebFetchConfig,
    build=build,
    hooks=RunHooks(publish_problems=model_problems),
)
