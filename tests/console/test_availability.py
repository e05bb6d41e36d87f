"""The Builder's Availability section: the agent's embeds (widget snippet, socket URL, page URL, copy buttons;
create, pause, resume, delete) and its bot bindings (bind one of the organization's bots, unbind), through the
same services and permissions as the REST API."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agenticos.models import AuditEvent, Membership
from agenticos.tenancy import actor_for_membership
from channelbots import services as bot_services
from channelbots.models import Binding
from embeds.models import Embed
from tests import factories

pytestmark = pytest.mark.django_db
FRONTEND = "https://agents.example.com"


@pytest.fixture(autouse=True)
def _frontend(settings):
    settings.FRONTEND_URL = FRONTEND


@pytest.fixture
def shop(org, builder):
    """An agent the builder owns (so they hold edit access to it), published."""
    return factories.published_agent(org, builder, name="Shop")


def actor(user, org):
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


def telegram_bot(org, user, name="Support bot"):
    return bot_services.create_bot(actor=actor(user, org), data={
        "platform": "telegram", "name": name, "token": "123456:ABCDEFGHIJ-telegram-token"})


def section(response) -> str:
    return response.content.decode().split('id="availability"', 1)[1]


# ------------------------------------------------------------------ embeds


def test_a_builder_creates_a_widget_and_sees_its_snippet_with_a_copy_button(client_as, org, builder, shop):
    client = client_as(builder, org)
    response = client.post(f"/agents/{shop.pk}/embeds", {
        "kind": "widget", "name": "Shop site", "environment": "production",
        "origins": "https://shop.example.com\nhttps://www.shop.example.com/"})
    embed = Embed.objects.get(agent=shop)
    assert response.status_code == 302 and response["Location"] == f"/agents/{shop.pk}/#embed-{embed.pk}"
    assert embed.kind == "widget" and embed.created_by == builder and embed.environment == "production"
    assert embed.allowed_origins == ["https://shop.example.com", "https://www.shop.example.com"]
    assert AuditEvent.objects.filter(organization=org, action="embed.create").count() == 1

    page = section(client.get(f"/agents/{shop.pk}/"))
    script = f"{FRONTEND}/api/v1/embed/{embed.public_key}/widget.js"
    assert f'<pre id="embed-code-{embed.pk}"' in page and script in page
    assert f'data-copy="embed-code-{embed.pk}"' in page
    assert "Shop site" in page and "serves production" in page and "https://www.shop.example.com" in page


def test_a_socket_shows_its_socket_url_and_a_page_its_page_url(client_as, org, builder, shop):
    client = client_as(builder, org)
    client.post(f"/agents/{shop.pk}/embeds", {"kind": "socket", "origins": "https://app.example.com",
                                              "environment": "dev"})
    client.post(f"/agents/{shop.pk}/embeds", {"kind": "page", "origins": "", "environment": "production"})
    socket = Embed.objects.get(agent=shop, kind="socket")
    hosted = Embed.objects.get(agent=shop, kind="page")
    assert socket.environment == "dev" and hosted.allowed_origins == []
    page = section(client.get(f"/agents/{shop.pk}/"))
    assert f"wss://agents.example.com/api/v1/embed/{socket.public_key}/ws" in page
    assert f"{FRONTEND}/e/{hosted.public_key}" in page
    assert page.count('data-copy="embed-code-') == 2
    assert "widget.js" not in page


@pytest.mark.parametrize("form,field,words", [
    ({"kind": "widget", "origins": "shop.example.com/path"}, "allowed_origins", "is not an origin"),
    ({"kind": "widget", "origins": ""}, "allowed_origins", "List at least one allowed origin"),
    ({"kind": "page", "origins": "https://shop.example.com"}, "allowed_origins", "A hosted page has no list"),
    ({"kind": "banner", "origins": "https://shop.example.com"}, "kind", "kind must be widget, socket or page"),
    ({"kind": "widget", "origins": "https://shop.example.com", "environment": "staging"}, "environment",
     "no 'staging' environment"),
])
def test_a_refused_embed_shows_the_services_reason_next_to_the_form(client_as, org, builder, shop, form, field,
                                                                     words):
    response = client_as(builder, org).post(f"/agents/{shop.pk}/embeds", {"environment": "production", **form})
    assert response.status_code == 422
    page = section(response)
    form_html = page.split("data-embed-form", 1)[1].split("</form>", 1)[0]
    control = {"allowed_origins": "origins"}.get(field, field)
    error = form_html.split(f'id="embed-{control}"', 1)[1].split("</div>", 1)[0]
    assert "data-form-error" in error and words in error.replace("&#x27;", "'")
    assert form.get("origins", "") in form_html  # what was typed stays in the form
    assert not Embed.objects.filter(agent=shop).exists()


def test_pause_resume_and_delete_an_embed(client_as, org, builder, shop):
    client = client_as(builder, org)
    embed = factories.embed(shop, created_by=builder)
    assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/pause").status_code == 302
    embed.refresh_from_db()
    assert embed.is_paused
    assert "data-paused" in section(client.get(f"/agents/{shop.pk}/"))
    assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/resume").status_code == 302
    embed.refresh_from_db()
    assert not embed.is_paused
    assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/delete").status_code == 302
    assert not Embed.objects.filter(pk=embed.pk).exists()
    actions = list(AuditEvent.objects.filter(organization=org, action__startswith="embed.")
                   .order_by("id").values_list("action", flat=True))
    assert actions == ["embed.pause", "embed.resume", "embed.delete"]


def test_an_embed_is_only_reached_through_its_own_agent_and_unknown_actions_are_404(client_as, org, builder, shop):
    other = factories.published_agent(org, builder, name="Other")
    embed = factories.embed(other, created_by=builder)
    client = client_as(builder, org)
    assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/delete").status_code == 404
    assert client.post(f"/agents/{other.pk}/embeds/{embed.pk}/explode").status_code == 404
    assert client.get(f"/agents/{other.pk}/embeds/{embed.pk}/pause").status_code == 405
    assert Embed.objects.filter(pk=embed.pk, is_paused=False).exists()


# ------------------------------------------------------------------ bot bindings


def test_a_builder_binds_one_of_the_organizations_bots_and_unbinds_it(client_as, org, builder, shop):
    bot = telegram_bot(org, builder)
    client = client_as(builder, org)
    form = section(client.get(f"/agents/{shop.pk}/")).split("data-binding-form", 1)[1]
    assert f'value="{bot.pk}"' in form and "Support bot (Telegram)" in form

    response = client.post(f"/agents/{shop.pk}/bindings", {"bot_id": str(bot.pk), "environment": "dev"})
    assert response.status_code == 302 and response["Location"].endswith("#bindings")
    binding = Binding.objects.get(bot=bot)
    assert binding.agent == shop and binding.environment == "dev"
    page = section(client.get(f"/agents/{shop.pk}/"))
    row = page.split(f'data-binding="{binding.pk}"', 1)[1].split("</li>", 1)[0]
    assert "Support bot" in row and "Telegram" in row and "serves dev" in row and "Unbind Support bot" in row
    # A bound bot is no longer offered.
    assert f'value="{bot.pk}"' not in page.split("data-binding-form", 1)[1]

    assert client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/delete").status_code == 302
    assert not Binding.objects.filter(pk=binding.pk).exists()
    assert list(AuditEvent.objects.filter(organization=org, action__startswith="channelbinding.")
                .order_by("id").values_list("action", flat=True)) == ["channelbinding.create", "channelbinding.delete"]


def test_a_bot_that_answers_as_another_agent_is_refused_next_to_the_form(client_as, org, builder, shop):
    other = factories.published_agent(org, builder, name="Other")
    bot = telegram_bot(org, builder)
    bot_services.create_binding(actor=actor(builder, org), agent=other, data={"bot_id": str(bot.pk)})
    response = client_as(builder, org).post(f"/agents/{shop.pk}/bindings", {"bot_id": str(bot.pk),
                                                                            "environment": "production"})
    assert response.status_code == 422
    form = section(response).split("data-binding-form", 1)[1].split("</form>", 1)[0]
    assert "already answers as another agent" in form and "data-form-error" in form
    assert Binding.objects.get(bot=bot).agent == other


def test_binding_needs_edit_access_to_the_agent_as_in_the_api(client_as, org, owner, builder, agent):
    """The builder can only use the owner's agent: no bind form, and the POST is refused."""
    bot = telegram_bot(org, builder)
    client = client_as(builder, org)
    assert "data-binding-form" not in section(client.get(f"/agents/{agent.pk}/"))
    assert client.post(f"/agents/{agent.pk}/bindings", {"bot_id": str(bot.pk)}).status_code == 403
    assert not Binding.objects.exists()


