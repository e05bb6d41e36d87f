"""Visuals out: a drawing the agent made this turn (`draw` / `revise_visual`, capabilities/visuals) reaches a
chat as a PNG rendered here in headless Debian chromium, or — where it cannot be rendered (Playwright or
chromium absent, a drawing that never finishes) or the platform refuses the upload — as its title with the
console link where it is drawn.

The drawing runs in the same sandbox as in the console: the document capabilities/visuals/frame.py builds
(meta CSP `connect-src 'none'`, nothing remote but the library bundle and the deployment's tile host) inside an
`<iframe sandbox="allow-scripts">` (an opaque origin) of a host page that runs no drawing code. The browser
reaches no network: every request is answered from here — the host page, the library files from
static/vendor/lib/, a map tile from the one host VISUAL_MAP_TILES names (which the frame's policy admits),
fetched here without redirects — or refused. The PNG is taken once the frame's `agenticos-frame.js` reports that the drawing has run.

Rendering happens with no database work in between: Playwright's sync API runs an event loop on this thread,
and the Django ORM refuses to run while one is running.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from agents.models import ToolCall
from capabilities.artifacts.sandbox import LIBRARY_DIR, LIBRARY_FILES, LIBRARY_PATH
from capabilities.visuals import frame, maps
from capabilities.visuals.capability import VISUAL_TOOLS
from channelbots.platforms import PlatformClient, PlatformError

logger = logging.getLogger(__name__)

# Debian's chromium-headless-shell where installed (the production image installs it): the same Blink without
# the full browser's windows, started per batch of visuals — a sixth less CPU across tests/channelbots/
# test_visuals_out.py (19.2 → 15.4 s user). Else Debian's chromium; AGENTICOS_CHROMIUM names another.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"


def chromium_path(environ: Any = os.environ, exists: Any = os.path.exists) -> str:
    return environ.get("AGENTICOS_CHROMIUM") or (HEADLESS_SHELL if exists(HEADLESS_SHELL) else "/usr/bin/chromium")


CHROMIUM = chromium_path()
# IsolateSandboxedIframes off: a sandboxed frame in a process of its own escapes the page's request routing.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--disable-features=IsolateSandboxedIframes",
                 "--host-resolver-rules=MAP * ~NOTFOUND"]  # no name resolves, should a request slip the route
HOST = "http://visual.localhost"  # loopback to chromium, never resolved: the route below answers every request
WIDTH = 960
MIN_HEIGHT, MAX_HEIGHT = 120, 2400
RENDER_TIMEOUT_MS = 15000
MAX_VISUALS = 3
TILE_TIMEOUT_MS = 5000


class RendererMissing(Exception):
    """Playwright or chromium is not installed: the visual goes out as its link."""


@dataclass(frozen=True)
class Visual:
    visual_id: str
    kind: str
    title: str
    content: str
    images: dict[str, str]


def visuals_of_run(run_id: Any) -> list[Visual]:
    """The visuals this run drew, in order; a visual this run revised gives way to its revision."""
    rows = (ToolCall.objects.filter(run_id=run_id, tool_name__in=VISUAL_TOOLS, status=ToolCall.Status.OK)
            .order_by("started_at", "pk").values_list("tool_call_id", "tool_name", "args", "result"))
    found: list[Visual] = []
    revised: set[str] = set()
    for tool_call_id, tool_name, args, result in rows:
        if not isinstance(result, dict) or result.get("kind") != "visual":
            continue
        content = result.get("content") if tool_name == "revise_visual" else (args or {}).get("content")
        kind = str(result.get("visual_kind") or "")
        if not isinstance(content, str) or kind not in ("svg", "mermaid", "html"):
            continue
        if tool_name == "revise_visual" and result.get("revision_of"):
            revised.add(str(result["revision_of"]))
        found.append(Visual(str(result.get("visual_id") or tool_call_id), kind, str(result.get("title") or ""),
                            content, {str(k): str(v) for k, v in dict(result.get("images") or {}).items()}))
    return [v for v in found if v.visual_id not in revised]


def file_name(visual: Visual, index: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", visual.title.lower()).strip("-")[:60]
    return f"{slug or 'visual'}{'-' + str(index + 1) if index else ''}.png"


def link_text(visual: Visual, url: str) -> str:
    return f"{visual.title or 'A drawing'} — drawn in the conversation: {url}"


# ------------------------------------------------------------------ image


def host_page(visual: Visual) -> str:
    """The page the frame sits in: no drawing code, only the listener for the frame's report."""
    srcdoc = frame.document(visual.kind, visual.content, visual.images, HOST)
    return ('<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;background:#fff}'
            f'iframe{{border:0;display:block;width:{WIDTH}px;height:{MIN_HEIGHT}px}}</style></head><body>'
            f'<iframe id="visual" sandbox="allow-scripts" referrerpolicy="no-referrer" srcdoc="'
            + srcdoc.replace("&", "&amp;").replace('"', "&quot;") + '"></iframe>'
            '<script>addEventListener("message",function(e){var d=e.data||{};'
            'if(d.agenticos==="report"){document.body.setAttribute("data-report",JSON.stringify(d));}});</script>'
            "</body></html>")


