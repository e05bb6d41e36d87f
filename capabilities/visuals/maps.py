"""Maps in a drawing: on the tile server `VISUAL_MAP_TILES` names (a URL template such as
https://tile.example.org/{z}/{x}/{y}.png), or — in a deployment that names none — an outline of the stops.

The sandbox lets exactly that template's origin into `img-src` (capabilities/visuals/frame.py, and the
console's frame policy in console/static/console/visuals.js), nothing else; the capability's instructions tell the
model which case holds, so it never promises streets it cannot show.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

PLACEHOLDERS = ("{z}", "{x}", "{y}")


def tile_template() -> str:
    """The configured template when usable: http(s), one literal host (no {s} subdomains, which would name
    several), and {z} {x} {y} in the path; "" otherwise."""
    template = str(getattr(settings, "VISUAL_MAP_TILES", "") or "").strip()
    if not template or any(p not in template for p in PLACEHOLDERS):
        return ""
    parts = urlsplit(template)
    if (parts.scheme not in ("http", "https") or not parts.hostname or "{" in parts.netloc or "@" in parts.netloc
            or any(c in template for c in "'\"<> ")):
        return ""
    return template


def tile_origin() -> str:
    """The one origin the sandbox admits for map tiles ("" when no tile server is configured)."""
    template = tile_template()
    if not template:
        return ""
    parts = urlsplit(template)
    return f"{parts.scheme}://{parts.netloc}"


def instructions() -> str:
    """What the model is told about maps in this deployment."""
    template = tile_template()
    if template:
        return (f"Maps: this deployment's tile server is {template} — in an html drawing use Leaflet "
                f"(/apps/lib/leaflet.js and leaflet.css) with L.tileLayer({template!r}); no other tile or image "
                "host loads.")
    return ("Maps: this deployment has no tile server, so draw a map as an SVG outline of the stops (numbered "
            "points in order, the line between them, a label each) rather than promising streets.")
