"""Long forms in sections and styled selects; the approvals page's and the Builder's version dates in the console's
one format (issue 45, "The look"), in Debian's chromium at 1440 and 390 px in both themes, as a person sees them:
the channel form's sections (the bot, credentials, voice notes) each with a heading and a short intro, the help
beside its field on a wide screen and under it on a phone; selects in the inputs' colours in both themes with the
browser's grey gone, still changed by the keyboard (the native control); approvals "asked 5 minutes ago" with the
full date on hover, the version table likewise. axe finds nothing serious; no console error. Screenshots:
test-artifacts/console/look5-{channels-form,approvals,versions}-<theme>-<width>.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from governance.models import Approval
from tests import factories
from tests.axe import assert_clean
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS, make_turn
from tests.console.test_browser_chat_actions import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 60_000
SIZES = [(1440, "light"), (1440, "dark"), (390, "light"), (390, "dark")]

STYLE_JS = """(selector) => { const s = getComputedStyle(document.querySelector(selector));
  return {appearance: s.appearance, background: s.backgroundColor, color: s.color, image: s.backgroundImage}; }"""


def page_at(browser, live_server_url, email, width, theme):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=theme, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, email)
    return context, page, errors


@pytest.mark.parametrize(("width", "theme"), SIZES)
def test_the_channel_form_is_in_sections_and_its_selects_wear_the_design(live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    member(org, "owner@example.com", "owner")
    context, page, errors = page_at(browser, live_server_url, "owner@example.com", width, theme)
    page.goto(f"{live_server_url}/channels/")
    form = page.locator("form[data-add-bot]")
    legends = [t.strip() for t in form.locator("fieldset.form-section > legend").all_text_contents()]
    assert legends == ["The bot", "Credentials", "Voice notes"]
    for section in form.locator("fieldset.form-section").all():
        assert section.locator(".section-intro").text_content().strip()  # each says in a line what it is for

    # The token's help: beside the field on a wide screen, under it on a phone.
    token = form.get_by_label("Bot token").bounding_box()
    help_box = form.get_by_text("Write-only: stored sealed in the vault").bounding_box()
    if width > 1000:
        assert help_box["x"] >= token["x"] + token["width"], (help_box, token)
    else:
        assert help_box["y"] >= token["y"] + token["height"], (help_box, token)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1

    # Selects: no native grey, the inputs' own colours in this theme, a drawn chevron.
    select = STYLE_JS
    platform = page.evaluate(select, "#b-platform")
    text_input = page.evaluate(select, "#b-name")
    assert platform["appearance"] == "none"
    assert platform["background"] == text_input["background"] and platform["color"] == text_input["color"]
    assert "linear-gradient" in platform["image"]
    # …and still the native control: the keyboard changes it, and the form follows (Slack's fields go).
    assert form.locator("#b-app").is_visible()
    page.locator("#b-platform").focus()
    page.keyboard.press("ArrowDown")
    assert page.locator("#b-platform").input_value() != "slack"
    form.locator("#b-app").wait_for(state="hidden")
    page.screenshot(path=str(ARTIFACTS / f"look5-channels-form-{theme}-{width}.png"), full_page=True)
    assert_clean(page, f"channels form {theme} {width}")
    assert errors == []
    context.close()


@pytest.mark.parametrize(("width", "theme"), [(1440, "light"), (390, "dark")])
def test_approvals_and_the_version_table_say_when_in_the_one_format(live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, owner, name="Helper")
    _c, run = make_turn(org, owner, agent)
    now = timezone.now()
    pending = Approval.objects.create(organization=org, run=run, tool_call_id="a", tool_id="t", tool_name="send_email",
                                      args={"to": "x@example.com"}, status="pending")
    Approval.objects.filter(pk=pending.pk).update(created_at=now - timedelta(minutes=5))
    decided = Approval.objects.create(organization=org, run=run, tool_call_id="b", tool_id="t", tool_name="delete_row",
                                      args={}, status="approved", decided_by=owner, decided_at=now - timedelta(hours=3))
    Approval.objects.filter(pk=decided.pk).update(created_at=now - timedelta(hours=4))

    context, page, errors = page_at(browser, live_server_url, "owner@example.com", width, theme)
    page.goto(f"{live_server_url}/approvals/")
    asked = page.locator(f'[data-approval-row="{pending.pk}"] time[data-approval-asked]')
    page.wait_for_function("(el) => /ago/.test(el.textContent)", arg=asked.element_handle())
    assert asked.text_content() == "5 minutes ago"
    assert asked.get_attribute("title") and str(now.year) in asked.get_attribute("title")  # the full date on hover
    page.goto(f"{live_server_url}/approvals/?status=approved")
    when = page.locator(f'[data-approval-row="{decided.pk}"] time[data-approval-decided]')
    page.wait_for_function("(el) => /ago/.test(el.textContent)", arg=when.element_handle())
    assert when.text_content() == "3 hours ago"
    assert "Decided by owner@example.com" in page.locator(f'[data-approval-row="{decided.pk}"]').inner_text()
    page.screenshot(path=str(ARTIFACTS / f"look5-approvals-{theme}-{width}.png"), full_page=True)
    assert_clean(page, f"approvals {theme} {width}")

    # The Builder's version table: relative, the full date on hover.
    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    version = page.locator("tr[data-version] time[data-when=relative]").first
    version.scroll_into_view_if_needed()
    page.wait_for_function("(el) => !/^\\d{4}-/.test(el.textContent)", arg=version.element_handle())
    assert version.text_content() == "now" or version.text_content().endswith("ago")
    assert str(now.year) in version.get_attribute("title")
    version.screenshot(path=str(ARTIFACTS / f"look5-versions-{theme}-{width}.png"))
    assert errors == []
    context.close()
