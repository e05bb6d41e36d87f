"""A browse started from a chat platform links its thread to the live view (spec "Navegador web": "en Slack,
Telegram y Mattermost el paso publica el enlace", and the thread says when the agent needs a person, and what
for): a signed Slack event through the route, the Celery task, the real runner with the model scripted through
the real OpenAI client against tests/fakes/, browse_web on Debian's Chromium against a local page, and the
thread on the fake Slack Web API driven by slack-sdk."""

from __future__ import annotations

import pytest

from agents.models import Run
from capabilities.browser import live
from channelbots.models import ChannelBot
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.channelbots.conftest import FRONTEND, bind, wait_until
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CALL = "call_thread_browse"


@pytest.fixture
def browsing(org, builder, sender, fake_openai, browser_env):
    agent, _version = browsing_agent(org, builder, fake_openai, browser_env)
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    return agent


def thread_of(fake_slack, event) -> list[str]:
    return [p.final for p in fake_slack.answers("C1") if p.thread_ts == event["ts"]]


def test_a_browse_from_a_slack_thread_posts_its_live_view_link_in_the_thread(
        celery_worker, fake_slack, sender, browsing, fake_openai, site):
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Read the form", "start_url": f"http://{SITE}:{site.port}/form"},
                        id=CALL),
        step("done", answer="It is a contact form."),
        Reply.text("It is a contact form."),
    )
    event = sender.message("<@UBOT> what is on the form page?", channel="C1")
    assert sender.send(event).status_code == 200
    wait_until(lambda: "It is a contact form." in thread_of(fake_slack, event), timeout=60)
    run = Run.objects.get()
    link = f"{FRONTEND}/browse/{run.pk}/{CALL}"
    thread = thread_of(fake_slack, event)
    assert thread.count(f"Using a web browser. Watch it live: {link}") == 1
    assert [text for text in thread if text != f"Using a web browser. Watch it live: {link}"] == [
        "It is a contact form."]
    assert tool_results(run)[0]["live_url"] == f"/browse/{run.pk}/{CALL}"


def test_a_browse_that_needs_a_person_says_so_and_why_in_the_thread(
        celery_worker, fake_slack, sender, browsing, fake_openai, site, monkeypatch):
    monkeypatch.setattr(live, "NEEDS_PERSON_SECONDS", 1)
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Sign in", "start_url": f"http://{SITE}:{site.port}/login"}, id=CALL),
        step("ask_human", answer="Only the account holder can sign in."),
        Reply.text("You need to sign in yourself."),
    )
    event = sender.message("<@UBOT> sign me in", channel="C1")
    assert sender.send(event).status_code == 200
    wait_until(lambda: "You need to sign in yourself." in thread_of(fake_slack, event), timeout=60)
    run = Run.objects.get()
    link = f"{FRONTEND}/browse/{run.pk}/{CALL}"
    assert thread_of(fake_slack, event) == [
        "You need to sign in yourself.",  # the live reply: its placeholder, edited to the answer
        f"Using a web browser. Watch it live: {link}",
        f"The agent needs a person in the browser: Only the account holder can sign in. Take it over here: {link}",
    ]
    assert tool_results(run)[0]["outcome"] == "blocked"


def test_a_run_that_does_not_browse_posts_no_link(celery_worker, fake_slack, sender, browsing, fake_openai):
    fake_openai.queue(Reply.text("Nothing to browse."))
    event = sender.message("<@UBOT> hello", channel="C1")
    sender.send(event)
    wait_until(lambda: "Nothing to browse." in thread_of(fake_slack, event), timeout=60)
    assert thread_of(fake_slack, event) == ["Nothing to browse."]