# ------------------------------------------------------------------ viewers and outsiders


def test_a_viewer_sees_the_bindings_but_no_embeds_and_no_edit_controls(client_as, org, builder, viewer, shop):
    embed = factories.embed(shop, kind="page", created_by=builder)
    bot = telegram_bot(org, builder)
    bot_services.create_binding(actor=actor(builder, org), agent=shop, data={"bot_id": str(bot.pk)})
    page = section(client_as(viewer, org).get(f"/agents/{shop.pk}/"))
    assert "Support bot" in page  # bindings are listed to whoever sees the agent, as GET …/bindings
    assert embed.public_key not in page  # a hosted page's address is its only protection
    assert "Your role cannot manage embeds." in page
    # The page's confirmation dialog (a <form method="dialog"> in every page) submits nothing.
    assert re.findall(r'<form(?![^>]*method="dialog")', page) == []
    assert "Unbind" not in page and "Create the embed" not in page


def test_a_viewers_posts_are_refused_and_change_nothing(client_as, org, builder, viewer, shop):
    embed = factories.embed(shop, created_by=builder)
    bot = telegram_bot(org, builder)
    binding = bot_services.create_binding(actor=actor(builder, org), agent=shop, data={"bot_id": str(bot.pk)})
    spare = telegram_bot(org, builder, name="Spare")
    client = client_as(viewer, org)
    assert client.post(f"/agents/{shop.pk}/embeds", {"kind": "page", "environment": "production"}).status_code == 403
    for action in ("pause", "delete"):
        assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/{action}").status_code == 403
    assert client.post(f"/agents/{shop.pk}/bindings", {"bot_id": str(spare.pk)}).status_code == 403
    assert client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/delete").status_code == 403
    assert list(Embed.objects.values_list("pk", "is_paused")) == [(embed.pk, False)]
    assert list(Binding.objects.values_list("pk", flat=True)) == [binding.pk]


