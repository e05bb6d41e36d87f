"""How a browse that needs a person ends (spec "Navegador web": four normal outcomes — done, blocked by the page,
paused at the step limit, browser not answering — and "needs a person" waits up to ten minutes for a take-over and
ends blocked if nobody comes), against Debian's Chromium and a local login page, the model scripted through the
real OpenAI client."""

from __future__ import annotations

import pytest

from agents.models import RunStatus
from capabilities.browser import live
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_execute import run_now, start

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CALL = "call_outcome_1"


def test_a_browse_nobody_takes_over_in_time_ends_blocked_saying_what_a_person_was_needed_for(
        org, owner, fake_openai, browser_env, site, monkeypatch):
    monkeypatch.setattr(live, "NEEDS_PERSON_SECONDS", 1)
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Sign in", "start_url": f"http://{SITE}:{site.port}/login"}, id=CALL),
        step("ask_human", answer="Only the account holder can sign in."),
        Reply.text("It needs you to sign in."),
    )
    run = start(org, owner, agent, version, prompt="sign in")
    run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error  # an answer, not a failed run
    [result] = tool_results(run)
    assert result["outcome"] == "blocked"
    assert result["needs_person"] == "Only the account holder can sign in."
    assert result["message"] == ("A person is needed: Only the account holder can sign in. Nobody took over the "
                                 "browser within 1 second.")
    assert result["live_url"] == f"/browse/{run.pk}/{CALL}"
    assert len(fake_openai.chat_requests) == 3  # nothing asked after the wait but the agent's own answer
    snapshot = live.snapshot(run.pk, CALL)
    assert snapshot["ended"] is True
    assert snapshot["agent"] == {"state": "needs_person", "reason": "Only the account holder can sign in."}
    assert "A person is needed: Only the account holder" in fake_openai.chat_requests[2].text  # the model reads it
