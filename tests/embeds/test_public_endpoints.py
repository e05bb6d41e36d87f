"""Public HTTP endpoints (no session): widget.js, the hosted page and its config, the logo, uploads."""

from __future__ import annotations

import gzip
import io
import re

import pytest
from django.test import Client

from embeds import files, views
from embeds.models import Embed, EmbedFile
from tests import factories
from tests.embeds.conftest import FRONTEND

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
VISITOR = "0123456789abcdef" * 2


@pytest.fixture
def client():
    return Client(REMOTE_ADDR="203.0.113.50")


# ------------------------------------------------------------------ widget.js


def test_widget_js_is_a_dependency_free_script_of_at_most_12_kb_gzipped(client, widget):
    response = client.get(f"/api/v1/embed/{widget.public_key}/widget.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    body = response.content
    size = len(gzip.compress(body, compresslevel=9))
    assert size <= 12 * 1024, f"widget.js is {size} bytes gzipped"
    text = body.decode()
    assert "import " not in text and "require(" not in text
    assert "AgenticOSContext" in text and "AgenticOSToken" in text
    assert widget.public_key in text
    assert "Set-Cookie" not in response


def test_widget_js_draws_turns_with_the_one_turn_renderer(client, widget):
    # What a visitor may see is filtered on the server (embeds/frames.py); the widget hands every turn frame to
    # the renderer every surface shares (console/static/console/turn.js) and handles only its socket's own frames.
    text = client.get(f"/api/v1/embed/{widget.public_key}/widget.js").content.decode()
    handled = set(re.findall(r'f\.type === "([a-z_]+)"', text))
    # feedback_saved: the socket's answer to a visitor's 👍/👎 (the widget presses the button it names).
    assert handled == {"ready", "history", "error", "feedback_saved"}
    assert "live.apply(turns, f)" in text and '"console/turn.js"' in text


def test_widget_js_for_a_page_or_unknown_key_is_not_served(client, page):
    assert client.get(f"/api/v1/embed/{page.public_key}/widget.js").status_code == 404
    assert client.get("/api/v1/embed/nope/widget.js").status_code == 404


def test_widget_js_has_its_own_per_address_counter(client, widget, settings):
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 2
    url = f"/api/v1/embed/{widget.public_key}/widget.js"
    assert client.get(url).status_code == 200
    assert client.get(url).status_code == 200
    limited = client.get(url)
    assert limited.status_code == 429 and int(limited["Retry-After"]) == 59  # the test's clock: 1 s into it
    assert Client(REMOTE_ADDR="203.0.113.51").get(url).status_code == 200
    # The socket admission counter for this address is untouched by script loads.
    from agenticos import ratelimit

    assert ratelimit.hit("embed-ws", "203.0.113.50", 2)[0]


# ------------------------------------------------------------------ hosted page


def test_the_hosted_page_is_noindex_sets_no_cookie_and_names_the_agent(client, page):
    response = client.get(f"/e/{page.public_key}")
    assert response.status_code == 200
    html = response.content.decode()
    assert response["X-Robots-Tag"].startswith("noindex")
    assert '<meta name="robots" content="noindex' in html
    assert not response.cookies
    assert "Shop Helper" in html
    assert "cookie" not in html.lower()
    assert "New conversation" in html  # the new-thread button is on by default
    assert 'id="mic"' not in html and 'id="file"' not in html  # microphone and uploads are off by default


def test_the_welcome_is_shown_but_is_never_part_of_a_run(client, page):
    Embed.objects.filter(pk=page.pk).update(welcome="**Welcome** to support")
    html = client.get(f"/e/{page.public_key}").content.decode()
    assert "**Welcome** to support" in html  # rendered as Markdown by the page, from its config


def test_a_widget_key_or_unknown_key_has_no_hosted_page(client, widget):
    assert client.get(f"/e/{widget.public_key}").status_code == 404
    assert client.get("/e/unknown").status_code == 404


def test_one_address_spending_its_page_loads_does_not_close_the_link_for_anybody(page, agent, settings,
                                                                                  ratelimit_clock):
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 2
    route = "/e/{key}"
    url = route.format(key=page.public_key)
    stranger = Client(REMOTE_ADDR="10.0.0.1")
    assert [stranger.get(url).status_code for _ in range(12)] == [200, 200] + [429] * 10
    limited = stranger.get(url)
    assert int(limited["Retry-After"]) == 59
    # Everybody else still gets the page: the stranger's own counter refused them, not the link's.
    assert Client(REMOTE_ADDR="10.0.0.2").get(url).status_code == 200
    assert Client(REMOTE_ADDR="10.0.0.3").get(url).status_code == 200
    other = factories.embed(agent, kind="page")
    assert stranger.get(route.format(key=other.public_key)).status_code == 200
    ratelimit_clock.advance(60)
    assert stranger.get(url).status_code == 200  # the next window


def test_a_page_load_counts_a_visitor_key_across_addresses_too(page, settings, ratelimit_clock):
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 2
    url = f"/e/{page.public_key}"
    # A new visitor key per request does not escape the address's count…
    one_address = Client(REMOTE_ADDR="10.0.1.1")
    assert [one_address.get(url, {"visitor": v * 32}).status_code for v in "abc"] == [200, 200, 429]
    # …and moving address does not escape the visitor's.
    visitor = {"visitor": "d" * 32}
    assert [Client(REMOTE_ADDR=f"10.0.2.{i}").get(url, visitor).status_code for i in range(3)] == [200, 200, 429]
    # A key of any other shape is no visitor key: only the address counts.
    assert Client(REMOTE_ADDR="10.0.3.1").get(url, {"visitor": "not-a-key"}).status_code == 200


def test_the_per_page_ceiling_holds_and_only_admitted_loads_spend_it(page, settings, ratelimit_clock):
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 2
    settings.RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE = 4
    url = f"/e/{page.public_key}"
    stranger = Client(REMOTE_ADDR="10.0.4.1")
    assert [stranger.get(url).status_code for _ in range(20)] == [200, 200] + [429] * 18
    # The stranger's eighteen refusals spent nothing of the page's ceiling: two of four remain.
    assert Client(REMOTE_ADDR="10.0.4.2").get(url).status_code == 200
    assert Client(REMOTE_ADDR="10.0.4.3").get(url).status_code == 200
    ceiling = Client(REMOTE_ADDR="10.0.4.4").get(url)
    assert ceiling.status_code == 429 and ceiling["Retry-After"]


def test_the_page_config_is_counted_per_page_not_per_address(page, agent, settings, ratelimit_clock):
    """Spec: "la config de una página alojada, por página" — a frontend server asks for it on behalf of every
    visitor, so one server's address is everybody: its requests for a page share that page's count (not its
    address's across pages), and the visitors' own page loads spend none of it."""
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 3
    url = f"/api/v1/embed/{page.public_key}/config"
    frontend = Client(REMOTE_ADDR="172.18.0.4")  # the frontend server's container
    assert [frontend.get(url, {"visitor": v * 32}).status_code for v in "ab"] == [200, 200]
    # Another caller spends the same page's count: it is the page's, whoever asks.
    assert Client(REMOTE_ADDR="10.0.5.1").get(url).status_code == 200
    refused = frontend.get(url)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert 0 < int(refused["Retry-After"]) <= 60
    # The same server asking for another page has that page's whole count.
    other = factories.embed(agent, kind="page")
    other_url = f"/api/v1/embed/{other.public_key}/config"
    assert [frontend.get(other_url).status_code for _ in range(4)] == [200, 200, 200, 429]
    # Browsers loading the page itself are counted apart (per address and visitor): still served.
    assert Client(REMOTE_ADDR="10.0.5.2").get(f"/e/{page.public_key}").status_code == 200
    ratelimit_clock.advance(60)
    assert frontend.get(url).status_code == 200  # the next window


def test_the_default_page_ceiling_is_far_above_one_addresses_limit():
    from config import settings as defaults  # the module's values, not this suite's overrides

    assert defaults.RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE >= 50 * defaults.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE


def test_the_page_config_names_only_url_safe_variables(client, page):
    Embed.objects.filter(pk=page.pk).update(
        variables=[
            {"name": "plan", "required": False, "description": "", "url_safe": True},
            {"name": "tier", "required": False, "description": "", "url_safe": False},
        ]
    )
    config = client.get(f"/api/v1/embed/{page.public_key}/config").json()
    assert config["urlVariables"] == ["plan"]
    assert config["logoUrl"] is None  # an agent without an avatar: nothing instead of a broken image


# ------------------------------------------------------------------ logo


def _store_logo(page, data: bytes, ext: str) -> None:
    path = files.store(files.logo_path_for(page.pk, ext), data)
    Embed.objects.filter(pk=page.pk).update(logo_path=path, logo_source="uploaded")


def test_the_logo_is_served_with_its_sniffed_type_from_our_origin(client, page):
    _store_logo(page, PNG, "png")
    response = client.get(f"/api/v1/embed/{page.public_key}/logo")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"/api/v1/embed/{page.public_key}/config").json()["logoUrl"].endswith("/logo")


