"""An embed's console page: every field the API has, saved through embeds.services and seen by the real served
widget script, hosted page and page config; the JWT signing secret shown once and rotated; visitor variables;
the live preview; the hosted page's logo; pause / resume; and the API's permissions on every route (a builder
without edit access sees it read-only, a viewer is refused as the API refuses them, an outsider gets 404)."""

from __future__ import annotations

import time
from decimal import Decimal

import jwt
import pytest

from agenticos.models import AuditEvent, Secret
from embeds import services
from embeds.models import Embed
from tests import factories

pytestmark = pytest.mark.django_db
FRONTEND = "https://agents.example.com"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")


@pytest.fixture(autouse=True)
def _frontend(settings):
    settings.FRONTEND_URL = FRONTEND


@pytest.fixture
def shop(org, builder):
    """An agent the builder owns (edit access), published."""
    return factories.published_agent(org, builder, name="Shop")


@pytest.fixture
def widget(shop, builder):
    return factories.embed(shop, kind="widget", created_by=builder, name="Site")


@pytest.fixture
def hosted(shop, builder):
    return factories.embed(shop, kind="page", created_by=builder)


def url(embed: Embed, tail: str = "") -> str:
    return f"/agents/{embed.agent_id}/embeds/{embed.pk}/{tail}"


def widget_form(**changes) -> dict:
    form = {"name": "Site", "environment": "production", "allowed_origins": "https://shop.example.com",
            "auth_mode": "public", "title": "", "subtitle": "", "greeting": "", "empty_text": "", "launcher_text": "",
            "accent_color": "#4f46e5", "corner": "bottom-right", "context_note": "", "rate_limit_per_minute": "20",
            "monthly_budget_usd": ""}
    form.update(changes)
    return form


def page_form(**changes) -> dict:
    form = {"name": "", "environment": "production", "title": "", "welcome": "", "accent_color": "#4f46e5",
            "logo_source": "agent", "allow_new_thread": "on", "show_tool_steps": "on", "context_note": "",
            "rate_limit_per_minute": "20", "monthly_budget_usd": ""}
    form.update(changes)
    return form


def token(secret: str, sub: str = "visitor-1") -> str:
    return jwt.encode({"sub": sub, "iat": int(time.time())}, secret, algorithm="HS256")


def accepts(embed: Embed, signed: str) -> bool:
    try:
        services.verify_token(Embed.objects.select_related("jwt_secret").get(pk=embed.pk), signed)
    except services.Refused:
        return False
    return True


# ------------------------------------------------------------------ appearance reaches the real surfaces


def test_a_builder_changes_the_widgets_looks_and_the_served_script_carries_them(client_as, client, org, builder,
                                                                                 widget):
    browser = client_as(builder, org)
    page = browser.get(url(widget)).content.decode()
    assert 'name="title"' in page and 'name="launcher_text"' in page and "data-embed-preview" in page
    response = browser.post(url(widget), widget_form(
        title="Ask the shop", subtitle="We answer in minutes", greeting="Hi! **Welcome**.", empty_text="Your question",
        launcher_text="Help", accent_color="#0E7490", corner="bottom-left",
        allowed_origins="https://shop.example.com\nhttps://www.shop.example.com/"))
    assert response.status_code == 302 and response["Location"] == url(widget)
    widget.refresh_from_db()
    assert (widget.title, widget.corner, widget.accent_color) == ("Ask the shop", "bottom-left", "#0E7490")
    assert widget.allowed_origins == ["https://shop.example.com", "https://www.shop.example.com"]
    assert AuditEvent.objects.filter(organization=org, action="embed.update", target_id=str(widget.pk)).exists()

    script = client.get(f"/api/v1/embed/{widget.public_key}/widget.js").content.decode()
    for expected in ('"title": "Ask the shop"', '"subtitle": "We answer in minutes"', '"launcherText": "Help"',
                     '"emptyText": "Your question"', '"accent": "#0E7490"', '"corner": "bottom-left"',
                     '"greeting": "Hi! **Welcome**."'):
        assert expected in script


