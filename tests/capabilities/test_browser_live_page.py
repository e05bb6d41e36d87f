"""What a person sees on the live view page (`/browse/{run_id}/{call_id}`), in Debian's Chromium against the
console served by daphne: the page the agent has open appears as a picture, the steps so far are listed, and
"Take control" pauses the agent until "Hand back to the agent"; the browse then goes on and finishes. The run
executes in this test process (the worker's part), the page and its socket in daphne — they meet only through
Redis and the channel layer, as a worker and the web process do."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agents.models import RunStatus
from tests import browser_servers  # the person's browser: the tests' headless shell
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_chat_socket import session_cookie
from tests.runner.test_execute import run_now, start

CHROMIUM = Path("/usr/bin/chromium")
CALL = "call_page_1"
TIMEOUT = 30_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


@pytest.fixture
def console():
    from tests.fakes.live_daphne import serving_daphne

    with serving_daphne("config.asgi:application", "browse-live") as base:
        yield base


def test_the_person_sees_the_page_and_taking_control_pauses_the_agent(org, owner, fake_openai, browser_env, site,
                                                                      console):
    from playwright.sync_api import sync_playwright

    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Ask a person", "start_url": f"http://{SITE}:{site.port}/form"},
                        id=CALL),
        step("ask_human", answer="Someone must check the form."),
        step("done", answer="Checked."),
        Reply.text("Done."),
    )
    run = start(org, owner, agent, version, prompt="check the form")
    name, value = session_cookie(owner, org).split("=", 1)
    worker = threading.Thread(target=run_now, args=(run,), daemon=True)
    worker.start()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_servers.CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=120_000)
        try:
            context = browser.new_context()
            context.add_cookies([{"name": name, "value": value, "url": console}])
            page = context.new_page()
            page.set_default_timeout(TIMEOUT)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{console}/browse/{run.pk}/{CALL}")
            picture = page.locator("[data-browse-frame]")
            picture.wait_for(state="visible")
            assert picture.get_attribute("src").startswith("data:image/jpeg;base64,")
            status = page.locator("[data-browse-status]")
            page.wait_for_function("() => document.querySelector('[data-browse-status]').textContent"
                                   ".includes('Someone must check the form.')")
            assert "needs a person" in status.inner_text()
            assert "ask_human" in page.locator("[data-browse-steps]").inner_text()
            asked = len(fake_openai.chat_requests)
            page.get_by_role("button", name="Take control").click()
            page.get_by_role("button", name="Hand back to the agent").wait_for(state="visible")
            assert "You have the browser" in status.inner_text()
            picture.click(position={"x": 5, "y": 5})  # a person's click on the page itself
            assert len(fake_openai.chat_requests) == asked  # the agent waits while the person has the tab
            page.get_by_role("button", name="Hand back to the agent").click()
            page.wait_for_function("() => document.querySelector('[data-browse-status]').textContent"
                                   ".includes('This browse is over.')")
            assert "a person took control" in page.locator("[data-browse-steps]").inner_text()
            assert errors == []
        finally:
            browser.close()
    worker.join(timeout=120)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    [result] = tool_results(run)
    assert result["outcome"] == "done"
