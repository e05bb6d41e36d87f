"""A visual's sandboxed document, built on the server: the twin of `documentFor` in console/static/console/visuals.js
(completed calls only), used where a drawing is rendered outside the console — channels post it as a PNG
(channelbots/visuals_out.py).

The document carries the sandbox's meta policy: `connect-src 'none'`, scripts inline or from the library
bundle, images inline (data:/blob:), from the bundle, or — for maps — from the one tile host `VISUAL_MAP_TILES`
names (capabilities/visuals/maps.py). It loads `agenticos-frame.js` first, which posts `{agenticos: "report",
errors, height}` to its parent once the drawing has run.
"""

from __future__ import annotations

import html

from capabilities.artifacts.sandbox import FRAME_SCRIPT, LIBRARY_PATH
from capabilities.visuals import maps
from capabilities.visuals.capability import PLACEHOLDER_RE

STYLE = "html,body{margin:0;background:#fff;font:15px/1.5 system-ui,sans-serif}svg{max-width:100%;height:auto}"


def policy(origin: str) -> str:
    """The frame's Content-Security-Policy (meta: a meta policy cannot sandbox; the iframe attribute does)."""
    lib = f"{origin.rstrip('/')}{LIBRARY_PATH}"
    tiles = maps.tile_origin()
    return "; ".join([
        "default-src 'none'",
        f"script-src 'unsafe-inline' {lib}",
        f"style-src 'unsafe-inline' {lib}",
        f"img-src data: blob: {lib}" + (f" {tiles}" if tiles else ""),
        "font-src data:",
        "connect-src 'none'",
        "form-action 'none'",
        "base-uri 'none'",
    ])


def with_images(content: str, images: dict[str, str]) -> str:
    return PLACEHOLDER_RE.sub(lambda m: images.get(m.group(1), ""), content)


def document(kind: str, content: str, images: dict[str, str], origin: str) -> str:
    head = ('<!doctype html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy(origin), quote=True)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{STYLE}</style>"
            f'<script src="{LIBRARY_PATH}{FRAME_SCRIPT}"></script>')
    body = with_images(content, images)
    if kind == "mermaid":
        return (head + f'<script src="{LIBRARY_PATH}mermaid.min.js"></script></head><body><pre class="mermaid">'
                + html.escape(body, quote=False)
                + '</pre><script>mermaid.initialize({startOnLoad:false,securityLevel:"strict"});'
                  'mermaid.run({querySelector:".mermaid"});</script></body></html>')
    return head + "</head><body>" + body + "</body></html>"