def test_another_organization_gets_404_for_the_agent_its_embeds_and_its_bindings(client_as, org, builder, shop,
                                                                                  outsider_org, outsider):
    embed = factories.embed(shop, created_by=builder)
    bot = telegram_bot(org, builder)
    binding = bot_services.create_binding(actor=actor(builder, org), agent=shop, data={"bot_id": str(bot.pk)})
    their_bot = telegram_bot(outsider_org, outsider, name="Theirs")
    client = client_as(outsider, outsider_org)
    assert client.get(f"/agents/{shop.pk}/").status_code == 404
    assert client.post(f"/agents/{shop.pk}/embeds", {"kind": "page", "environment": "production"}).status_code == 404
    assert client.post(f"/agents/{shop.pk}/embeds/{embed.pk}/delete").status_code == 404
    assert client.post(f"/agents/{shop.pk}/bindings", {"bot_id": str(their_bot.pk)}).status_code == 404
    assert client.post(f"/agents/{shop.pk}/bindings/{binding.pk}/delete").status_code == 404
    # Nor can our builder bind the outsider's bot or reach it through our agent.
    mine = client_as(builder, org)
    response = mine.post(f"/agents/{shop.pk}/bindings", {"bot_id": str(their_bot.pk), "environment": "production"})
    assert response.status_code == 422 and "No such bot in this organization." in section(response)
    assert "Theirs" not in section(mine.get(f"/agents/{shop.pk}/"))
    assert Embed.objects.filter(pk=embed.pk).exists() and Binding.objects.filter(pk=binding.pk).exists()
    assert not Binding.objects.filter(bot=their_bot).exists()


def test_the_builder_page_does_not_grow_its_queries_with_embeds_and_bindings(client_as, org, builder, shop):
    client = client_as(builder, org)

    def grow(n):
        for _ in range(n):
            factories.embed(shop, created_by=builder)
            factories.embed(shop, kind="page", created_by=builder)
            bot = telegram_bot(org, builder)
            bot_services.create_binding(actor=actor(builder, org), agent=shop, data={"bot_id": str(bot.pk)})
            telegram_bot(org, builder, name="Unbound")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/agents/{shop.pk}/").status_code == 200
        return len(captured)

    grow(1)
    few = count()
    grow(6)
    assert count() == few


# ------------------------------------------------------------------ in a real browser


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_browser_a_builder_creates_a_widget_by_its_labels_and_copies_its_snippet(live_server_url, browser):
    from tests.console.test_browser_chat import PASSWORD, TIMEOUT, shot, sign_in

    org = factories.organization(name="Acme")
    person = factories.user(email="maker@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role="builder")
    shop = factories.published_agent(org, person, name="Shop")

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server_url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "maker@example.com", then=f"/agents/{shop.pk}/#availability")
    page.get_by_label("Kind").select_option("widget")
    page.get_by_label("Allowed origins (widget and socket)").fill("https://shop.example.com/")
    page.get_by_role("button", name="Create the embed").click()
    page.wait_for_selector("[data-embed-snippet]")
    embed = Embed.objects.get(agent=shop)
    snippet = page.locator("[data-embed-snippet]").text_content()
    assert f"/api/v1/embed/{embed.public_key}/widget.js" in snippet
    page.get_by_role("button", name="Copy the snippet").click()
    page.wait_for_selector("[data-copied]")
    assert page.evaluate("() => navigator.clipboard.readText()") == snippet
    shot(page, "builder-availability")
    context.close()
