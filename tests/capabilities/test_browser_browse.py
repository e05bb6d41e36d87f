"""browse_web end to end: a published agent whose model (the real OpenAI client against tests/fakes/openai_server)
hands the browser a task; every step is one more request to that model, checked against the run's budget before
it is sent and written to the ledger after. Against local pages on Debian's Chromium: the loop fills the form and
finishes, a typed value never comes back in the next step, max_steps pauses and a call without start_url goes on
in the same tab, a spent budget stops the browse before its next step, and the run's browser context is gone
when the run ends."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from decimal import Decimal

import pytest

from agents import services
from agents.models import AgentVersion, RunStatus, ToolCall
from capabilities.browser.capability import BROWSE_STEP
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, internal, site  # noqa: F401
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

KEY = "sk-live-browser-key-000000000000000"


def browsing_agent(org, owner, fake_openai, browser_env, *, budget: str = "10", **config):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Browser", spec={
        "name": "Browser", "model_profile_id": str(profile.pk), "budget": {"monthly_usd": budget},
        "capabilities": [{"id": "browser_use", "config": {"cdp_url": browser_env.cdp_url, **config}}]})
    return agent, services.publish_agent(actor=actor, agent=agent)


def step(action: str, **fields) -> Reply:
    return Reply.tool_call("step", {"evaluation": "ok", "memory": fields.pop("memory", ""), "next_goal": action,
                                    "action": action, **fields})


def contexts(cdp_url: str) -> list[str]:
    """The browser contexts Chromium holds now (its default one is not listed)."""
    from playwright.async_api import async_playwright

    async def ask() -> list[str]:
        async with async_playwright() as pw:
            # The module's Chromium may be just started on a machine busy with the other worker's tests: a
            # fresh-clone run saw its first client wait past Playwright's default 30 s (as the service tests do).
            browser = await pw.chromium.connect_over_cdp(cdp_url, timeout=120_000)
            session = await browser.new_browser_cdp_session()
            answer = await session.send("Target.getBrowserContexts")
            await session.detach()
            return list(answer["browserContextIds"])

    return asyncio.run(ask())


def tool_results(run) -> list[dict]:
    results = []
    for call in ToolCall.objects.filter(run=run).order_by("id"):
        result = call.result
        results.append(json.loads(result) if isinstance(result, str) else result)
    return results


def test_browse_web_fills_the_form_and_finishes(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    url = f"http://{SITE}:{site.port}/form"
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Send the contact form as Ada, ada@example.com, plan Pro",
                                       "start_url": url}),
        step("type", element=1, text="Ada", memory="name typed"),
        step("type", element=2, text="ada@example.com"),
        step("select", element=3, option="Pro"),
        step("click", element=4),
        step("done", answer="The form was sent; the page thanks Ada."),
        Reply.text("Sent."),
    )
    before = contexts(browser_env.cdp_url)
    run = start(org, owner, agent, version, prompt="send the form")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    posted = [hit.form for hit in site.hits if hit.method == "POST"]
    assert posted == [{"name": ["Ada"], "email": ["ada@example.com"], "plan": ["Pro"]}]
    [result] = tool_results(run)
    assert result["outcome"] == "done" and result["steps"] == 5
    assert result["url"].endswith("/thanks") and "thanks Ada" in result["message"]
    steps = fake_openai.chat_requests[1:6]
    assert all('"step"' in json.dumps(r.json.get("tools")) for r in steps)
    assert "[1] text 'Name' (empty)" in steps[0].text
    after_typing = steps[2].text
    assert "[2] email 'Email' (filled)" in after_typing and "filled field [2]" in after_typing
    assert "ada@example.com" not in after_typing.split("Steps so far:", 1)[1]  # the value never comes back
    assert "Thanks, Ada" in steps[4].text and "Your memory: name typed" in steps[4].text
    # Five steps, each its own ledger row on the run; the run's totals count them with the agent's two requests.
    assert SpendEntry.objects.filter(run=run, kind=BROWSE_STEP).count() == 5
    assert run.requests == 7
    assert contexts(browser_env.cdp_url) == before  # the run's browser context is gone with the run


def test_max_steps_pauses_and_a_call_without_start_url_goes_on_in_the_same_tab(org, owner, fake_openai,
                                                                             browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, max_steps=1)
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Order size 42 boots", "start_url": f"http://{SITE}:{site.port}/flow/1"}),
        step("click", element=1, memory="on the size 42 page"),
        Reply.tool_call("browse_web", {"task": "Order size 42 boots"}),
        step("click", element=1),
        Reply.tool_call("browse_web", {"task": "Order size 42 boots"}),
        step("done", answer="Ordered: ORD-4242"),
        Reply.text("Your order number is ORD-4242."),
    )
    run = start(org, owner, agent, version, prompt="order the boots")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    paused, paused_again, done = tool_results(run)
    assert paused["outcome"] == "paused" and paused["url"].endswith("/flow/2")
    assert paused_again["outcome"] == "paused" and "/flow/3" in paused_again["url"]
    assert done["outcome"] == "done" and done["message"] == "Ordered: ORD-4242"
    assert done["steps"] == 3  # one task over three calls
    resumed = fake_openai.chat_requests[3].text
    assert "Your memory: on the size 42 page" in resumed and "/flow/2" in resumed
    assert "Order confirmed" in fake_openai.chat_requests[5].text
    assert site.paths().count("/flow/1") == 1  # the same tab went on; nothing started over


def test_a_browse_web_call_with_nothing_to_continue_says_so(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    fake_openai.queue(Reply.tool_call("browse_web", {"task": "go on"}), Reply.text("Nothing to continue."))
    run = start(org, owner, agent, version, prompt="continue")
    run_now(run)
    [result] = tool_results(run)
    assert result["outcome"] == "blocked" and "start_url" in result["message"]
    assert len(fake_openai.chat_requests) == 2 and site.hits == []  # no step was asked, no page opened


def test_a_spent_budget_stops_the_browse_before_its_next_step(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, budget="0.01")
    first_step = step("type", element=1, text="Ada")
    first_step.usage = {"prompt_tokens": 1_000_000, "completion_tokens": 10}
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Send the form", "start_url": f"http://{SITE}:{site.port}/form"}),
        first_step,
        step("click", element=4),
        Reply.text("never sent"),
    )
    run = start(org, owner, agent, version, prompt="send the form")
    run_now(run)
    run.refresh_from_db()

    step_entry = SpendEntry.objects.get(run=run, kind=BROWSE_STEP)
    assert step_entry.cost_usd >= Decimal("0.01"), "the control: the first step used the cap up"
    assert len(fake_openai.chat_requests) == 2  # the agent's request and one step; nothing after
    [result] = tool_results(run)
    assert result["outcome"] == "budget" and "budget" in result["message"]
    assert [hit for hit in site.hits if hit.method == "POST"] == []  # the click it would have paid for never ran
    assert run.status == RunStatus.BUDGET_EXCEEDED


def test_browse_web_asks_the_step_model_profile_and_the_agent_keeps_its_own(org, owner, fake_openai, browser_env,
                                                                           site):
    stepper = factories.model_profile(org, "openai_compatible", "gpt-4.1-nano", api_key=KEY,
                                      base_url=fake_openai.base_url)
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, step_model_profile_id=str(stepper.pk))
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Read the shop", "start_url": f"http://{SITE}:{site.port}/flow/1"}),
        step("done", answer="Boots."),
        Reply.text("Boots."),
    )
    run = start(org, owner, agent, version, prompt="what is sold")
    run_now(run)
    models = [r.json["model"] for r in fake_openai.chat_requests]
    assert models == ["gpt-4o-mini", "gpt-4.1-nano", "gpt-4o-mini"]
    assert SpendEntry.objects.get(run=run, kind=BROWSE_STEP).model == "gpt-4.1-nano"


def test_a_step_model_profile_of_another_organization_is_refused(org, owner, outsider_org, fake_openai,
                                                                 browser_env, site):
    from agenticos.errors import Invalid
    from capabilities.browser.capability import _load_step_model
    from capabilities.browser.session import BrowserUnavailable

    foreign = factories.model_profile(outsider_org, "openai_compatible", "gpt-4o", api_key=KEY,
                                      base_url=fake_openai.base_url)
    with pytest.raises(Invalid) as refused:
        browsing_agent(org, owner, fake_openai, browser_env, step_model_profile_id=str(foreign.pk))
    fields = [p["field"] for p in refused.value.details["problems"]]
    assert fields == ["capabilities[browser_use].config.step_model_profile_id"]
    assert not AgentVersion.objects.filter(agent__organization=org).exists()  # nothing was published
    # A version frozen before the profile moved away is refused again when a browse asks for it.
    with pytest.raises(BrowserUnavailable, match="no longer exists"):
        _load_step_model(str(org.pk), str(foreign.pk))
    assert fake_openai.requests == []


def test_a_hosted_browsers_key_is_never_in_an_answer(org, browser_env, site):
    from tests.capabilities.helpers import deps, run, spec

    key = "hosted-key-5b7c1d9e"
    secret = factories.secret(org, value=key)
    binding = {"id": "browser_use", "secret_id": str(secret.pk),
               "config": {"connection": "hosted", "hosted_url": "wss://127.0.0.1:9/connect"}}
    outcome = asyncio.run(run(spec(binding), [("browser_open", {"url": f"http://{SITE}:{site.port}/form"})],
                              run_deps=deps(organization_id=str(org.pk))))
    [answer] = outcome.returns
    assert "browser service is not responding" in answer  # the control: it did try the hosted address
    assert key not in json.dumps([str(m) for m in outcome.messages])
    assert site.hits == []


def test_browse_web_signs_in_and_the_password_never_goes_back_to_the_model(org, owner, fake_openai, browser_env,
                                                                          site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    password = "pw-9f3e1c77"
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Sign in as ada", "start_url": f"http://{SITE}:{site.port}/login"}),
        step("type", element=1, text="ada"),
        step("type", element=2, text=password),
        step("click", element=3),
        step("done", answer="Signed in."),
        Reply.tool_call("browse_web", {"task": "Show the cookie", "start_url": f"http://{SITE}:{site.port}/cookie/show"}),
        step("done", answer="Shown."),
        Reply.text("Signed in."),
    )
    run = start(org, owner, agent, version, prompt="sign in")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    [login] = [hit for hit in site.hits if hit.method == "POST"]
    assert login.path == "/account" and login.form == {"user": ["ada"], "password": [password]}
    assert "Signed in" in fake_openai.chat_requests[4].text
    assert "[2] password 'Password' (filled)" in fake_openai.chat_requests[3].text
    assert password not in fake_openai.all_bodies()  # typed into the page, never sent back to any request
    assert password not in json.dumps(tool_results(run))
    # A new task in the same run keeps the tab's session.
    assert site.hits[-1].path == "/cookie/show" and site.hits[-1].cookie == "session=signed"


# ------------------------------------------------------------------ the replay cache


def order_boots(fake_openai, site, *steps: Reply) -> None:
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Order size 42 boots", "start_url": f"http://{SITE}:{site.port}/flow/1"}),
        *steps, Reply.text("Ordered."))


def step_requests(fake_openai, since: int) -> list:
    return [r for r in fake_openai.chat_requests[since:] if '"step"' in json.dumps(r.json.get("tools"))]


def test_a_task_done_before_replays_its_clicks_for_the_same_person_only(org, owner, fake_openai, browser_env, site):
    from capabilities.browser import replay

    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    colleague = factories.member(org)
    order_boots(fake_openai, site, step("click", element=1), step("click", element=1), step("done", answer="ORD-4242"))
    first = start(org, owner, agent, version, prompt="order")
    run_now(first)
    assert len(step_requests(fake_openai, 0)) == 3

    # The colleague asks the same: nothing of the owner's is replayed for them.
    seen = len(fake_openai.chat_requests)
    order_boots(fake_openai, site, step("click", element=1), step("click", element=1), step("done", answer="ORD-4242"))
    run_now(start(org, colleague, agent, version, prompt="order"))
    assert len(step_requests(fake_openai, seen)) == 3

    # The owner again: both clicks without the model, which is asked only to finish.
    seen = len(fake_openai.chat_requests)
    order_boots(fake_openai, site, step("done", answer="ORD-4242"))
    third = start(org, owner, agent, version, prompt="order")
    run_now(third)
    [only_step] = step_requests(fake_openai, seen)
    assert "Order confirmed" in only_step.text and "replayed from the last time" in only_step.text
    [result] = tool_results(third)
    assert result["outcome"] == "done" and result["replayed"] == 2 and result["steps"] == 1
    assert site.paths().count("/flow/3") == 3  # the order really went through each time
    deps = type("Deps", (), {"user_id": owner.pk, "surface": "web", "organization_id": str(org.pk),
                             "agent_id": str(agent.pk)})()
    key = replay.key_for(deps, "Order size 42 boots", f"http://{SITE}:{site.port}/flow/1")
    from agenticos import ratelimit

    assert timedelta(days=13) < timedelta(seconds=ratelimit.client().ttl(key)) <= replay.TTL


def test_recording_stops_at_the_first_field_filled(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    for _ in range(2):
        fake_openai.queue(
            Reply.tool_call("browse_web", {"task": "Send the form", "start_url": f"http://{SITE}:{site.port}/form"}),
            step("type", element=1, text="Ada"), step("click", element=4), step("done", answer="Sent."),
            Reply.text("Sent."))
        run_now(start(org, owner, agent, version, prompt="send"))
    # Nothing was replayed the second time: the click came after a typed field, so it was never kept.
    assert len(step_requests(fake_openai, 0)) == 6
    assert [hit.form for hit in site.hits if hit.method == "POST"] == [{"name": ["Ada"], "plan": ["Free"]}] * 2


def test_a_replay_that_does_not_finish_is_discarded(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    order_boots(fake_openai, site, step("click", element=1), step("done", answer="On the size page."))
    run_now(start(org, owner, agent, version, prompt="order"))
    order_boots(fake_openai, site, step("blocked", answer="Out of stock."))
    replayed = start(org, owner, agent, version, prompt="order")
    run_now(replayed)
    assert tool_results(replayed)[0]["replayed"] == 1
    seen = len(fake_openai.chat_requests)
    order_boots(fake_openai, site, step("click", element=1), step("done", answer="On the size page."))
    run_now(start(org, owner, agent, version, prompt="order"))
    assert len(step_requests(fake_openai, seen)) == 2  # the model again from the first page


def test_with_vision_each_step_also_sends_the_screenshot(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, vision=True)
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Look", "start_url": f"http://{SITE}:{site.port}/flow/1"}),
        step("done", answer="Boots."), Reply.text("Boots."))
    run_now(start(org, owner, agent, version, prompt="look"))
    [step_request] = step_requests(fake_openai, 0)
    images = [part for message in step_request.json["messages"] if isinstance(message.get("content"), list)
              for part in message["content"] if part.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    agent_requests = [r for r in fake_openai.chat_requests if r not in (step_request,)]
    assert all("image_url" not in r.text for r in agent_requests)  # the screenshot goes to the step only
