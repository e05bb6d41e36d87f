"""Maps in drawings: with VISUAL_MAP_TILES set (a URL template), the visuals' sandbox admits exactly that tile
origin for images and the capability tells the model to draw on it; unset, nothing but the library bundle loads
and the model is told to draw an outline of the stops. The tile host is not "another site" to `draw`."""

from __future__ import annotations

import io
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from capabilities.visuals import capability, frame, maps
from channelbots import visuals_out

ORIGIN = "https://agenticos.example"
TILES = "https://tile.example.org/{z}/{x}/{y}.png"


def img_src(policy: str) -> str:
    return next(part for part in policy.split("; ") if part.startswith("img-src "))


@pytest.mark.parametrize("template", [
    "",
    "https://tile.example.org/tiles.png",                   # no {z} {x} {y}
    "https://{s}.tile.example.org/{z}/{x}/{y}.png",         # several hosts
    "ftp://tile.example.org/{z}/{x}/{y}.png",
    "https://user:pw@tile.example.org/{z}/{x}/{y}.png",
    "https://tile.example.org/{z}/{x}/{y}.png' ; script-src *",
    "/tiles/{z}/{x}/{y}.png",                                # no host
])
def test_an_unusable_template_admits_no_tile_host(settings, template):
    settings.VISUAL_MAP_TILES = template
    assert maps.tile_template() == "" and maps.tile_origin() == ""
    assert img_src(frame.policy(ORIGIN)) == f"img-src data: blob: {ORIGIN}/apps/lib/"
    assert "outline of the stops" in maps.instructions()


def test_the_frame_policy_admits_exactly_the_tile_origin(settings):
    settings.VISUAL_MAP_TILES = "https://tile.example.org:8443/osm/{z}/{x}/{y}.png"
    assert maps.tile_origin() == "https://tile.example.org:8443"
    policy = frame.policy(ORIGIN)
    assert img_src(policy) == f"img-src data: blob: {ORIGIN}/apps/lib/ https://tile.example.org:8443"
    assert "connect-src 'none'" in policy and "default-src 'none'" in policy
    assert policy.count("tile.example.org") == 1  # images only: no script, style or connect from it


def test_the_instructions_say_which_case_holds(settings):
    settings.VISUAL_MAP_TILES = ""
    unset = maps.instructions()
    assert "no tile server" in unset and "outline of the stops" in unset
    settings.VISUAL_MAP_TILES = TILES
    named = maps.instructions()
    assert TILES in named and "L.tileLayer" in named and "outline" not in named


def test_a_drawing_loading_from_the_tile_host_is_no_retry_and_another_host_still_is(settings):
    drawing = '<img src="https://tile.example.org/3/4/2.png"><img src="https://evil.example.com/x.png">'
    settings.VISUAL_MAP_TILES = ""
    assert "https://tile.example.org/3/4/2.png" in capability._remote(drawing)
    settings.VISUAL_MAP_TILES = TILES
    assert capability._remote(drawing) == "https://evil.example.com/x.png"
    assert capability._remote('<img src="https://tile.example.org/3/4/2.png">') == ""
    # A look-alike host is not the tile host.
    assert capability._remote('<img src="https://tile.example.org.evil.com/1.png">') != ""


# ------------------------------------------------------------------ rendered (channels' PNG), real chromium

needs_chromium = pytest.mark.skipif(not os.path.exists(visuals_out.CHROMIUM),
                                    reason="Debian chromium is not installed (make browser)")


def red_tile() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def tile_servers():
    """Two local servers serving a red tile and recording requests: the tile host and some other host."""
    tile = red_tile()
    servers = []
    for _ in range(2):
        hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            seen = hits

            def do_GET(self):  # noqa: N802
                self.seen.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(tile)))
                self.end_headers()
                self.wfile.write(tile)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((server, f"http://127.0.0.1:{server.server_address[1]}", hits))
    try:
        yield [(url, hits) for _, url, hits in servers]
    finally:
        for server, _, _ in servers:
            server.shutdown()
            server.server_close()


def pixel(png: bytes, x: int, y: int) -> tuple[int, int, int]:
    from matplotlib.image import imread

    r, g, b = imread(io.BytesIO(png), format="png")[y, x][:3]
    return round(float(r) * 255), round(float(g) * 255), round(float(b) * 255)


def map_drawing(tiles_url: str, other_url: str) -> visuals_out.Visual:
    content = (f'<div style="display:flex;gap:8px"><img src="{tiles_url}/3/4/2.png" width="64" height="64">'
               f'<img src="{other_url}/3/4/2.png" width="64" height="64" style="background:#fff"></div>')
    return visuals_out.Visual("m1", "html", "Route", content, {})


@needs_chromium
def test_with_tiles_set_the_tile_host_loads_and_no_other(settings, tile_servers):
    (tiles_url, tile_hits), (other_url, other_hits) = tile_servers
    settings.VISUAL_MAP_TILES = tiles_url + "/{z}/{x}/{y}.png"
    png = visuals_out.render_pngs([map_drawing(tiles_url, other_url)])[0]
    assert png is not None
    assert tile_hits == ["/3/4/2.png"] and other_hits == []
    assert pixel(png, 20, 20) == (200, 0, 0)
    assert pixel(png, 72 + 20, 20) != (200, 0, 0)


@needs_chromium
def test_without_tiles_no_tile_loads(settings, tile_servers):
    (tiles_url, tile_hits), (other_url, other_hits) = tile_servers
    settings.VISUAL_MAP_TILES = ""
    png = visuals_out.render_pngs([map_drawing(tiles_url, other_url)])[0]
    assert png is not None
    assert tile_hits == [] and other_hits == []
    assert pixel(png, 20, 20) != (200, 0, 0)


@pytest.mark.django_db
def test_the_capability_s_instructions_carry_the_map_case(settings):
    from types import SimpleNamespace

    from asgiref.sync import async_to_sync

    listing = capability.EarlierVisuals().get_instructions()
    ctx = SimpleNamespace(deps=SimpleNamespace(organization_id=None, conversation_id=None))
    settings.VISUAL_MAP_TILES = ""
    assert "outline of the stops" in async_to_sync(listing)(ctx)
    settings.VISUAL_MAP_TILES = TILES
    text = async_to_sync(listing)(ctx)
    assert f"L.tileLayer({TILES!r})" in text and "outline" not in text


@pytest.mark.django_db
def test_web_chat_tells_its_frame_policy_the_tile_origin_and_nothing_when_unset(settings, client, org, owner):
    from agenticos.tenancy import SESSION_KEY

    client.force_login(owner)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    settings.VISUAL_MAP_TILES = "https://tiles.example.org/{z}/{x}/{y}.png"
    page = client.get("/chat/").content.decode()
    assert '<meta name="agenticos-map-tiles" content="https://tiles.example.org">' in page
    settings.VISUAL_MAP_TILES = ""
    assert '<meta name="agenticos-map-tiles" content="">' in client.get("/chat/").content.decode()