def render_pngs(visuals: list[Visual]) -> list[bytes | None]:
    """One PNG per visual (None where that drawing could not be rendered), in one browser."""
    if not visuals:
        return []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise RendererMissing("playwright is not installed") from None
    if not os.path.exists(CHROMIUM):
        raise RendererMissing(f"no chromium at {CHROMIUM}")
    out: list[bytes | None] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for visual in visuals:
                try:
                    out.append(_render(browser, visual))
                except Exception as exc:  # one broken drawing never stops the others
                    logger.info("visual %s could not be rendered (%s)", visual.visual_id, exc)
                    out.append(None)
        finally:
            browser.close()
    return out


def _render(browser: Any, visual: Visual) -> bytes:
    page_html = host_page(visual)
    tiles = maps.tile_origin()
    context = browser.new_context(viewport={"width": WIDTH, "height": 800}, device_scale_factor=1,
                                  service_workers="block", accept_downloads=False)
    try:
        def answer(route: Any) -> None:
            url = route.request.url
            if url in (HOST, HOST + "/"):
                route.fulfill(status=200, content_type="text/html; charset=utf-8", body=page_html)
            elif url.startswith(HOST + LIBRARY_PATH):
                name = url[len(HOST + LIBRARY_PATH):].split("?")[0].split("#")[0]
                if name not in LIBRARY_FILES:
                    route.abort("blockedbyclient")
                    return
                route.fulfill(status=200, path=str(LIBRARY_DIR / name),
                              content_type="text/css" if name.endswith(".css") else "text/javascript",
                              headers={"Access-Control-Allow-Origin": "*"})
            elif tiles and url.startswith(tiles + "/") and route.request.method == "GET":
                # Fetched here, not by the page (chromium refuses a sandboxed frame's request once routed on).
                try:
                    tile = route.fetch(timeout=TILE_TIMEOUT_MS, max_redirects=0)
                except Exception:  # the tile server is down or slow: a failed load, as in the console
                    route.abort("failed")
                    return
                route.fulfill(response=tile)
            else:
                route.abort("blockedbyclient")

        context.route("**/*", answer)
        page = context.new_page()
        page.goto(HOST + "/", wait_until="load", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_selector("body[data-report]", state="attached", timeout=RENDER_TIMEOUT_MS)
        report = json.loads(page.get_attribute("body", "data-report") or "{}")
        height = max(MIN_HEIGHT, min(MAX_HEIGHT, int(report.get("height") or 0)))
        page.set_viewport_size({"width": WIDTH, "height": height})
        page.eval_on_selector("#visual", f"el => {{ el.style.height = '{height}px'; }}")
        if report.get("errors"):
            logger.info("visual %s rendered with problems: %s", visual.visual_id, report["errors"])
        return page.locator("#visual").screenshot(type="png", timeout=RENDER_TIMEOUT_MS)
    finally:
        context.close()


# ------------------------------------------------------------------ delivery


def deliver(client: PlatformClient, chat_id: str, reply_to: str, run_id: Any) -> list[str]:
    """Post this run's visuals in the thread; what each became ("image" | "link" | "lost")."""
    from channelbots.approvals import run_url

    visuals = visuals_of_run(run_id)
    if not visuals:
        return []
    url = run_url(run_id)
    shown = visuals[:MAX_VISUALS]
    try:
        pngs = render_pngs(shown)
    except RendererMissing as exc:
        logger.info("bot %s: visuals as links (%s)", client.bot.pk, exc)
        pngs = [None] * len(shown)
    except Exception:
        logger.exception("bot %s: the visuals could not be rendered; posting their links", client.bot.pk)
        pngs = [None] * len(shown)
    outcomes = [_deliver_one(client, chat_id, reply_to, visual, png, index, url)
                for index, (visual, png) in enumerate(zip(shown, pngs, strict=True))]
    if len(visuals) > MAX_VISUALS:
        names = ", ".join(v.title or "untitled" for v in visuals[MAX_VISUALS:])
        try:
            client.post(chat_id, f"{len(visuals) - MAX_VISUALS} more drawings are in the conversation: {names} — "
                                 f"{url}", reply_to=reply_to)
        except PlatformError as exc:
            logger.warning("bot %s: could not name the drawings left out (%s)", client.bot.pk, exc)
    return outcomes


def _deliver_one(client: PlatformClient, chat_id: str, reply_to: str, visual: Visual, png: bytes | None,
                 index: int, url: str) -> str:
    if png is not None:
        try:
            client.upload(chat_id, file_name(visual, index), png, "image/png", reply_to=reply_to)
            return "image"
        except PlatformError as exc:
            logger.info("bot %s: visual %d as its link (%s)", client.bot.pk, index + 1, exc)
    try:
        client.post(chat_id, link_text(visual, url), reply_to=reply_to)
        return "link"
    except PlatformError as exc:
        logger.warning("bot %s: visual %d could not be posted at all (%s)", client.bot.pk, index + 1, exc)
        return "lost"
