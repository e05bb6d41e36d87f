"""Web chat's message actions and keyboard, in Debian's chromium against daphne + a real Celery worker, with the
model scripted through the real runner: Copy on every message (read back from the clipboard), Regenerate on an
answer (the same prompt again, a second run whose answer takes the first one's place as a new version), Edit on
the person's message (its text back in the composer, sent as a new version of it: test_browser_branches walks
the versions); Enter sends, Shift+Enter breaks the line, Esc stops a running turn, ↑ in an empty composer edits
the last message; and a browse's "Watch the browser" link, live from the
browser_live frame and reopened from the browse_web result. At 1440 and 390 px (a touch screen: the actions are
there without a hover, taken by a tap, each a finger-sized target). No console error."""

from __future__ import annotations

import itertools

import pytest
from pydantic_ai.models.function import FunctionModel

from agenticos.models import Membership
from agents.models import Run, ToolCall
from tests import factories
from tests.console.conftest import ARTIFACTS, make_turn
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, send, sign_in, wait_idle
from tests.console.test_browser_stop import last_prompt, slow_unless_asked_quickly
from tests.console.test_browser_turn_renderer import console_errors
from tests.embeds.test_turn_renderer_surfaces import frame, publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def numbered_answers():
    """Each run answers 'Answer N to <prompt>': a regenerated answer is visibly a new one."""
    counter = itertools.count(1)

    async def stream(messages, info):
        yield f"Answer {next(counter)} to {last_prompt(messages)}"

    return FunctionModel(stream_function=stream, model_name="scripted")


def chat_page(browser, live_server_url, email, agent, width=1440):
    # A phone (390 px) is a touch screen: the actions must be there without a hover, and taken by a tap.
    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server_url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, email, then=f"/chat/?agent={agent.pk}")
    return page, errors


def member(org, email, role="member"):
    user = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=user, role=role)
    return user


ANSWERS_JS = "() => Array.from(document.querySelectorAll('.turn-assistant .answer')).map(a => a.textContent.trim())"


def press(locator, width):
    """A tap on a phone, a click on a desktop."""
    if width < 500:
        locator.tap()
    else:
        locator.click()


def no_overflow(page, width):
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1


