"""The everyday screens (issue 25): the branded 404 for console routes while /api/ keeps the JSON envelope,
the favicon, and — in a real browser at 1440 and 390 px — Usage, a run's page, API keys, the 404 page and
the navigation drawer, with no console error on any page."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.django_db


def test_an_unknown_console_page_is_the_branded_404(client_as, org, owner):
    response = client_as(owner, org).get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
    assert 'data-error-page="404"' in page and "We could not find that page" in page
    assert 'class="sidenav"' in page  # signed in: the console around it
    assert "favicon.svg" in page and 'href="data:,"' not in page


def test_another_organizations_run_is_the_same_branded_404(client_as, outsider, outsider_org, org, owner, agent):
    from tests.console.conftest import make_turn

    _c, run = make_turn(org, owner, agent)
    for path in (f"/activity/runs/{run.pk}/", f"/activity/runs/{uuid.uuid4()}/"):
        response = client_as(outsider, outsider_org).get(path)
        assert response.status_code == 404 and 'data-error-page="404"' in response.content.decode()


def test_signed_out_the_404_offers_sign_in(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "Sign in" in response.content.decode()


def test_api_paths_keep_the_json_envelope(client_as, org, owner):
    for path in ("/api/v1/no-such-thing", f"/api/v1/runs/{uuid.uuid4()}"):
        response = client_as(owner, org).get(path)
        assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
        assert response.json()["error"]["code"] == "not_found"


def test_the_header_bell_counts_only_ones_own_unread_notifications(client_as, org, owner, member, outsider,
                                                                   outsider_org):
    from notifications.services import notify

    notify(organization=org, recipient=owner, kind="test", text="Enable web search?", link="/agents/")
    notify(organization=org, recipient=owner, kind="test", text="Another", link="/agents/")
    notify(organization=org, recipient=member, kind="test", text="Not yours")
    notify(organization=outsider_org, recipient=outsider, kind="test", text="Theirs")
    page = client_as(owner, org).get("/").content.decode()
    assert "data-notifications-bell" in page and 'data-unread-count>2<' in page
    outsider_page = client_as(outsider, outsider_org).get("/").content.decode()
    assert 'data-unread-count>1<' in outsider_page


def test_the_500_page_renders_without_a_request():
    from django.template import loader

    page = loader.get_template("500.html").render()
    assert 'data-error-page="500"' in page and "favicon.svg" in page


def test_the_favicon_is_a_real_svg(client):
    from django.contrib.staticfiles import finders

    path = finders.find("console/favicon.svg")
    assert path is not None
    with open(path, encoding="utf-8") as handle:
        assert handle.read().lstrip().startswith("<svg")


# ------------------------------------------------------------------ in a real browser


def _everyday_setup():
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from agents.models import Run, ToolCall
    from governance.models import Approval, SpendEntry
    from tests import factories
    from tests.console.conftest import make_turn
    from tests.console.test_browser_chat import PASSWORD

    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email="everyday-owner@example.com", password=PASSWORD)
    agent = factories.published_agent(org, owner, name="Helper")
    _c, run = make_turn(org, owner, agent, tools=("run_python",))
    start = timezone.now() - timedelta(minutes=3)
    Run.objects.filter(pk=run.pk).update(created_at=start, started_at=start + timedelta(seconds=1),
                                         finished_at=start + timedelta(seconds=9))
    call = run.tool_calls.get()
    ToolCall.objects.filter(pk=call.pk).update(started_at=start + timedelta(seconds=2),
                                               finished_at=start + timedelta(seconds=5))
    Approval.objects.create(organization=org, run=run, tool_call_id=call.tool_call_id, tool_id="sandbox",
                            tool_name="run_python", args={}, status="approved", decided_by=owner,
                            decided_at=start + timedelta(seconds=2))
    SpendEntry.objects.create(organization=org, agent=agent, run=run, surface="web", model="gpt-4o-mini",
                              input_tokens=120, output_tokens=30, cost_usd=Decimal("0.0120"), created_at=start)
    other = factories.organization(name="Other")
    stranger = factories.member(other, "owner", email="everyday-stranger@example.com")
    their_agent = factories.published_agent(other, stranger, name="Foreign")
    _c, theirs = make_turn(other, stranger, their_agent)
    SpendEntry.objects.create(organization=other, agent=their_agent, run=theirs, surface="web",
                              model="foreign-model-x", cost_usd=Decimal("3"))
    return org, owner, run


@pytest.fixture
def production_errors(monkeypatch, settings):
    """The live daphne with DEBUG off, as deployed: Django's technical 404 page (DEBUG on) skips handler404,
    so only then does the console's own 404 page show. Its keys are this process's (read by the subprocess)."""
    monkeypatch.setenv("DEBUG", "false")
    monkeypatch.setenv("ALLOWED_HOSTS", "127.0.0.1,localhost")
    monkeypatch.setenv("SECRET_KEY", settings.SECRET_KEY)
    monkeypatch.setenv("VAULT_MASTER_KEY", settings.VAULT_MASTER_KEY)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_the_everyday_screens_in_a_browser(production_errors, live_server_url, browser, width):
    from tests.console.conftest import ARTIFACTS
    from tests.console.test_browser_chat import TIMEOUT, sign_in
    from tests.console.test_channels_console_browser import watch

    _org, _owner, run = _everyday_setup()
    base = live_server_url
    context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "everyday-owner@example.com")
    assert page.locator("link[rel=icon]").get_attribute("href").endswith("/console/favicon.svg")

    def no_sideways_scroll() -> None:
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth + 1"), page.url

    # The navigation: a drawer behind Menu on a phone, the side column on a desktop.
    menu = page.get_by_role("button", name="Menu")
    usage_link = page.locator("#sidenav").get_by_role("link", name="Usage", exact=True)
    if width < 800:
        assert menu.is_visible() and not usage_link.is_visible()
        menu.click()
        usage_link.wait_for(state="visible")
        assert menu.get_attribute("aria-expanded") == "true"
        page.wait_for_function("() => getComputedStyle(document.getElementById('sidenav')).transform === 'none'")
        page.screenshot(path=str(ARTIFACTS / f"everyday-drawer-{width}.png"))
        page.keyboard.press("Escape")
        usage_link.wait_for(state="hidden")
        assert menu.get_attribute("aria-expanded") == "false"
        menu.click()
    else:
        assert not menu.is_visible()
    usage_link.click()
    page.wait_for_url(f"{base}/usage/")
    no_sideways_scroll()

    # Usage: charts drawn from the rows, the other organization nowhere, the CSV the same rows.
    page.locator("[data-usage-chart] svg.chart-svg").first.wait_for()
    assert page.locator("[data-usage-chart] svg.chart-svg").count() == 5
    assert page.locator('[data-usage-dimension="model"]').get_by_role("cell", name="gpt-4o-mini").is_visible()
    assert "foreign-model-x" not in page.content() and "Foreign" not in page.content()
    page.screenshot(path=str(ARTIFACTS / f"everyday-usage-{width}.png"), full_page=True)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    with open(download.value.path(), encoding="utf-8") as handle:
        csv_text = handle.read()
    assert "gpt-4o-mini" in csv_text and "foreign-model-x" not in csv_text

    # A run's page: who approved the call and when, its duration, the model and version.
    page.goto(f"{base}/activity/runs/{run.pk}/")
    approval = page.locator('[data-call-approval="approved"]')
    assert "approved by" in approval.inner_text()
    assert page.locator("[data-call-duration]").inner_text().strip() == "3.00 s"
    assert "Version 1" in page.locator("[data-run-version]").inner_text()
    assert "gpt-4o-mini" in page.locator("[data-run-billed-models]").inner_text()
    no_sideways_scroll()
    page.screenshot(path=str(ARTIFACTS / f"everyday-run-{width}.png"), full_page=True)

    # API keys: a read-only key that expires, shown once, then found by search.
    page.goto(f"{base}/settings/api-keys/")
    page.get_by_label("Name", exact=True).fill(f"reporting {width}")
    page.get_by_label("Scope").select_option("read")
    page.get_by_label("Expires").select_option("30")
    page.get_by_role("button", name="Create API key").click()
    assert page.locator("[data-new-key]").input_value().startswith("aos_")
    row = page.locator("[data-api-key]").filter(has_text=f"reporting {width}")
    assert row.locator('[data-key-scope="read"]').is_visible()
    page.get_by_label("Search", exact=True).fill("nothing-like-it")
    page.get_by_role("button", name="Search").click()
    page.get_by_text("No API key matches.").wait_for()
    no_sideways_scroll()
    page.screenshot(path=str(ARTIFACTS / f"everyday-api-keys-{width}.png"), full_page=True)

    # The branded 404, inside the console.
    response = page.goto(f"{base}/no-such-page/")
    assert response is not None and response.status == 404
    assert page.get_by_role("heading", name="We could not find that page").is_visible()
    no_sideways_scroll()
    page.screenshot(path=str(ARTIFACTS / f"everyday-404-{width}.png"), full_page=True)
    errors[:] = [e for e in errors if not (e.startswith("404 ") and e.endswith("/no-such-page/"))
                 and "the server responded with a status of 404" not in e]

    # Dark mode follows the system setting.
    page.emulate_media(color_scheme="dark")
    page.goto(f"{base}/usage/")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(17, 21, 28)", background
    page.screenshot(path=str(ARTIFACTS / f"everyday-usage-dark-{width}.png"), full_page=True)
    assert errors == []
    context.close()
