"""browse_web with `run_in_background` (spec "Trabajar mientras corren las herramientas"), end to end: the agent's
model (the real OpenAI client against tests/fakes/openai_server) starts a browse in the background and goes on;
the browse's steps go to a second fake server (the binding's step model), so the two conversations never race
for one queue. Against local pages on Debian's Chromium: the result arrives as a message, past the guardrails'
tool-result edge, with its steps on the run's ledger; a run that parks on an approval, or is stopped, cancels the
browse (nothing is posted, the run's browser context is gone), and while it runs the agent's own browser tools
are told the tab is busy; the tool-output limits cut a background result like any other; a gated browse waits for its approval before
anything starts, and runs in the background once approved."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from agents import services
from agents.models import Run, RunStatus
from agents.runs import request_stop
from capabilities.browser.capability import BROWSE_STEP
from governance.models import Approval, SpendEntry
from tests import factories
from tests.capabilities.test_browser_browse import KEY, contexts, step
from tests.fakes.openai_server import FakeOpenAIServer, Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

STARTED = "is running in background"
RESULT = '<tool_result tool_name="browse_web"'


@pytest.fixture
def stepper() -> Iterator[FakeOpenAIServer]:
    """The browse's own step model (step_model_profile_id), a second fake server."""
    server = FakeOpenAIServer().start()
    released = threading.Event()
    server.released = released  # type: ignore[attr-defined]
    yield server
    released.set()
    server.stop()


def hold_step(server: FakeOpenAIServer, number: int, until: Callable[[], object]) -> threading.Event:
    """Hold the server's `number`th chat request until `until()` returns; the returned event is set when it
    arrived. A held request the run gave up on (cancelled) is answered into a closed connection."""
    arrived = threading.Event()
    original = server.next_reply
    seen = [0]

    def next_reply(route: str):
        if route == "chat":
            seen[0] += 1
            if seen[0] == number:
                arrived.set()
                until()
        return original(route)

    server.next_reply = next_reply  # type: ignore[method-assign]
    return arrived


def agent_with_browser(org, owner, fake_openai, stepper, browser_env, *, extra=(), **binding):
    main = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY, base_url=fake_openai.base_url)
    steps = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label="steps", api_key=KEY,
                                    base_url=stepper.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Browser", spec={
        "name": "Browser", "model_profile_id": str(main.pk), "budget": {"monthly_usd": "10"},
        "capabilities": [{"id": "browser_use", "config": {"cdp_url": browser_env.cdp_url,
                                                          "step_model_profile_id": str(steps.pk)}, **binding},
                         *extra]})
    return agent, services.publish_agent(actor=actor, agent=agent)


def form_steps(answer: str) -> list[Reply]:
    return [step("type", element=1, text="Ada"), step("type", element=2, text="ada@example.com"),
            step("select", element=3, option="Pro"), step("click", element=4), step("done", answer=answer)]


def browse(url: str, **extra) -> Reply:
    return Reply.tool_call("browse_web", {"task": "Send the contact form as Ada on plan Pro", "start_url": url,
                                          "run_in_background": True, **extra}, id="bg1")


