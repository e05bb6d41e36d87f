"""Issue 25, "Broken today": each flow in a real browser (Debian chromium via Playwright) against daphne + a
real Celery worker, each test written so that it failed before its fix, at 1440 and 390 px."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


def offline_page(browser, base_url, *, width=1440, height=900):
    """A page on which every request to anything but this machine's server fails, as without internet; the
    refused addresses are kept so a test can say none was tried."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT)
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(base_url + "/"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort("internetdisconnected")

    page.route("**/*", route)
    return page, refused


def fits(page, width) -> None:
    """Nothing wider than the screen: the page never scrolls sideways (a wide table scrolls inside its own
    .table-wrap, an agent's tab bar inside .agent-tabs; the navigation drawer waits off screen at a phone's width)."""
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    wide = page.evaluate("""(width) => Array.from(document.querySelectorAll('body *'))
        .filter(e => e.getBoundingClientRect().right > width + 1 && !e.closest('.sidenav, .table-wrap, .agent-tabs'))
        .slice(0, 5).map(e => e.tagName + '.' + e.className)""", width)
    assert wide == [], wide


def member_of(org, email, role="owner"):
    person = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role=role)
    return person


# ------------------------------------------------------------------ 1. the API docs without internet


@pytest.mark.parametrize("width", [1440, 390])
def test_the_api_docs_render_their_operations_without_internet(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    member_of(org, "owner@example.com")
    page, refused = offline_page(browser, live_server_url, width=width)
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock")  # Swagger UI drew the operations of the schema
    page.locator(".swagger-ui .opblock-summary-path", has_text="/api/v1/agents").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / f"api-docs-offline-{width}.png"))

    page.goto(f"{live_server_url}/api/redoc/")
    page.wait_for_selector("[data-section-id^='operation']", state="attached")
    assert page.locator("[data-section-id^='operation']").count() >= 1
    assert refused == []


# ------------------------------------------------------------------ 2. publishing: environments and no empty versions