def test_a_turns_end_keeps_the_persons_message_and_its_buttons(live_server_url, browser, scripted_model):
    """When a turn ends the view reads the stored transcript back; the person's message there is the same one (with
    its ids now), so it is not drawn again — a Copy or Edit being clicked at that moment keeps its button. The
    read is held until the message is marked, so the mark is on the node drawn before it."""
    scripted_model(numbered_answers())
    org = factories.organization(name="Acme")
    member(org, "asker@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    page, errors = chat_page(browser, live_server_url, "asker@example.com", agent)
    held = []
    page.route("**/turns.json", lambda route: held.append(route))

    send(page, "Tell me a fact")
    wait_idle(page, 1)
    page.wait_for_function("() => document.querySelector('.turn-user [data-action=edit]') !== null")
    for _ in range(600):  # the turn's end asks for the transcript right after it frees the composer
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the turn's end never read the transcript back"
    page.evaluate("() => { document.querySelector('.turn-user').dataset.drawnBefore = 'yes'; }")
    with page.expect_response("**/turns.json"):
        held[0].fulfill(response=held[0].fetch())
    page.unroute("**/turns.json")
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert page.evaluate("() => document.querySelector('.turn-user').dataset.drawnBefore") == "yes"
    press(page.locator(".turn-user [data-action=copy]"), 1440)
    page.wait_for_function("() => document.querySelector('.turn-user [data-action=copy]').textContent === 'Copied'")
    assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_copy_regenerate_and_edit_and_resend_act_on_the_messages(live_server_url, browser, scripted_model, width):
    scripted_model(numbered_answers())
    org = factories.organization(name="Acme")
    member(org, "asker@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    page, errors = chat_page(browser, live_server_url, "asker@example.com", agent, width)

    send(page, "Tell me a fact")
    wait_idle(page, 1)
    assert page.evaluate(ANSWERS_JS) == ["Answer 1 to Tell me a fact"]

    # Copy on every message: the person's text, and the answer's.
    press(page.locator(".turn-user [data-action=copy]"), width)
    page.wait_for_function("() => document.querySelector('.turn-user [data-action=copy]').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == "Tell me a fact"
    press(page.locator(".turn-assistant [data-action=copy]"), width)
    page.wait_for_function("() => document.querySelector('.turn-assistant [data-action=copy]').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == "Answer 1 to Tell me a fact"

    if width < 500:  # a finger-sized target for every action, none hidden behind a hover
        sizes = page.evaluate("() => Array.from(document.querySelectorAll('[data-action]')).map(a => "
                              "[a.getBoundingClientRect().height, getComputedStyle(a).visibility])")
        assert sizes and all(height >= 32 and shown == "visible" for height, shown in sizes), sizes

    # Regenerate: the same prompt again, a run the model answers anew, in the first answer's place.
    press(page.get_by_role("button", name="Regenerate"), width)
    page.wait_for_function("() => document.querySelector('.turn-assistant [data-version-of]') !== null")
    assert page.evaluate(ANSWERS_JS) == ["Answer 2 to Tell me a fact"]
    runs = list(Run.objects.filter(agent=agent).order_by("created_at"))
    assert [r.prompt for r in runs] == ["Tell me a fact", "Tell me a fact"]
    assert runs[0].conversation_id == runs[1].conversation_id
    assert page.locator("[data-action=regenerate]").count() == 1
    assert page.locator("[data-action=edit]").count() == 1

    # Edit: the text goes back in the composer; sending it makes a new version of the message.
    press(page.get_by_role("button", name="Edit", exact=True), width)
    composer = page.get_by_label("Message")
    assert composer.input_value() == "Tell me a fact"
    assert page.evaluate("() => document.activeElement.id") == "composer-text"
    composer.fill("Tell me a fact about owls")
    press(page.get_by_role("button", name="Send"), width)
    page.wait_for_function("() => document.querySelector('.turn-user [data-version-of]') !== null")
    assert page.evaluate(ANSWERS_JS) == ["Answer 3 to Tell me a fact about owls"]
    assert Run.objects.filter(agent=agent).count() == 3
    no_overflow(page, width)
    page.screenshot(path=str(ARTIFACTS / f"chat-actions-{width}.png"), full_page=True)

    # Reopened, the actions are there again.
    page.reload()
    page.wait_for_selector(".turn-assistant [data-action=copy]")
    assert page.locator("[data-action=copy]").count() == 2
    assert page.locator(".turn-assistant").last.locator("[data-action=regenerate]").count() == 1
    assert page.locator("[data-action=regenerate]").count() == 1
    assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_enter_shift_enter_escape_and_arrow_up_in_the_composer(live_server_url, browser, scripted_model, width):
    scripted_model(FunctionModel(stream_function=slow_unless_asked_quickly, model_name="scripted"))
    org = factories.organization(name="Acme")
    member(org, "typist@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Slowpoke")
    page, errors = chat_page(browser, live_server_url, "typist@example.com", agent, width)
    composer = page.get_by_label("Message")

    # Shift+Enter breaks the line; Enter sends.
    composer.click()
    page.keyboard.type("Answer quickly")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("please")
    assert composer.input_value() == "Answer quickly\nplease"
    assert page.locator(".turn-user").count() == 0
    page.keyboard.press("Enter")
    wait_idle(page, 1)
    assert composer.input_value() == ""
    assert page.locator(".turn-user .bubble").text_content() == "Answer quickly\nplease"

    # ↑ in the empty composer edits the last message; ↑ in a composer with text moves the caret as usual.
    page.keyboard.press("ArrowUp")
    assert composer.input_value() == "Answer quickly\nplease"
    page.keyboard.press("ArrowUp")
    assert composer.input_value() == "Answer quickly\nplease"

    # Esc stops a running turn, from the composer.
    composer.fill("Think slowly about it")
    page.keyboard.press("Enter")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer'))"
                           ".some(a => a.textContent.startsWith('Thinking'))")
    page.get_by_role("button", name="Stop").wait_for(state="visible")
    composer.focus()
    page.keyboard.press("Escape")
    page.wait_for_selector("[data-stopped]")
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    slow = Run.objects.get(agent=agent, prompt="Think slowly about it")
    assert slow.status == "cancelled"
    # Esc with nothing running sends nothing.
    page.keyboard.press("Escape")
    assert Run.objects.filter(agent=agent).count() == 2
    assert errors == []


@pytest.mark.parametrize("width", [1440, 390])
def test_a_browse_step_links_to_its_live_view_live_and_reopened(live_server_url, browser, scripted_model, width):
    scripted_model(FunctionModel(stream_function=slow_unless_asked_quickly, model_name="scripted"))
    org = factories.organization(name="Acme")
    person = member(org, "watcher@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Browser")
    page, errors = chat_page(browser, live_server_url, "watcher@example.com", agent, width)

    send(page, "Think slowly about it")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer'))"
                           ".some(a => a.textContent.startsWith('Thinking'))")
    run = Run.objects.get(agent=agent)
    # The runner's frames of a browse, played into the run's group: the step, then where its live view is.
    url = f"/browse/{run.pk}/call_browse_1"
    publish(run.pk, [frame("tool_call", tool_call_id="call_browse_1", tool_name="browse_web",
                           args={"url": "https://example.com"})])
    page.wait_for_selector("[data-step=call_browse_1]")
    assert page.locator("[data-step=call_browse_1] [data-watch-browser]").count() == 0
    publish(run.pk, [frame("browser_live", run_id=str(run.pk), call_id="call_browse_1", url=url)])
    link = page.locator("[data-step=call_browse_1] summary [data-watch-browser]")
    link.wait_for()
    assert link.text_content() == "Watch the browser"
    assert link.get_attribute("href") == url
    assert link.get_attribute("target") == "_blank"
    press(page.get_by_role("button", name="Stop"), width)
    page.wait_for_selector("[data-stopped]")

    # Reopened: a browse_web result that kept its live_url shows the link on its step.
    conversation, done = make_turn(org, person, agent, prompt="Browse it", tools=("browse_web",))
    kept = f"/browse/{done.pk}/call_kept"
    ToolCall.objects.filter(run=done).update(result={"title": "Example", "live_url": kept})
    call_id = ToolCall.objects.get(run=done).tool_call_id
    page.goto(f"{live_server_url}/chat/{conversation.pk}/")
    reopened = page.locator(f"[data-step={call_id}] [data-watch-browser]")
    reopened.wait_for()
    assert reopened.get_attribute("href") == kept
    assert errors == []
