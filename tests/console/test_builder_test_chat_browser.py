"""The Builder's test chat in a real browser (Debian chromium via Playwright) against daphne + a real Celery worker,
the model answering through the real OpenAI client from the local fake OpenAI server: the draft answers without
being published, the run is a draft run, and a missing capability's card enables it on the draft. The test chat is
the web chat (issue 44 §3): the one turn renderer draws markdown, a chart as a chart, and an approval card with the
exact arguments (run_python's code). At 1440 and 390 px, with no console error."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents.models import AgentVersion, Run
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.fakes.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
DRAFT_WORDS = "DRAFT: answer in exactly three words."


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    # daphne (a subprocess) checks the draft's profile address as a publish does: the fake listens on loopback.
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def watched_page(browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page, problems


def agent_with_a_changed_draft(org, owner, fake_openai):
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Fake",
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Helper", spec={
        "name": "Helper", "instructions": "PUBLISHED instructions.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "clock"}]})
    agent_services.publish_agent(actor=actor, agent=agent, note="v1")
    spec = {**agent.draft_spec, "instructions": DRAFT_WORDS}
    agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    return agent


def system_text(request) -> str:
    return json.dumps([m for m in request.json["messages"] if m["role"] == "system"])


@pytest.mark.parametrize("width", [1440, 390])
def test_the_draft_answers_in_the_builder_and_the_run_is_a_draft_run(live_server_url, browser, fake_openai, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = agent_with_a_changed_draft(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Ahoy from draft."))

    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("Hello?")
    chat.get_by_role("button", name="Send to the draft").click()
    chat.locator("[data-turn-usage]").wait_for()
    assert chat.locator("[data-part=text]").text_content().strip() == "Ahoy from draft."
    page.screenshot(path=str(ARTIFACTS / f"builder-test-chat-{width}.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    # The draft's instructions reached the model, through the real OpenAI client; nothing was published.
    [request] = fake_openai.chat_requests
    assert DRAFT_WORDS in system_text(request)
    run = Run.objects.select_related("version").get(agent=agent)
    assert run.is_draft and run.version.number == 0 and run.status == "completed"
    assert list(AgentVersion.objects.filter(agent=agent, number__gt=0).values_list("number", flat=True)) == [1]
    # The chat list does not show the Builder's conversation.
    page.goto(f"{live_server_url}/chat/")
    assert page.locator("text=Hello?").count() == 0
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_a_missing_capability_card_in_the_test_chat_enables_it_on_the_draft(live_server_url, browser, fake_openai,
                                                                            width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = agent_with_a_changed_draft(org, owner, fake_openai)
    fake_openai.queue(
        Reply.tool_call("request_capability", {"capability_id": "web_fetch", "reason": "I must read that page."}),
        Reply.text("Web pages would let me read it."),
    )

    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("Read https://example.com for me")
    chat.get_by_role("button", name="Send to the draft").click()
    card = page.locator("[data-capability-card=web_fetch]")
    card.wait_for()
    assert "I must read that page." in card.text_content()
    chat.locator("[data-turn-usage]").wait_for()
    card.get_by_role("button", name="Enable it").click()
    result = card.locator("[data-capability-result]")
    result.wait_for()
    assert result.get_attribute("data-capability-result") == "ok"
    # The draft had unpublished changes: it waits in the draft for the Builder.
    assert "publish it from the Builder" in result.text_content()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"builder-test-chat-card-{width}.png"), full_page=True)
    agent.refresh_from_db()
    assert "web_fetch" in {b["id"] for b in agent.draft_spec["capabilities"]}
    assert not AgentVersion.objects.filter(agent=agent, number=2).exists()
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_an_approval_in_the_test_chat_is_decided_on_its_card_and_the_draft_goes_on(live_server_url, browser,
                                                                                   fake_openai, width):
    from governance.models import Approval
    from tests.runner.test_execute import CHART_ARGS

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = agent_with_a_changed_draft(org, owner, fake_openai)
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    spec = {**agent.draft_spec, "capabilities": [{"id": "charts", "tool_approval": {"create_chart": "required"}}]}
    agent_services.update_agent(actor=actor, agent=agent, spec=spec)  # the approval is the draft's, not v1's
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS), Reply.text("Your chart is drawn."))

    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("Chart Q1 and Q2")
    chat.get_by_role("button", name="Send to the draft").click()
    card = chat.locator("[data-approval]")
    card.wait_for()
    assert "create_chart" in card.text_content()
    assert card.locator("[data-arg=title]").text_content() == "Sales"  # the exact arguments
    card.get_by_role("button", name="Approve").click()
    chat.locator("[data-turn-usage]").wait_for()
    # The usage line may land before the last text frame is drawn: wait for the answer itself.
    expect(chat.locator("[data-part=text]").last).to_have_text("Your chart is drawn.", timeout=30_000)
    assert chat.locator("figure[data-chart] svg").count() == 1  # approved, the chart is drawn as a chart
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"builder-test-chat-approval-{width}.png"), full_page=True)
    approval = Approval.objects.get(run__agent=agent)
    assert approval.status == "approved" and approval.run.is_draft
    assert Run.objects.get(agent=agent).status == "completed"
    assert problems == []


CODE = "total = sum(range(10))\nprint(total)"


@pytest.mark.parametrize("width", [1440, 390])
def test_the_test_chat_draws_turns_like_web_chat_a_chart_markdown_and_the_code_to_approve(
        live_server_url, browser, fake_openai, width):
    from governance.models import Approval
    from tests.runner.test_execute import CHART_ARGS

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = agent_with_a_changed_draft(org, owner, fake_openai)
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    spec = {**agent.draft_spec, "capabilities": [
        {"id": "charts"}, {"id": "code_execution", "tool_approval": {"run_python": "required"}}]}
    agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    fake_openai.queue(
        Reply.tool_call("create_chart", CHART_ARGS),
        Reply.tool_call("run_python", {"code": CODE}),
        Reply.text("**Sales** rose:\n\n| Quarter | Sales |\n|---|---|\n| Q1 | 3 |\n| Q2 | 5 |"),
    )

    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("Chart the sales, then add them up")
    chat.get_by_role("button", name="Send to the draft").click()

    # The chart is a chart (the renderer's SVG), not the tool's JSON.
    chart = chat.locator("figure[data-chart]")
    chart.wait_for()
    assert chart.locator("svg").count() == 1
    assert '"chart_type"' not in chat.locator("[data-transcript]").inner_text()
    # The approval card shows exactly the code that would run, as web chat and the Approvals page do.
    card = chat.locator("[data-approval]")
    card.wait_for()
    assert card.get_attribute("data-tool") == "run_python"
    assert card.locator("[data-arg=code]").text_content() == CODE
    page.screenshot(path=str(ARTIFACTS / f"builder-test-chat-renderer-{width}.png"), full_page=True)
    card.get_by_role("button", name="Reject").click()

    # Rejected, the draft goes on and its markdown answer is rendered: bold and a table, not asterisks and pipes.
    chat.locator("[data-turn-usage]").wait_for()
    # The usage line can be drawn before the answer's last streamed cells under load: wait for the whole table.
    page.wait_for_function("""() => {
        const parts = document.querySelectorAll('[data-test-chat] [data-part=text]');
        const last = parts[parts.length - 1];
        return !!last && last.querySelectorAll('table td').length === 4 && last.querySelector('table td:last-child')
            && last.querySelectorAll('table td')[3].textContent === '5';
    }""")
    answer = chat.locator("[data-part=text]").last
    assert answer.locator("strong").text_content() == "Sales"
    assert answer.locator("table td").all_text_contents() == ["Q1", "3", "Q2", "5"]
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    approval = Approval.objects.get(run__agent=agent)
    assert approval.status == "rejected" and approval.args == {"code": CODE}
    # The page stayed the Builder's: a test conversation is no conversation of the Chat list.
    assert page.url.endswith(f"/agents/{agent.pk}/")
    assert problems == []
