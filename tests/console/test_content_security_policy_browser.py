"""The console under its Content-Security-Policy in Debian's chromium, against daphne + a real Celery worker and
the local fake OpenAI server: web chat with a streamed answer (markdown, a highlighted code block) and a drawing
whose button runs its own handler, the Builder with its test chat answering, an embed's edit page with both
previews (the real widget.js, the real hosted page), the Channels page and the trigger form's cron read-back.
Not one `securitypolicyviolation` event in any frame, not one console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.fakes.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000

# In every frame (the page, the previews, a drawing's sandbox): a refused load or script is reported as a
# console error, which the page's listener below collects with Chromium's own messages.
REPORT_VIOLATIONS = """document.addEventListener('securitypolicyviolation', (e) => {
  console.error('securitypolicyviolation: ' + e.effectiveDirective + ' ' + (e.blockedURI || 'inline') + ' at ' +
                location.href);
});"""

DRAWING = ('<button id="go" onclick="this.textContent = \'ran\'; agenticos.followUp(\'Chart it\')">Go</button>'
           '<script>document.getElementById("go").dataset.script = "ran";</script>')


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def watched_page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    page.add_init_script(REPORT_VIOLATIONS)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page, problems


def an_agent_with_a_draft(org, owner, fake_openai):
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Fake",
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Helper", spec={
        "name": "Helper", "instructions": "Help.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "clock"}]})
    agent_services.publish_agent(actor=actor, agent=agent, note="v1")
    agent_services.update_agent(actor=actor, agent=agent, spec={**agent.draft_spec, "instructions": "Help more."})
    return agent


def test_the_main_pages_run_under_the_policy_without_a_violation(live_server_url, browser, fake_openai):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = an_agent_with_a_draft(org, owner, fake_openai)
    widget = factories.embed(agent, kind="widget", created_by=owner)
    hosted = factories.embed(agent, kind="page", created_by=owner)
    page, problems = watched_page(browser)
    sign_in(page, live_server_url, "owner@example.com")

    # Web chat: the answer streams in and is drawn (markdown, a highlighted block with its Copy button).
    fake_openai.queue(Reply.text("Here is **the plan**:\n\n```python\nprint('hi')\n```\n"))
    page.goto(f"{live_server_url}/chat/?agent={agent.pk}")
    page.get_by_label("Message").fill("Plan my week")
    page.get_by_role("button", name="Send").click()
    page.locator(".turn-usage").wait_for()
    assert page.locator(".answer strong").text_content() == "the plan"
    assert page.locator("pre.code-block code.hljs").count() == 1
    # A drawing in the chat: its frame runs the drawing's script and its handler (its own sandboxed policy, not
    # the page's), and the follow-up it offers reaches the page.
    page.evaluate("""(call) => {
      const box = document.createElement('div'); box.id = 'visual-under-test'; document.body.appendChild(box);
      window.AgenticVisuals.render(call, box);
    }""", {"tool_name": "draw", "tool_call_id": "c1", "result": {"visual_id": "c1"},
           "args": {"kind": "html", "title": "Go", "content": DRAWING}})
    drawing = page.frame_locator("#visual-under-test iframe")
    drawing.locator("#go[data-script=ran]").wait_for()
    drawing.locator("#go").click()
    assert drawing.locator("#go").text_content() == "ran"
    page.locator("#visual-under-test [data-visual-follow-up]").wait_for()

    # The Builder and its test chat, answering from the draft.
    fake_openai.queue(Reply.text("Ahoy from draft."))
    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("Hello")
    chat.get_by_role("button", name="Send to the draft").click()
    chat.locator("[data-turn-usage]").wait_for()
    assert chat.locator("[data-part=text]").text_content().strip() == "Ahoy from draft."

    # An embed's edit page: the widget's preview opens its panel; a typed title reaches it.
    page.goto(f"{live_server_url}/agents/{agent.pk}/embeds/{widget.pk}/")
    preview = page.frame_locator("[data-embed-preview]")
    preview.locator("[data-agenticos-widget]").wait_for(state="attached")
    with page.expect_response(lambda r: "/preview/" in r.url and "title=Front+desk" in r.url):
        page.locator("[data-embed-edit] input[name=title]").fill("Front desk")
    page.goto(f"{live_server_url}/agents/{agent.pk}/embeds/{hosted.pk}/preview/")
    page.locator("#input").fill("Hi")
    page.locator("#send").click()
    page.locator("#turns").filter(has_text="This is a preview").wait_for()

    # Channels (the add-a-bot form follows the platform) and the trigger form's cron read back in words.
    page.goto(f"{live_server_url}/channels/")
    page.goto(f"{live_server_url}/agents/{agent.pk}/triggers/")
    with page.expect_response(lambda r: "/triggers/describe" in r.url):
        page.get_by_label("Cron (5 fields, schedules)").fill("0 9 * * 1-5")
    page.locator("[data-cron-preview]").filter(has_text="9").wait_for()

    assert problems == [], problems