def test_a_hosted_pages_title_welcome_accent_and_toggles_reach_the_page_and_its_config(client_as, client, org,
                                                                                      builder, hosted):
    browser = client_as(builder, org)
    response = browser.post(url(hosted), page_form(
        title="Shop help", welcome="Ask about **orders**.", accent_color="#BE123C", logo_source="none",
        allow_new_thread="", allow_microphone="on", allow_uploads="on", show_tool_steps="on",
        show_tool_results="on", show_thinking="on"))
    assert response.status_code == 302
    config = client.get(f"/api/v1/embed/{hosted.public_key}/config").json()
    assert (config["title"], config["welcome"], config["accent"]) == ("Shop help", "Ask about **orders**.", "#BE123C")
    assert config["allowNewThread"] is False and config["allowMicrophone"] is True and config["allowUploads"] is True
    assert config["showToolSteps"] and config["showToolResults"] and config["showThinking"]
    assert config["logoUrl"] is None
    html = client.get(f"/e/{hosted.public_key}").content.decode()
    assert "<title>Shop help</title>" in html and "--accent: #BE123C" in html and 'id="new-thread"' not in html


def test_the_page_refuses_results_without_steps_in_place_and_saves_nothing(client_as, org, builder, hosted):
    response = client_as(builder, org).post(url(hosted), page_form(title="Changed", show_tool_steps="",
                                                                   show_tool_results="on"))
    assert response.status_code == 422
    page = response.content.decode()
    assert 'data-field-error="show_tool_results"' in page and "needs the steps shown" in page
    assert 'value="Changed"' in page  # what was typed is kept
    hosted.refresh_from_db()
    assert hosted.title == "" and hosted.show_tool_results is False


@pytest.mark.parametrize(("field", "value", "message"), [
    ("accent_color", "blue", "accent_color must look like"),
    ("rate_limit_per_minute", "fast", "whole number"),
    ("rate_limit_per_minute", "5000", "between 1 and 1000"),
    ("monthly_budget_usd", "-3", "monthly_budget_usd must be between"),
    ("monthly_budget_usd", "NaN", "monthly_budget_usd must be between"),
    ("allowed_origins", "", "List at least one allowed origin"),
    ("allowed_origins", "https://shop.example.com/path", "is not an origin"),
])
def test_a_refused_value_is_shown_at_its_field_and_changes_nothing(client_as, org, builder, widget, field, value,
                                                                  message):
    response = client_as(builder, org).post(url(widget), widget_form(title="Not saved", **{field: value}))
    assert response.status_code == 422
    page = response.content.decode()
    assert f'data-field-error="{field}"' in page and message in page
    widget.refresh_from_db()
    assert widget.title == "" and widget.rate_limit_per_minute == 20 and widget.monthly_budget_usd is None
    assert not AuditEvent.objects.filter(action="embed.update").exists()


def test_the_rate_limit_and_the_embeds_budget_are_saved(client_as, org, builder, widget):
    client_as(builder, org).post(url(widget), widget_form(rate_limit_per_minute="7", monthly_budget_usd="12.50"))
    widget.refresh_from_db()
    assert widget.rate_limit_per_minute == 7 and widget.monthly_budget_usd == Decimal("12.5")
    page = client_as(builder, org).get(url(widget)).content.decode()
    assert 'value="12.5"' in page and 'value="7"' in page
    client_as(builder, org).post(url(widget), widget_form(monthly_budget_usd=""))
    widget.refresh_from_db()
    assert widget.monthly_budget_usd is None


# ------------------------------------------------------------------ variables


def test_declared_variables_are_saved_with_their_flags_and_the_snippet_names_them(client_as, org, builder, widget):
    response = client_as(builder, org).post(url(widget), widget_form(**{
        "variables-0-name": "plan", "variables-0-description": "The visitor's plan", "variables-0-required": "on",
        "variables-1-name": "locale", "variables-1-url_safe": "on",
        "variables-2-name": "", "variables-2-description": "",
    }))
    assert response.status_code == 302
    widget.refresh_from_db()
    assert widget.variables == [
        {"name": "plan", "required": True, "description": "The visitor's plan", "url_safe": False},
        {"name": "locale", "required": False, "description": "", "url_safe": True},
    ]
    page = client_as(builder, org).get(url(widget)).content.decode()
    assert "window.AgenticOSContext = { plan: &quot;&quot;, locale: &quot;&quot; }" in page
    assert 'name="variables-2-name"' in page  # one empty row to declare another with