@pytest.mark.parametrize(
    "data", [b"<html><script>alert(1)</script></html>", b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>']
)
def test_a_stored_html_or_svg_is_served_as_nothing(client, page, data):
    _store_logo(page, data, "png")  # even under an image name, written by some older route
    assert client.get(f"/api/v1/embed/{page.public_key}/logo").status_code == 404
    assert client.get(f"/api/v1/embed/{page.public_key}/config").json()["logoUrl"] is None


# ------------------------------------------------------------------ uploads


@pytest.fixture
def upload_page(agent, builder):
    return factories.embed(agent, kind="page", created_by=builder, allow_uploads=True)


def _upload(client, page, data: bytes, name: str = "notes.txt", mime: str = "text/plain", visitor: str = VISITOR):
    handle = io.BytesIO(data)
    handle.name = name
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(
        f"/api/v1/embed/{page.public_key}/files",
        {"file": SimpleUploadedFile(name, data, content_type=mime)},
        HTTP_ORIGIN=FRONTEND,
        HTTP_X_VISITOR=visitor,
    )


def test_a_visitor_uploads_a_file_owned_by_the_pages_publisher(client, upload_page, builder):
    response = _upload(client, upload_page, b"order 1234, blue, size M")
    assert response.status_code == 201, response.content
    row = EmbedFile.objects.get(pk=response.json()["id"])
    assert row.user_id == builder.pk and row.embed_id == upload_page.pk and row.mime == "text/plain"
    assert row.attached_at is None


def test_uploads_are_off_by_default_and_a_widget_key_is_not_available(client, page, widget):
    assert _upload(client, page, b"x").status_code == 404
    assert _upload(client, widget, b"x").status_code == 404


def test_a_page_whose_publisher_has_no_account_refuses_uploads(client, upload_page, builder):
    builder.delete()
    response = _upload(client, upload_page, b"hello")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_available"


def test_a_type_outside_the_allow_list_is_refused_whatever_it_claims(client, upload_page):
    assert _upload(client, upload_page, b"<html><script>x</script>", name="a.png", mime="image/png").status_code == 415
    assert _upload(client, upload_page, b"MZ\x90\x00binary", name="a.txt", mime="text/plain").status_code == 415


def test_an_oversized_body_is_refused_with_413_before_it_is_read(client, upload_page, settings):
    settings.EMBED_MAX_UPLOAD_SIZE_MB = 1
    # Declares 50 MB but carries a few bytes: reading it would fail, so a 413 proves it was not read.
    response = client.generic(
        "POST",
        f"/api/v1/embed/{upload_page.public_key}/files",
        b"--x\r\n",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(50 * 1024 * 1024),
        HTTP_ORIGIN=FRONTEND,
        HTTP_X_VISITOR=VISITOR,
    )
    assert response.status_code == 413


def test_the_embed_ceiling_never_exceeds_the_chat_ceiling(settings):
    from embeds.api import max_embed_upload_bytes

    settings.EMBED_MAX_UPLOAD_SIZE_MB = 50
    settings.CHAT_MAX_UPLOAD_SIZE_MB = 10
    assert max_embed_upload_bytes() == 10 * 1024 * 1024


def test_a_file_over_the_embed_ceiling_is_refused(client, upload_page, settings):
    settings.EMBED_MAX_UPLOAD_SIZE_MB = 0.01  # about 10 KB
    response = _upload(client, upload_page, b"a" * 60_000)
    assert response.status_code == 413
    assert not EmbedFile.objects.exists()


def test_uploads_are_limited_per_address_and_per_visitor(upload_page, settings):
    settings.RATE_LIMIT_EMBED_UPLOAD_PER_MINUTE = 2
    one_address = Client(REMOTE_ADDR="198.51.100.20")
    # Varying the visitor key does not escape the address limit…
    assert _upload(one_address, upload_page, b"a", visitor="a" * 32).status_code == 201
    assert _upload(one_address, upload_page, b"b", visitor="b" * 32).status_code == 201
    assert _upload(one_address, upload_page, b"c", visitor="c" * 32).status_code == 429
    # …and changing address does not escape the visitor limit.
    visitor = "d" * 32
    assert _upload(Client(REMOTE_ADDR="198.51.100.21"), upload_page, b"d", visitor=visitor).status_code == 201
    assert _upload(Client(REMOTE_ADDR="198.51.100.22"), upload_page, b"e", visitor=visitor).status_code == 201
    assert _upload(Client(REMOTE_ADDR="198.51.100.23"), upload_page, b"f", visitor=visitor).status_code == 429


def test_an_upload_from_another_origin_or_without_a_visitor_key_is_refused(client, upload_page):
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = f"/api/v1/embed/{upload_page.public_key}/files"
    foreign = client.post(url, {"file": SimpleUploadedFile("a.txt", b"x", "text/plain")},
                          HTTP_ORIGIN="https://evil.example", HTTP_X_VISITOR=VISITOR)
    assert foreign.status_code == 404
    assert _upload(client, upload_page, b"x", visitor="NOT-HEX").status_code == 400


def test_the_logo_sniffer_knows_exactly_four_image_types():
    assert files.sniff_image(PNG) == ("image/png", "png")
    assert files.sniff_image(b"\xff\xd8\xff\xe0....") == ("image/jpeg", "jpg")
    assert files.sniff_image(b"GIF89a....") == ("image/gif", "gif")
    assert files.sniff_image(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == ("image/webp", "webp")
    assert files.sniff_image(b"<svg") is None and files.sniff_image(b"BM....") is None


def test_the_static_clients_exist_and_are_served_from_this_app():
    assert "localStorage" in views.static_text("page.js")
    assert "AgenticTurn" in views.static_text("page.js") and "AgenticTurn" in views.static_text("widget.js")


def test_a_visitors_file_name_cannot_name_a_path(client, upload_page):
    response = _upload(client, upload_page, b"hello", name="../../etc/passwd.txt")
    assert response.status_code == 201
    row = EmbedFile.objects.get(pk=response.json()["id"])
    assert row.name == "passwd.txt" and row.path.startswith(f"embeds/{upload_page.pk}/files/") and ".." not in row.path
