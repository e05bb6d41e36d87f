"""Web chat's everyday habits (issue 45 §5, §7, §9) in a real browser (Debian chromium via Playwright) against daphne +
a real Celery worker, the model answering through the real OpenAI client from the local fake OpenAI server: LaTeX in
an answer drawn by the vendored KaTeX (code and prices keep their dollars), an agent's starter prompts on an empty
chat sending what they say, and the dark theme chosen with the header's toggle and remembered. At 1440 and 390 px,
with no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.fakes.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
STARTERS = ["Summarize my week", "Draft a polite reminder email"]
MATH = ("Euler: $e^{i\\pi} + 1 = 0$, and\n\n$$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n\n"
        "Prices stay prices: $5 and $10. Code keeps its dollars: `echo $HOME`.")


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def settled(condition, timeout: float = 30.0) -> bool:
    """The browser's POST landed (the toggle sends it without waiting)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def watched_page(browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page, problems


def published_agent_on_the_fake(fake_openai, **spec):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Fake",
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Helper", spec={
        "name": "Helper", "instructions": "Be brief.", "model_profile_id": str(profile.pk), **spec})
    agent_services.publish_agent(actor=actor, agent=agent, note="v1")
    return agent


def last_user_text(request) -> str:
    return [m for m in request.json["messages"] if m["role"] == "user"][-1]["content"]


@pytest.mark.parametrize("width", [1440, 390])
def test_starter_prompts_start_the_chat_and_math_is_drawn_by_katex(live_server_url, browser, fake_openai, width):
    published_agent_on_the_fake(fake_openai, starter_prompts=STARTERS)
    fake_openai.queue(Reply.text(MATH))
    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")

    starters = page.locator("[data-starters]")
    starters.wait_for()
    assert starters.locator("[data-starter]").all_text_contents() == STARTERS
    page.screenshot(path=str(ARTIFACTS / f"chat-starters-{width}.png"), full_page=True)
    starters.get_by_role("button", name=STARTERS[1]).click()
    page.locator("[data-turn-usage]").wait_for()
    assert page.locator("[data-starters]").count() == 0  # the conversation started: the prompts gave way
    assert page.locator(".turn-user .bubble").text_content() == STARTERS[1]
    [request] = fake_openai.chat_requests
    content = last_user_text(request)
    assert STARTERS[1] in (content if isinstance(content, str) else str(content))

    answer = page.locator("[data-part=text]").last
    assert answer.locator(".katex").count() == 2  # inline and display
    assert answer.locator(".katex-display").count() == 1
    # The formula is typeset (KaTeX's MathML carries the TeX it was drawn from), not shown as dollars and braces.
    assert answer.locator("annotation[encoding='application/x-tex']").first.text_content() == "e^{i\\pi} + 1 = 0"
    text = answer.inner_text()
    assert "$e^" not in text and "$$" not in text
    assert "$5 and $10" in text and answer.locator("code").text_content() == "echo $HOME"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"chat-math-{width}.png"), full_page=True)

    # Reopened, the same: the stored answer goes through the same renderer.
    page.reload()
    page.locator("[data-part=text] .katex-display").wait_for()
    assert page.locator("[data-starters]").count() == 0
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_the_dark_theme_is_chosen_with_the_toggle_and_remembered(live_server_url, browser, fake_openai, width):
    published_agent_on_the_fake(fake_openai)
    page, problems = watched_page(browser, width)
    page.emulate_media(color_scheme="light")
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")

    def background() -> str:
        return page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor")

    light = background()
    toggle = page.get_by_role("button", name="Dark theme")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    assert toggle.get_attribute("aria-pressed") == "true"
    dark = background()
    assert dark != light
    page.screenshot(path=str(ARTIFACTS / f"chat-dark-{width}.png"), full_page=True)

    page.goto(f"{live_server_url}/activity/")  # remembered on the next page, from its first paint
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark" and background() == dark

    # Remembered for the person, not only this browser: another browser they sign in from opens dark.
    from agenticos.models import User

    assert settled(lambda: User.objects.get(email="owner@example.com").theme == "dark")
    other = browser.new_context(viewport={"width": width, "height": 900}, color_scheme="light").new_page()
    other.set_default_timeout(TIMEOUT)
    sign_in(other, live_server_url, "owner@example.com")
    other.goto(f"{live_server_url}/chat/")
    assert other.evaluate("() => document.documentElement.dataset.theme") == "dark"
    assert other.evaluate("() => getComputedStyle(document.documentElement).backgroundColor") == dark
    other.context.close()

    page.get_by_role("button", name="Dark theme").click()
    assert background() == light
    assert settled(lambda: User.objects.get(email="owner@example.com").theme == "light")

    # "Follow the system" in the profile: the system's setting rules again, a dark system gets the dark theme.
    page.goto(f"{live_server_url}/settings/")
    page.get_by_label("Theme", exact=True).select_option("")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Profile saved.").wait_for()
    assert User.objects.get(email="owner@example.com").theme == ""
    page.emulate_media(color_scheme="dark")
    page.reload()
    assert page.evaluate("() => document.documentElement.dataset.theme") is None
    assert background() == dark
    assert page.get_by_role("button", name="Dark theme").get_attribute("aria-pressed") == "true"
    assert problems == []


def test_a_tab_reloaded_while_the_agent_answers_follows_the_answer_to_its_end(live_server_url, browser, fake_openai):
    """A person reloads mid-answer: the reopened page says the turn is going on and draws the answer when it comes,
    with no second reload (before, it showed the question alone until the person reloaded again)."""
    from tests.console.test_browser_chat import send

    published_agent_on_the_fake(fake_openai)
    fake_openai.queue(Reply.text("The answer after a pause.", delay=8))
    page, problems = watched_page(browser, 1440)
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")
    send(page, "Take your time")
    page.wait_for_function("() => location.pathname !== '/chat/'")  # the conversation exists
    assert settled(lambda: len(fake_openai.chat_requests) == 1)  # the run waits on the model

    page.reload()
    page.wait_for_selector(".turn-user")
    assert page.locator("[data-transcript]").get_attribute("aria-busy") == "true"
    page.locator(".answer", has_text="The answer after a pause.").wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert page.locator(".answer").count() == 1
    assert problems == []
