"""Regenerate and edit in place, the version arrows, and 👍/👎 — in Debian's chromium against daphne + a real
Celery worker, the model scripted through the real runner. Regenerate twice keeps one answer on screen with
"3 / 3"; the arrows walk back to the first; a reload and another tab show the same version; the next turn's
request to the model carries that branch's history. Edit forks at the person's message. A 👎 with a comment is
in Activity and becomes an evaluation case in one click. At 1440 and 390 px; no console error."""

from __future__ import annotations

import pytest
from pydantic_ai.models.function import FunctionModel

from agents.models import Feedback, Message, Run
from evals.models import Case
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import send, wait_idle
from tests.console.test_browser_chat_actions import chat_page, member, press
from tests.runner.test_branches import said

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VERSION_JS = "() => Array.from(document.querySelectorAll('.turn-assistant [data-version-of]')).map(v => v.textContent)"


def recording_model(requests: list[list[str]]):
    """Answers "Answer N" and keeps what each request carried (the history and the prompt, as text)."""

    async def stream(messages, info):
        requests.append(said(messages))
        yield f"Answer {len(requests)}"

    return FunctionModel(stream_function=stream, model_name="scripted")


def answers_are(page, expected: list[str]) -> None:
    page.wait_for_function("(want) => JSON.stringify(Array.from(document.querySelectorAll('.turn-assistant .answer'))"
                           ".map(a => a.textContent.trim())) === JSON.stringify(want)"
                           " && document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'",
                           arg=expected)


@pytest.mark.parametrize("width", [1440, 390])
def test_regenerate_twice_walk_back_reload_and_the_next_turn_carries_the_branch_on_screen(
        live_server_url, browser, scripted_model, width):
    requests: list[list[str]] = []
    scripted_model(recording_model(requests))
    org = factories.organization(name="Acme")
    member(org, "asker@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    page, errors = chat_page(browser, live_server_url, "asker@example.com", agent, width)

    send(page, "Tell me a fact")
    wait_idle(page, 1)
    answers_are(page, ["Answer 1"])
    for expected in ("Answer 2", "Answer 3"):
        page.locator(".turn-assistant [data-action=regenerate]").wait_for()
        press(page.locator(".turn-assistant [data-action=regenerate]"), width)
        answers_are(page, [expected])
        page.locator(".turn-assistant [data-version-of]").wait_for()
    assert page.evaluate(VERSION_JS) == ["3 / 3"]
    # One question, three answers to it: regenerating asked the same question again, with the same history.
    assert requests == [["user: Tell me a fact"]] * 3
    assert Message.objects.filter(role="user").count() == 1
    assert Run.objects.filter(agent=agent).count() == 3

    # The arrows walk the versions; the first has no "previous".
    for shown in ("Answer 2", "Answer 1"):
        press(page.locator("[data-version-previous]"), width)
        answers_are(page, [shown])
    assert page.evaluate(VERSION_JS) == ["1 / 3"]
    assert page.locator("[data-version-previous]").is_disabled()
    if width < 500:
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"chat-versions-{width}.png"), full_page=True)

    # A reload and another tab show the same version.
    page.reload()
    answers_are(page, ["Answer 1"])
    assert page.evaluate(VERSION_JS) == ["1 / 3"]
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector(".turn-assistant [data-version-of]")
    assert other.evaluate(VERSION_JS) == ["1 / 3"]
    other.close()

    # The next turn's request carries the branch on screen: the first answer, not the newest.
    send(page, "And another")
    answers_are(page, ["Answer 1", "Answer 4"])
    assert requests[-1] == ["user: Tell me a fact", "assistant: Answer 1", "user: And another"]

    # Edit the first message: the conversation forks there; the arrows on the message bring the old branch back.
    page.locator(".turn-user [data-action=edit]").first.wait_for()
    press(page.locator(".turn-user [data-action=edit]").first, width)
    page.locator("[data-editing]").wait_for()
    page.get_by_label("Message").fill("Tell me a fact about owls")
    press(page.get_by_role("button", name="Send"), width)
    answers_are(page, ["Answer 5"])
    assert requests[-1] == ["user: Tell me a fact about owls"]
    page.locator(".turn-user [data-version-of]").wait_for()
    assert page.locator(".turn-user [data-version-of]").text_content() == "2 / 2"
    press(page.locator(".turn-user [data-version-previous]"), width)
    answers_are(page, ["Answer 1", "Answer 4"])
    assert page.evaluate("() => Array.from(document.querySelectorAll('.turn-user .bubble')).map(b => b.textContent)") \
        == ["Tell me a fact", "And another"]
    assert errors == []


def test_a_thumbs_down_with_a_comment_is_in_activity_and_becomes_an_evaluation_case(
        live_server_url, browser, scripted_model):
    requests: list[list[str]] = []
    scripted_model(recording_model(requests))
    org = factories.organization(name="Acme")
    asker = member(org, "asker@example.com", role="admin")  # runs:view and edit on the agent: sees it in Activity
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    page, errors = chat_page(browser, live_server_url, "asker@example.com", agent)

    send(page, "What is the capital of Australia?")
    wait_idle(page, 1)
    page.locator("[data-feedback=down]").wait_for()
    page.locator("[data-feedback=down]").click()
    page.locator("[data-feedback-comment]").fill("Wrong: it is Canberra, not Sydney.")
    page.get_by_role("button", name="Send feedback").click()
    page.wait_for_selector("[data-feedback-comment]", state="detached")
    feedback = Feedback.objects.get()
    assert (feedback.rating, feedback.comment, feedback.user_id) == ("down", "Wrong: it is Canberra, not Sydney.",
                                                                     asker.pk)
    assert feedback.run.prompt == "What is the capital of Australia?"
    assert page.locator("[data-feedback=down]").get_attribute("aria-pressed") == "true"
    page.reload()
    page.locator("[data-feedback=down][aria-pressed=true]").wait_for()

    page.goto(f"{live_server_url}/activity/")
    page.locator("[data-run-feedback] .badge.danger").wait_for()
    page.locator("[data-feedback-link]").click()
    row = page.locator(f"[data-feedback-row='{feedback.pk}']")
    assert "Canberra" in row.locator("[data-feedback-comment]").text_content()
    page.screenshot(path=str(ARTIFACTS / "activity-feedback-1440.png"), full_page=True)
    row.locator("[data-make-case]").click()
    page.wait_for_url(f"**/agents/{agent.pk}/evals/")
    case = Case.objects.get()
    assert case.prompt == "What is the capital of Australia?" and case.suite.name == "Feedback from chat"
    assert "Canberra" in case.checks[0]["label"]
    feedback.refresh_from_db()
    assert feedback.eval_case_id == case.pk
    assert errors == []