def said(request) -> str:
    """What a chat request showed the model: every message's text."""
    chunks = []
    for message in request.json["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(item.get("text", "")) for item in content if isinstance(item, dict))
        chunks.append(str(content or ""))
    return "\n".join(chunks)


def posted(site) -> list:
    return [hit.form for hit in site.hits if hit.method == "POST"]


def test_a_background_browse_arrives_as_a_message_checked_like_any_tool_result(org, owner, fake_openai, stepper,
                                                                                browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env,
                                        extra=[{"id": "guardrails", "config": {"redact_pii_tool": True}}])
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"),
                      Reply.text("The form is being sent; meanwhile, your plan Pro costs 12 a month."),
                      Reply.text("Done: the form was sent."))
    stepper.queue(*form_steps("Sent; the page thanks Ada and writes to ada@example.com."))
    # The browse's first step waits until the agent has gone on without it (its second request).
    hold_step(stepper, 1, lambda: fake_openai.wait_for_requests(2, timeout=30))
    before = contexts(browser_env.cdp_url)
    run = start(org, owner, agent, version, prompt="send the form, and tell me what Pro costs")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    assert posted(site) == [{"name": ["Ada"], "email": ["ada@example.com"], "plan": ["Pro"]}]
    first, meanwhile, after = fake_openai.chat_requests
    tool = next(t for t in first.json["tools"] if t["function"]["name"] == "browse_web")
    assert "run_in_background" in tool["function"]["parameters"]["properties"]
    assert STARTED in said(meanwhile) and RESULT not in said(meanwhile)
    # The result came as a message of its own once ready, through the tool-result guardrail.
    result = said(after).split(RESULT, 1)[1]
    assert '"outcome":"done"' in result.replace(" ", "") and "thanks Ada" in result
    assert "ada@example.com" not in result and "[redacted:" in result
    # Its five steps are the run's spend: their ledger rows and the run's request count.
    assert SpendEntry.objects.filter(run=run, kind=BROWSE_STEP).count() == 5
    assert run.requests == 8
    assert contexts(browser_env.cdp_url) == before


def test_a_run_that_parks_cancels_its_background_browse(org, owner, admin_user, api_as, fake_openai, stepper,
                                                        browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env,
                                        tool_approval={"browser_open": "required"})
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"),
                      Reply.tool_call("browser_open", {"url": f"http://{SITE}:{site.port}/flow/1"}, id="gated"))
    stepper.queue(*form_steps("Sent."))
    # The browse is mid-step (its third request held) when the agent's next call parks the run.
    third = hold_step(stepper, 3, lambda: stepper.released.wait(30))
    before = contexts(browser_env.cdp_url)
    run = start(org, owner, agent, version, prompt="send the form, then open the shop")
    worker = threading.Thread(target=run_now, args=(run,))
    original = fake_openai.next_reply
    asked = [0]

    def after_the_browse_is_under_way(route: str):
        asked[0] += 1
        if asked[0] == 2:
            assert third.wait(30)
        return original(route)

    fake_openai.next_reply = after_the_browse_is_under_way  # type: ignore[method-assign]
    worker.start()
    worker.join(60)
    assert not worker.is_alive()
    run.refresh_from_db()

    assert run.status == RunStatus.AWAITING_APPROVAL
    assert Approval.objects.get(run=run).tool_name == "browser_open"
    stepper.released.set()
    assert posted(site) == []  # the browse never got to its click
    assert len(stepper.chat_requests) == 3
    assert contexts(browser_env.cdp_url) == before
    history = str(run.parked_state["messages"])
    assert STARTED in history and RESULT not in history

    # Approved and resumed: the cancelled browse's result never comes, and the model is told it will not.
    fake_openai.queue(Reply.text("The shop is open; the form was not sent, I will try again."))
    client = api_as(admin_user, org)
    approval = Approval.objects.get(run=run)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    resumed = said(fake_openai.chat_requests[-1])
    assert RESULT not in resumed and "that browse was stopped and its result will not arrive" in resumed
    assert posted(site) == [] and len(stepper.chat_requests) == 3


def test_a_stopped_run_cancels_its_background_browse(org, owner, fake_openai, stepper, browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env)
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"), Reply.tool_call("browser_read", {}),
                      Reply.text("It is running."))
    stepper.queue(*form_steps("Sent."))
    second = hold_step(stepper, 2, lambda: stepper.released.wait(30))
    before = contexts(browser_env.cdp_url)
    run = start(org, owner, agent, version, prompt="send the form")
    worker = threading.Thread(target=run_now, args=(run,))
    worker.start()
    assert second.wait(30)
    fake_openai.wait_for_requests(3, timeout=30)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(60)
    assert not worker.is_alive()
    stepper.released.set()
    run.refresh_from_db()

    assert run.status == RunStatus.CANCELLED
    assert posted(site) == []
    assert len(fake_openai.chat_requests) == 3  # nothing more was asked after the stop
    # The tab is the browse's while it runs: the agent's own browser tool was told so, and did nothing.
    assert "The browser is busy with a browse that is still running" in said(fake_openai.chat_requests[2])
    assert contexts(browser_env.cdp_url) == before
    assert SpendEntry.objects.filter(run=run, kind=BROWSE_STEP).count() == 1  # the step it took is the run's


