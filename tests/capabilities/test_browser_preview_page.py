"""What a person sees of a browse in web chat (the browser binding's `preview`), in Debian's Chromium against the
console served by daphne, with the run on a real Celery worker and the browse on a real Chromium: while the browse
runs, its step says when a person is needed and why, and shows a small picture of the page, `preview_width` wide, that follows the page (a person's typing
on the live view shows up in it); it goes when the browse ends. With `preview` off the step keeps its "Watch the
browser" link and shows no picture. No console error."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.models import Run, RunStatus
from tests import browser_servers  # the person's browser: the tests' headless shell
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_chat_socket import session_cookie

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT = 30_000
CALL = "call_preview_page"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


@pytest.fixture(autouse=True)
def _orm_beside_playwright(monkeypatch):
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")
def console(django_db_setup):
    """One daphne for both tests (a start is 10–20 s on a loaded machine): it keeps nothing of a test's but the
    database rows, which are emptied after each."""
    from tests.fakes.live_daphne import serving_daphne

    with serving_daphne("config.asgi:application", "browse-preview") as base:
        yield base


def open_chat(context, url: str):
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    page.goto(url)
    # The chat page loads the preview module (console/templates/console/chat.html).
    assert page.locator("script[src$='console/browse-preview.js']").count() == 1
    return page


def browse_needing_a_person(fake_openai, site, call_id: str = CALL) -> None:
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Fill the form", "start_url": f"http://{SITE}:{site.port}/form"},
                        id=call_id),
        step("ask_human", answer="Someone must type the name."),
        step("done", answer="A person typed the name."),
        Reply.text("Done."),
    )


def take(context, url: str):
    """The person on the live view takes the tab of a browse that waits for one."""
    view = context.new_page()
    view.set_default_timeout(TIMEOUT)
    view.goto(url)
    view.locator("[data-browse-frame]").wait_for(state="visible")
    view.wait_for_function("() => document.querySelector('[data-browse-status]').textContent.includes('needs a person')")
    view.get_by_role("button", name="Take control").click()
    view.get_by_role("button", name="Hand back to the agent").wait_for(state="visible")
    return view


def hand_back(view) -> None:
    view.get_by_role("button", name="Hand back to the agent").click()
    view.wait_for_function("() => document.querySelector('[data-browse-status]').textContent.includes('This browse is over.')")
    view.close()


def test_a_running_browse_shows_its_page_small_on_its_step_and_it_follows_the_page(org, owner, fake_openai,
                                                                                 browser_env, site, console,
                                                                                 celery_worker):
    from playwright.sync_api import sync_playwright

    agent, _version = browsing_agent(org, owner, fake_openai, browser_env, preview_width=640)
    browse_needing_a_person(fake_openai, site)
    name, value = session_cookie(owner, org).split("=", 1)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_servers.CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=120_000)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.add_cookies([{"name": name, "value": value, "url": console}])
            page = open_chat(context, f"{console}/chat/?agent={agent.pk}")
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.get_by_label("Message").fill("fill the form")
            page.get_by_role("button", name="Send").click()

            preview = page.locator(f"[data-step={CALL}] + [data-browse-preview] img")
            preview.wait_for(state="visible")
            first = preview.get_attribute("src")
            assert first.startswith("data:image/jpeg;base64,")
            assert page.locator(f"[data-step={CALL}] [data-watch-browser]").get_attribute(
                "data-browse-preview") == "live"
            assert preview.evaluate("img => img.naturalWidth") == 640  # the frames are preview_width wide
            assert preview.bounding_box()["width"] <= 320  # small, on the step
            # The step says a person is needed, and why (browser_needs_person).
            note = page.locator(f"[data-step={CALL}] [data-needs-person]")
            note.wait_for(state="visible")
            assert "Someone must type the name." in note.text_content()
            run = Run.objects.get(agent=agent)

            view = take(context, f"{console}/browse/{run.pk}/{CALL}")
            picture = view.locator("[data-browse-frame]")
            picture.click(position={"x": 5, "y": 5})  # on the page's margin: focuses the picture
            view.keyboard.press("Tab")  # to the form's first field
            view.keyboard.type("Grace")
            # The page changed under the person's hands: the picture on the step follows it.
            page.wait_for_function(f"first => document.querySelector('[data-step={CALL}] + [data-browse-preview] img')"
                                   ".getAttribute('src') !== first", arg=first)
            hand_back(view)

            # The browse is over: the picture goes with it, the link stays.
            link = page.locator(f"[data-step={CALL}] [data-watch-browser]")
            page.wait_for_function(f"() => document.querySelector('[data-step={CALL}] [data-watch-browser]')"
                                   ".getAttribute('data-browse-preview') === 'ended'")
            assert page.locator("[data-browse-preview] img").count() == 0
            assert link.is_visible()
            page.locator(f"[data-step={CALL}][data-status=ok]").wait_for()
            assert note.count() == 0  # a browse that went on no longer asks for anyone
            page.wait_for_function("() => document.querySelector('[data-transcript]')"
                                   ".getAttribute('aria-busy') === 'false'")
            assert errors == []
        finally:
            browser.close()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert tool_results(run)[0]["outcome"] == "done"


def test_with_preview_off_the_step_links_to_the_live_view_and_shows_no_picture(org, owner, fake_openai,
                                                                              browser_env, site, console,
                                                                              celery_worker):
    from playwright.sync_api import sync_playwright

    agent, _version = browsing_agent(org, owner, fake_openai, browser_env, preview=False)
    browse_needing_a_person(fake_openai, site)
    name, value = session_cookie(owner, org).split("=", 1)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_servers.CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=120_000)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.add_cookies([{"name": name, "value": value, "url": console}])
            page = open_chat(context, f"{console}/chat/?agent={agent.pk}")
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.get_by_label("Message").fill("fill the form")
            page.get_by_role("button", name="Send").click()
            page.wait_for_function(f"() => (document.querySelector('[data-step={CALL}] [data-watch-browser]') || "
                                   "{getAttribute: () => null}).getAttribute('data-browse-preview') === 'off'")
            assert page.locator("[data-browse-preview] img").count() == 0
            run = Run.objects.get(agent=agent)
            hand_back(take(context, f"{console}/browse/{run.pk}/{CALL}"))
            page.wait_for_function("() => document.querySelector('[data-transcript]')"
                                   ".getAttribute('aria-busy') === 'false'")
            assert page.locator("[data-browse-preview] img").count() == 0
            assert errors == []
        finally:
            browser.close()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