def test_a_page_refuses_a_required_variable_that_is_not_url_safe_in_place(client_as, org, builder, hosted):
    response = client_as(builder, org).post(url(hosted), page_form(**{
        "variables-0-name": "plan", "variables-0-required": "on"}))
    assert response.status_code == 422
    page = response.content.decode()
    assert 'data-field-error="variables"' in page and "required but not URL-safe" in page
    assert 'value="plan"' in page
    hosted.refresh_from_db()
    assert hosted.variables == []


def test_a_badly_named_or_repeated_variable_is_refused(client_as, org, builder, widget):
    for rows in ({"variables-0-name": "has space"},
                 {"variables-0-name": "plan", "variables-1-name": "plan"}):
        response = client_as(builder, org).post(url(widget), widget_form(**rows))
        assert response.status_code == 422 and 'data-field-error="variables"' in response.content.decode()
    widget.refresh_from_db()
    assert widget.variables == []


# ------------------------------------------------------------------ the signing secret


def test_switching_to_jwt_shows_a_generated_secret_once_and_it_signs_tokens(client_as, org, builder, widget):
    browser = client_as(builder, org)
    response = browser.post(url(widget), widget_form(auth_mode="jwt"))
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    widget.refresh_from_db()
    secret = Secret.objects.get(pk=widget.jwt_secret_id)
    from agenticos import vault

    plaintext = vault.reveal(secret)
    page = response.content.decode()
    assert "data-new-secret" in page and f'value="{plaintext}"' in page and len(plaintext) >= 32
    assert widget.auth_mode == "jwt" and accepts(widget, token(plaintext))
    again = browser.get(url(widget)).content.decode()
    assert plaintext not in again and "data-new-secret" not in again and "data-secret-stored" in again
    assert plaintext not in str(list(AuditEvent.objects.values_list("details", flat=True)))
    # Saved again with the pencil empty: the same secret stays, nothing is shown.
    response = browser.post(url(widget), widget_form(auth_mode="jwt", title="Still jwt"))
    assert response.status_code == 302
    widget.refresh_from_db()
    assert vault.reveal(Secret.objects.get(pk=widget.jwt_secret_id)) == plaintext


def test_rotating_shows_the_new_secret_once_and_the_old_one_stops_signing(client_as, org, builder, widget):
    from agenticos import vault

    browser = client_as(builder, org)
    browser.post(url(widget), widget_form(auth_mode="jwt"))
    widget.refresh_from_db()
    old = vault.reveal(Secret.objects.get(pk=widget.jwt_secret_id))
    old_token = token(old)
    assert 'data-rotate-secret' in browser.get(url(widget)).content.decode()

    response = browser.post(url(widget, "jwt-secret/"))
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    widget.refresh_from_db()
    new = vault.reveal(Secret.objects.get(pk=widget.jwt_secret_id))
    assert new != old and f'value="{new}"' in response.content.decode() and old not in response.content.decode()
    assert not accepts(widget, old_token) and accepts(widget, token(new))
    later = browser.get(url(widget)).content.decode()
    assert new not in later and old not in later
    assert Secret.objects.filter(organization=org, name=f"embed-{widget.pk}-jwt").count() == 1


def test_a_pasted_secret_of_ones_own_is_kept_and_never_written_back(client_as, org, builder, widget):
    mine = "m" * 40
    response = client_as(builder, org).post(url(widget), widget_form(auth_mode="jwt", jwt_secret=mine))
    assert response.status_code == 302
    assert accepts(widget, token(mine))
    short = client_as(builder, org).post(url(widget), widget_form(auth_mode="jwt", jwt_secret="short-" * 2,
                                                                  title="x"))
    assert short.status_code == 422
    page = short.content.decode()
    assert 'data-field-error="jwt_secret"' in page and "short-short-" not in page
    assert accepts(widget, token(mine))