def test_a_gated_browse_waits_for_its_approval_before_anything_runs_then_runs_in_the_background(
        org, owner, admin_user, api_as, fake_openai, stepper, browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env,
                                        tool_approval={"browse_web": "required"})
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"))
    run = start(org, owner, agent, version, prompt="send the form")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.AWAITING_APPROVAL
    approval = Approval.objects.get(run=run)
    assert approval.tool_name == "browse_web"
    assert site.hits == [] and stepper.chat_requests == []  # nothing started in the background

    fake_openai.queue(Reply.text("It is on its way."), Reply.text("The form was sent."))
    stepper.queue(*form_steps("Sent; thanks Ada."))
    hold_step(stepper, 1, lambda: fake_openai.wait_for_requests(2, timeout=30))
    client = api_as(admin_user, org)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    assert posted(site) == [{"name": ["Ada"], "email": ["ada@example.com"], "plan": ["Pro"]}]
    _, resumed, after = fake_openai.chat_requests
    assert STARTED in said(resumed) and RESULT not in said(resumed)
    assert RESULT in said(after) and "thanks Ada" in said(after)


def test_a_background_result_is_cut_by_the_tool_output_limits_like_a_foreground_one(org, owner, fake_openai,
                                                                                     stepper, browser_env, site):
    limits = {"action": "truncate", "threshold": 1000, "max_chars": 400, "truncation_strategy": "head"}
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env,
                                        extra=[{"id": "tool_output_limits", "config": limits}])
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"), Reply.text("Sending it."), Reply.text("Sent."))
    stepper.queue(*form_steps("Sent; the page says: " + "thank you " * 300 + "END-OF-PAGE"))
    hold_step(stepper, 1, lambda: fake_openai.wait_for_requests(2, timeout=30))
    run = start(org, owner, agent, version, prompt="send the form")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    result = said(fake_openai.chat_requests[2]).split(RESULT, 1)[1]
    assert "[truncated: showing first" in result and "END-OF-PAGE" not in result and len(result) < 1000


def test_a_run_that_parks_on_a_question_cancels_its_background_browse(org, owner, fake_openai, stepper,
                                                                      browser_env, site):
    from capabilities.ask_user.capability import TOOL_NAME

    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env, extra=[{"id": "ask_user"}])
    question = {"questions": [{"header": "Plan", "question": "Which plan?",
                               "options": [{"label": "Free"}, {"label": "Pro"}]}]}
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"), Reply.tool_call(TOOL_NAME, question, id="q1"))
    stepper.queue(*form_steps("Sent."))
    second = hold_step(stepper, 2, lambda: stepper.released.wait(30))
    original = fake_openai.next_reply
    asked = [0]

    def once_the_browse_is_under_way(route: str):
        asked[0] += 1
        if asked[0] == 2:
            assert second.wait(30)
        return original(route)

    fake_openai.next_reply = once_the_browse_is_under_way  # type: ignore[method-assign]
    before = contexts(browser_env.cdp_url)
    run = start(org, owner, agent, version, prompt="send the form", options={"can_ask_user": True})
    run_now(run)
    stepper.released.set()
    run.refresh_from_db()

    assert run.status == RunStatus.AWAITING_ANSWER
    assert posted(site) == [] and len(stepper.chat_requests) == 2
    assert contexts(browser_env.cdp_url) == before
    assert RESULT not in str(run.parked_state["messages"])