@pytest.mark.parametrize("width", [1440, 390])
def test_a_publish_says_which_environment_moved_and_an_unchanged_one_makes_no_version(live_server_url, browser,
                                                                                     client_as, width):
    from agents.models import AgentVersion, Environment

    org = factories.organization(name="Acme")
    owner = member_of(org, "owner@example.com")
    agent = factories.published_agent(org, owner, name="Helper")  # v1: production and dev
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")

    page.locator("#b-instructions").fill("You answer in one short sentence.")
    page.locator("form:has(#b-instructions)").get_by_role("button", name="Save the draft").click()
    page.wait_for_selector(".flash")
    page.get_by_role("button", name="Publish", exact=True).click()
    flash = page.locator(".flash").first
    flash.wait_for()
    assert "version 2" in flash.text_content() and "dev" in flash.text_content()
    assert "production v1" in flash.text_content()
    behind = page.locator("[data-production-behind]")
    assert "Production still runs v1" in behind.text_content()
    fits(page, width)
    page.screenshot(path=str(ARTIFACTS / f"publish-production-behind-{width}.png"), full_page=True)

    page.get_by_role("button", name="Promote v2 to production").click()
    page.wait_for_selector("[data-environment=production]:has-text('v2')")
    assert page.locator("[data-production-behind]").count() == 0
    assert Environment.objects.get(agent=agent, name="production").version.number == 2

    page.get_by_role("button", name="Publish", exact=True).click()
    page.wait_for_selector(".flash-error")
    assert "Nothing changed since v2." in page.locator(".flash-error").text_content()
    assert list(AgentVersion.objects.filter(agent=agent, number__gt=0).values_list("number", flat=True)
                .order_by("number")) == [1, 2]

    # The API refuses it too, in the error envelope, and makes no version either.
    response = client_as(owner, org).post(f"/api/v1/agents/{agent.pk}/publish", {"note": "again"},
                                          content_type="application/json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "unchanged"
    assert response.json()["error"]["message"] == "Nothing changed since v2."
    assert AgentVersion.objects.filter(agent=agent, number__gt=0).count() == 2


# ------------------------------------------------------------------ 5. long values wrap


@pytest.mark.parametrize("width", [390, 1440])
def test_long_values_wrap_at_phone_and_desktop_widths(live_server_url, browser, width):
    org = factories.organization(name="The " + "Remarkably" * 7 + " Org")
    member_of(org, "owner@example.com")
    factories.secret(org, name="long", description="x" * 300)
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "owner@example.com", then="/settings/secrets/")
    page.wait_for_selector("[data-secret]")
    page.screenshot(path=str(ARTIFACTS / f"long-values-{width}.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert page.evaluate("() => document.querySelector('table').getBoundingClientRect().right") <= width
    sign_out = page.get_by_role("button", name="Sign out").bounding_box()
    assert sign_out is not None and sign_out["x"] >= 0 and sign_out["x"] + sign_out["width"] <= width


# ------------------------------------------------------------------ 6. New agent: templates, named for the agent


@pytest.mark.parametrize("width", [1440, 390])
def test_new_agent_offers_templates_and_names_the_agent_it_creates(live_server_url, browser, width):
    from agents.models import Agent

    org = factories.organization(name="Acme")
    member_of(org, "owner@example.com")
    factories.model_profile(org, label="Demo")
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/agents/")
    assert {"starter", "blank", "analyst", "researcher"} <= set(
        page.locator("[data-template]").evaluate_all("els => els.map(e => e.dataset.template)"))
    fits(page, width)
    page.screenshot(path=str(ARTIFACTS / f"new-agent-templates-{width}.png"), full_page=True)
    page.get_by_label("Name").fill("Ledger")
    page.get_by_label("Data analyst").check()
    page.get_by_role("button", name="Create agent").click()
    page.wait_for_selector("[data-capabilities]")
    instructions = page.locator("#b-instructions").input_value()
    assert instructions.startswith("You are Ledger, a data analyst.")
    spec = Agent.objects.get(organization=org, name="Ledger").draft_spec
    assert {b["id"] for b in spec["capabilities"]} == {"code_execution", "charts", "ask_user"}  # every template asks when unsure

    page.goto(f"{live_server_url}/agents/")
    page.get_by_label("Name").fill("Concierge")  # the starter, checked first
    page.get_by_role("button", name="Create agent").click()
    page.wait_for_selector("[data-capabilities]")
    instructions = page.locator("#b-instructions").input_value()
    assert "Getting Started assistant" not in instructions and instructions.startswith("You are Concierge")


# ------------------------------------------------------------------ 4. one turn at a time: Send off, Stop on


@pytest.mark.parametrize("width", [1440, 390])
def test_send_is_disabled_while_a_turn_runs_and_stop_is_offered(live_server_url, browser, scripted_model, width):
    from pydantic_ai.models.function import FunctionModel

    from agents.models import Run
    from tests.console.test_browser_stop import slow_unless_asked_quickly

    scripted_model(FunctionModel(stream_function=slow_unless_asked_quickly, model_name="scripted"))
    org = factories.organization(name="Acme")
    member_of(org, "person@example.com", role="member")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Slowpoke")
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "person@example.com", then=f"/chat/?agent={agent.pk}")
    send_button = page.get_by_role("button", name="Send")
    page.get_by_label("Message").fill("Think slowly about it")
    send_button.click()
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer'))"
                           ".some(a => a.textContent.startsWith('Thinking'))")
    assert send_button.is_disabled()
    page.get_by_role("button", name="Stop").wait_for(state="visible")
    fits(page, width)
    page.get_by_label("Message").fill("Now answer quickly")
    page.get_by_label("Message").press("Enter")  # Enter does not slip past the disabled button
    assert page.get_by_label("Message").input_value() == "Now answer quickly"
    assert Run.objects.filter(agent=agent).count() == 1

    page.get_by_role("button", name="Stop").click()
    page.wait_for_selector("[data-stopped]")
    page.wait_for_function("() => !document.querySelector('[data-send]').disabled")
    send_button.click()  # the kept text is sent now, and answered live
    page.wait_for_function("() => document.querySelectorAll('.turn-usage').length >= 2")
    assert Run.objects.filter(agent=agent).count() == 2