def test_a_jwt_embed_created_from_availability_shows_its_secret_once(client_as, org, builder, shop):
    from agenticos import vault

    browser = client_as(builder, org)
    response = browser.post(f"/agents/{shop.pk}/embeds", {
        "kind": "socket", "name": "App", "origins": "https://app.example.com", "environment": "production",
        "auth_mode": "jwt"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    embed = Embed.objects.get(agent=shop)
    secret = vault.reveal(Secret.objects.get(pk=embed.jwt_secret_id))
    assert embed.auth_mode == "jwt" and f'value="{secret}"' in response.content.decode()
    assert secret not in browser.get(f"/agents/{shop.pk}/").content.decode()
    assert secret not in browser.get(url(embed)).content.decode()


def test_a_hosted_page_offers_no_jwt_and_refuses_one_at_creation(client_as, org, builder, shop, hosted):
    assert 'name="auth_mode"' not in client_as(builder, org).get(url(hosted)).content.decode()
    response = client_as(builder, org).post(f"/agents/{shop.pk}/embeds", {
        "kind": "page", "origins": "", "environment": "production", "auth_mode": "jwt"})
    assert response.status_code == 422 and "cannot use jwt" in response.content.decode()
    assert Embed.objects.filter(agent=shop).count() == 1 and not Secret.objects.filter(organization=org).exists()


# ------------------------------------------------------------------ Availability, pause, logo


def test_the_widget_row_shows_its_socket_url_and_a_link_to_its_page(client_as, org, builder, shop, widget):
    page = client_as(builder, org).get(f"/agents/{shop.pk}/").content.decode()
    assert f"wss://agents.example.com/api/v1/embed/{widget.public_key}/ws" in page
    assert f'href="{url(widget)}"' in page


def test_pause_and_resume_from_the_page_stop_and_restart_the_embed(client_as, client, org, builder, hosted):
    browser = client_as(builder, org)
    assert browser.post(url(hosted, "pause/"))["Location"] == url(hosted)
    assert client.get(f"/api/v1/embed/{hosted.public_key}/config").json()["paused"] is True
    assert "data-resume" in browser.get(url(hosted)).content.decode()
    browser.post(url(hosted, "resume/"))
    assert client.get(f"/api/v1/embed/{hosted.public_key}/config").json()["paused"] is False
    assert list(AuditEvent.objects.filter(action__in=["embed.pause", "embed.resume"]).order_by("created_at")
                .values_list("action", flat=True)) == ["embed.pause", "embed.resume"]


def test_deleting_from_the_page_returns_to_availability(client_as, org, builder, shop, widget):
    response = client_as(builder, org).post(url(widget, "delete/"))
    assert response["Location"] == f"/agents/{shop.pk}/#availability"
    assert not Embed.objects.filter(pk=widget.pk).exists()


def test_an_uploaded_logo_is_served_by_the_page_and_a_non_image_is_refused_in_place(client_as, client, org, builder,
                                                                                     hosted, tmp_path, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    browser = client_as(builder, org)
    fake = SimpleUploadedFile("logo.html", b"<script>alert(1)</script>", content_type="image/png")
    refused = browser.post(url(hosted, "logo/"), {"logo": fake})
    assert refused.status_code == 422 and 'data-field-error="logo"' in refused.content.decode()
    hosted.refresh_from_db()
    assert hosted.logo_path == ""
    response = browser.post(url(hosted, "logo/"), {"logo": SimpleUploadedFile("x.png", PNG, content_type="image/png")})
    assert response.status_code == 302
    hosted.refresh_from_db()
    assert hosted.logo_source == "uploaded" and hosted.logo_path.endswith(".png")
    served = client.get(f"/api/v1/embed/{hosted.public_key}/logo")
    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    assert client.get(f"/api/v1/embed/{hosted.public_key}/config").json()["logoUrl"]


def test_a_widget_has_no_logo_to_upload(client_as, org, builder, widget):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client_as(builder, org).post(url(widget, "logo/"),
                                            {"logo": SimpleUploadedFile("x.png", PNG, content_type="image/png")})
    assert response.status_code == 422
    widget.refresh_from_db()
    assert widget.logo_path == ""


# ------------------------------------------------------------------ the live preview


def test_the_preview_draws_the_real_widget_script_in_the_forms_unsaved_looks(client_as, org, builder, widget):
    browser = client_as(builder, org)
    frame = browser.get(url(widget, "preview/") + "?title=Draft+title&accent_color=%23123456")
    assert frame.status_code == 200 and frame["X-Frame-Options"] == "SAMEORIGIN"
    html = frame.content.decode()
    # The preview's socket is put in place before the widget's script runs (both are files: no inline script).
    stub = html.index('src="/static/console/embed-preview-socket.js"')
    assert stub < html.index(f"/agents/{widget.agent_id}/embeds/{widget.pk}/preview/widget.js?title=Draft+title")
    script = browser.get(url(widget, "preview/widget.js") + "?title=Draft+title&accent_color=%23123456"
                         "&corner=bottom-left").content.decode()
    assert '"title": "Draft title"' in script and '"accent": "#123456"' in script and '"corner": "bottom-left"' in script
    from embeds.views import static_text

    assert static_text("widget.js") in script  # the real widget.js, not a look-alike
    widget.refresh_from_db()
    assert widget.title == "" and widget.accent_color == "#4f46e5"  # nothing was saved
    # A value a save would refuse draws the stored looks.
    fallback = browser.get(url(widget, "preview/widget.js") + "?accent_color=javascript:alert(1)").content.decode()
    assert '"accent": "#4f46e5"' in fallback and "alert(1)" not in fallback


def test_the_preview_of_a_page_is_the_real_page_with_the_local_socket(client_as, org, builder, hosted):
    Embed.objects.filter(pk=hosted.pk).update(is_paused=True)
    html = client_as(builder, org).get(url(hosted, "preview/") + "?title=Draft+page&welcome=Hello&allow_new_thread=0"
                                       ).content.decode()
    assert "<title>Draft page</title>" in html and 'id="new-thread"' not in html
    # The real page's script, its socket replaced before it runs.
    assert html.index('src="/static/console/embed-preview-socket.js"') < html.index('src="/static/embeds/page.js"')
    assert '"paused": false' in html


def test_a_socket_has_no_preview_and_only_a_widget_has_a_script(client_as, org, builder, shop, hosted):
    socket = factories.embed(shop, kind="socket", created_by=builder)
    browser = client_as(builder, org)
    assert browser.get(url(socket, "preview/")).status_code == 404
    assert browser.get(url(hosted, "preview/widget.js")).status_code == 404


# ------------------------------------------------------------------ permissions, as the API's


ROUTES = [("get", ""), ("post", ""), ("post", "jwt-secret/"), ("post", "logo/"), ("get", "preview/"),
          ("get", "preview/widget.js"), ("post", "pause/"), ("post", "resume/"), ("post", "delete/")]


def test_a_viewer_is_refused_every_route_as_the_api_refuses_them(client_as, org, viewer, widget):
    browser = client_as(viewer, org)
    for method, tail in ROUTES:
        response = getattr(browser, method)(url(widget, tail), widget_form(title="Viewer") if method == "post" else {})
        assert response.status_code == 403, (method, tail)
    widget.refresh_from_db()
    assert widget.title == "" and not widget.is_paused and widget.jwt_secret_id is None
    assert not AuditEvent.objects.filter(action__startswith="embed.").exists()


def test_an_outsider_gets_404_on_every_route(client_as, outsider, outsider_org, widget):
    browser = client_as(outsider, outsider_org)
    for method, tail in ROUTES:
        response = getattr(browser, method)(url(widget, tail), widget_form(title="Out") if method == "post" else {})
        assert response.status_code == 404, (method, tail)
    assert Embed.objects.get(pk=widget.pk).title == ""


def test_a_builder_without_edit_access_sees_it_read_only_and_cannot_change_it(client_as, org, widget):
    other = factories.member(org, "builder")
    browser = client_as(other, org)
    page = browser.get(url(widget))
    assert page.status_code == 200
    html = page.content.decode()
    assert "data-read-only" in html and "data-embed-edit" in html and "embed-fields\" disabled" in html and "data-save" not in html
    assert "data-pause" not in html and "data-rotate-secret" not in html
    for method, tail in ROUTES:
        if method == "post":
            assert browser.post(url(widget, tail), widget_form(title="Nope")).status_code == 403, tail
    assert browser.get(url(widget, "preview/")).status_code == 200
    widget.refresh_from_db()
    assert widget.title == "" and not widget.is_paused and Embed.objects.filter(pk=widget.pk).exists()


def test_an_embed_under_another_agents_address_and_a_private_agents_embed_are_404(client_as, org, builder, owner,
                                                                                  widget):
    elsewhere = factories.published_agent(org, builder, name="Elsewhere")
    browser = client_as(builder, org)
    assert browser.get(f"/agents/{elsewhere.pk}/embeds/{widget.pk}/").status_code == 404
    assert browser.post(f"/agents/{elsewhere.pk}/embeds/{widget.pk}/pause/").status_code == 404
    private = factories.published_agent(org, owner, name="Private")
    private.visibility = "private"
    private.save(update_fields=["visibility"])
    hidden = factories.embed(private, kind="widget", created_by=owner)
    other_builder = factories.member(org, "builder")
    assert client_as(other_builder, org).get(url(hidden)).status_code == 404
    assert client_as(other_builder, org).post(url(hidden), widget_form(title="x")).status_code == 404
    assert Embed.objects.get(pk=hidden.pk).title == ""


# ------------------------------------------------------------------ the organization's list


def test_the_list_shows_the_embeds_of_agents_one_can_see_in_constant_queries(client_as, org, builder, owner, shop,
                                                                           widget, hosted, outsider_org, outsider,
                                                                           django_assert_max_num_queries):
    private = factories.published_agent(org, owner, name="Private")
    private.visibility = "private"
    private.save(update_fields=["visibility"])
    hidden = factories.embed(private, kind="widget", created_by=owner, name="Hidden one")
    foreign = factories.embed(factories.published_agent(outsider_org, outsider, name="Foreign"), kind="widget",
                              created_by=outsider, name="Foreign one")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    browser = client_as(builder, org)
    browser.get("/embeds/")  # the session's first request writes what later ones only read
    with django_assert_max_num_queries(12), CaptureQueriesContext(connection) as few:
        first = browser.get("/embeds/").content.decode()
    for _ in range(5):
        factories.embed(shop, kind="socket", created_by=builder)
    with CaptureQueriesContext(connection) as many:
        more = browser.get("/embeds/").content.decode()
    assert len(many.captured_queries) == len(few.captured_queries)
    assert f'data-embed-listed="{widget.pk}"' in first and f'data-embed-listed="{hosted.pk}"' in first
    assert f'href="{url(widget)}"' in first
    assert hidden.name not in first and foreign.name not in first
    assert more.count("data-embed-listed=") == 7
    assert hosted.public_key not in first


def test_a_viewer_is_refused_the_list_as_the_api_refuses_them(client_as, org, viewer, widget):
    assert client_as(viewer, org).get("/embeds/").status_code == 403


def test_a_hostile_preview_value_cannot_break_out_of_the_script_or_the_page(client_as, org, builder, widget, hosted):
    browser = client_as(builder, org)
    hostile = "</script><script>alert(1)</script>"
    script = browser.get(url(widget, "preview/widget.js"), {"title": hostile}).content.decode()
    assert "</script>" not in script.split("var AOS_CONFIG", 1)[1].split(";\n", 1)[0]
    page = browser.get(url(hosted, "preview/"), {"title": hostile, "welcome": hostile}).content.decode()
    assert "<script>alert(1)</script>" not in page
