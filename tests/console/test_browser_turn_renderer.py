"""Web chat through the one turn renderer (static/console/turn.js), in Debian's chromium against daphne + a real
Celery worker: highlighted code with a copy button, tables, a generated image inline, and an approval decided on
the Approvals page reaching a chat tab that was reloaded while the run waited — with no console error."""

from __future__ import annotations

import base64

import pytest

from agenticos.models import Membership
from tests import factories
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000
# A 1×1 PNG: what an image model returned, as the store keeps it.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")


def sign_in(page, base_url, email):
    page.goto(f"{base_url}/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/")


def console_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def member(org, email, role="owner"):
    user = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=user, role=role)
    return user


def test_code_is_highlighted_with_a_copy_button_and_a_generated_image_shows_inline(live_server_url, browser):
    from agents.models import Conversation, Message
    from capabilities.generated_media import store

    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com")
    agent = factories.published_agent(org, owner, name="Painter")
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="Paint")
    image = store.save(organization_id=org.pk, run_id=None, conversation_id=conversation.pk, kind="image", data=PNG,
                       media_type="image/png", name="sunset")
    answer = ("Here is the code:\n\n```python\ndef greet(name):\n    return f'hi {name}'\n```\n\n"
              "| Region | Sales |\n|---|---|\n| EU | 3 |\n| US | 5 |\n\n"
              f"And the picture: [sunset.png](/api/v1/generated/{image.filename})")
    Message.objects.create(conversation=conversation, role="user", content="Paint me something")
    Message.objects.create(conversation=conversation, role="assistant", author_label="Painter", content=answer,
                           parts=[{"type": "text", "text": answer}])

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server_url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, "owner@example.com")
    page.goto(f"{live_server_url}/chat/{conversation.pk}/")

    code = page.locator(".answer pre.code-block code.hljs")
    code.wait_for()
    assert code.get_attribute("data-language") == "python"
    assert code.locator(".hljs-keyword").first.text_content() == "def"  # highlighted, not just a grey box
    copy = page.locator(".answer pre.code-block [data-copy]")
    assert copy.text_content() == "Copy"
    copy.click()
    page.wait_for_function("() => document.querySelector('[data-copy]').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == "def greet(name):\n    return f'hi {name}'"

    cells = page.locator(".answer .table-wrap table td").all_text_contents()
    assert cells == ["EU", "3", "US", "5"]

    figure = page.locator("figure[data-generated=image]")
    img = figure.locator("img")
    assert img.get_attribute("src") == f"/api/v1/generated/{image.filename}"
    page.wait_for_function("() => document.querySelector('figure[data-generated=image] img').naturalWidth === 1")
    assert figure.get_by_role("link", name="Download").get_attribute("href") == (
        f"/api/v1/generated/{image.filename}?download=1")
    page.screenshot(path=str(ARTIFACTS / "turn-renderer-code-table-image.png"), full_page=True)
    assert errors == []


def test_an_approval_decided_on_the_approvals_page_reaches_a_chat_tab_reloaded_while_the_run_waited(
    live_server_url, browser
):
    org = factories.organization(name="Acme")
    approver = member(org, "approver@example.com")
    factories.published_agent(org, approver, name="Gated", capabilities=[
        {"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}])

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    chat = context.new_page()
    chat.set_default_timeout(TIMEOUT)
    errors = console_errors(chat)
    sign_in(chat, live_server_url, "approver@example.com")
    chat.goto(f"{live_server_url}/chat/")
    chat.get_by_label("Message").fill("Draw a chart please")
    chat.get_by_role("button", name="Send").click()
    chat.wait_for_selector("[data-approval]")
    chat.wait_for_function("() => location.pathname !== '/chat/'")
    chat.reload()  # the new page's socket never took part in the run
    chat.wait_for_selector("[data-approval]")

    approvals = context.new_page()
    approvals.set_default_timeout(TIMEOUT)
    approvals.goto(f"{live_server_url}/approvals/")
    approvals.get_by_role("button", name="Approve").click()
    approvals.wait_for_selector(".flash")

    # Nobody touches the chat tab: the decision and the continuation arrive by themselves.
    chat.wait_for_selector("svg.chart-svg")
    chat.wait_for_function("() => !document.querySelector('[data-approval]') && "
                           "document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert chat.locator("[data-step]").last.get_attribute("data-status") == "ok"
    assert chat.locator("[data-decision]").count() == 0
    chat.screenshot(path=str(ARTIFACTS / "turn-renderer-approval-elsewhere.png"), full_page=True)
    assert errors == []
