"""The opaque-origin sandbox applications (and visuals) run in.

A page is served with `Content-Security-Policy: sandbox allow-scripts` (an opaque origin even when the link
is opened on its own, not only inside the console's `<iframe sandbox="allow-scripts">`), `connect-src 'none'`
(no fetch, XHR, WebSocket or beacon), and nothing remote but the deployment's own library bundle, served from
a path of its own (LIBRARY_PATH, served by console/applications.py `app_library` with
`Access-Control-Allow-Origin: *`: an opaque origin loads ES modules — three.js — in CORS mode, and /static/
answers without that header): Chart.js, Mermaid, three.js, Leaflet, marked, DOMPurify — files in static/vendor/lib/,
versions and licenses in static/vendor/VERSIONS.txt). Images only inline (data:/blob:).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

# The console route `console-apps:library` (console/urls_apps.py); a test checks they agree.
LIBRARY_PATH = "/apps/lib/"
LIBRARY_DIR = Path(settings.BASE_DIR) / "static" / "vendor" / "lib"
FRAME_SCRIPT = "agenticos-frame.js"
LIBRARIES = {
    "chart.js": "chart.umd.min.js",
    "mermaid": "mermaid.min.js",
    "three": "three.module.min.js",
    "leaflet": "leaflet.js",
    "leaflet.css": "leaflet.css",
    "marked": "marked.umd.js",
    "dompurify": "purify.min.js",
}
LIBRARY_FILES = frozenset([*LIBRARIES.values(), FRAME_SCRIPT])


def library_source(origin: str) -> str:
    """The one remote source a page may load from: this deployment's library path, by absolute origin (an
    opaque origin has no 'self' to name it by)."""
    return f"{origin.rstrip('/')}{LIBRARY_PATH}"


def policy(origin: str, *, header: bool = True) -> str:
    lib = library_source(origin)
    parts = [
        "default-src 'none'",
        f"script-src 'unsafe-inline' {lib}",
        f"style-src 'unsafe-inline' {lib}",
        f"img-src data: blob: {lib}",
        "font-src data:",
        "connect-src 'none'",
        "form-action 'none'",
        "base-uri 'none'",
    ]
    if header:
        # A meta policy cannot sandbox; the header makes the link itself an opaque origin.
        parts.insert(0, "sandbox allow-scripts")
    return "; ".join(parts)


def library_tags() -> str:
    return "\n".join(f'<!-- {name}: {LIBRARY_PATH}{file} -->' for name, file in LIBRARIES.items())


def markdown_document(text: str, title: str) -> str:
    """A Markdown page drawn in its own sandbox by the vendored marked + DOMPurify."""
    source = json.dumps(text).replace("<", "\\u003c")
    safe_title = json.dumps(title).replace("<", "\\u003c")
    return (
        "<!doctype html><html><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<style>body{font:16px/1.55 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d2433}"
        "table{border-collapse:collapse}td,th{border:1px solid #d7dce5;padding:.3rem .6rem}pre{overflow:auto;"
        "background:#f5f7fa;padding:.8rem}</style>"
        f"<script src=\"{LIBRARY_PATH}marked.umd.js\"></script><script src=\"{LIBRARY_PATH}purify.min.js\"></script>"
        "</head><body><main id=\"page\"></main><script>"
        f"document.title={safe_title};"
        f"document.getElementById('page').innerHTML=DOMPurify.sanitize(marked.parse({source}));"
        "</script></body></html>"
    )


def document(fmt: str, text: str, title: str) -> str:
    return markdown_document(text, title) if fmt == "markdown" else text
