"""A background browse's stored tool call (spec "Trabajar mientras corren las herramientas"): the runner stores the
harness's "running in background" reply when the call returns at once; when the browse's result arrives, the
stored call holds that result — the one the model read, past the guardrails — so a reopened chat shows it. A run
stopped under its browse leaves the call unfinished, with no result. The agent's model is the real OpenAI client
against tests/fakes/, the browse runs on Debian's Chromium against local pages."""

from __future__ import annotations

import json
import threading

import pytest

from agents.models import Run, RunStatus, ToolCall
from agents.runs import request_stop
from console.selectors import conversation_turns
from tests.capabilities.test_browser_background import (
    STARTED,
    agent_with_browser,
    browse,
    form_steps,
    hold_step,
    stepper,  # noqa: F401
)
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_execute import run_now, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def reopened_call(run, call_id: str) -> dict:
    """The call as a reopened chat draws it (the console's stored transcript)."""
    calls = [part["call"] for turn in conversation_turns(run.conversation) for part in turn.get("parts", [])
             if part.get("type") == "tool"]
    return next(call for call in calls if call["id"] == call_id)


def test_a_background_browse_s_stored_call_holds_its_result_once_it_arrives(org, owner, fake_openai, stepper,
                                                                             browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env,
                                        extra=[{"id": "guardrails", "config": {"redact_pii_tool": True}}])
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"),
                      Reply.text("The form is being sent."),
                      Reply.text("Done: the form was sent."))
    stepper.queue(*form_steps("Sent; the page thanks Ada and writes to ada@example.com."))
    hold_step(stepper, 1, lambda: fake_openai.wait_for_requests(2, timeout=30))
    run = start(org, owner, agent, version, prompt="send the form")
    frames = run_now(run)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    # The chat's step gets the result when it arrives (a tool_result after the "started" one), before the answer
    # that reads it — not only from the stored call at the turn's end.
    results = [(i, f["data"]) for i, f in enumerate(frames)
               if f["type"] == "tool_result" and f["data"]["tool_call_id"] == "bg1"]
    assert [STARTED in json.dumps(data["content"]) for _, data in results] == [True, False]
    arrived, data = results[1]
    assert data["ok"] is True and "thanks Ada" in json.dumps(data["content"])
    assert "ada@example.com" not in json.dumps(data["content"])  # past the guardrails, as the model reads it
    answer = "".join(f["data"]["content"] for f in frames[arrived:] if f["type"] == "text_delta")
    assert "Done: the form was sent." in answer
    call = ToolCall.objects.get(run=run, tool_call_id="bg1")
    stored = json.dumps(call.result)
    assert call.status == ToolCall.Status.OK
    assert STARTED not in stored
    assert "thanks Ada" in stored and '"done"' in stored
    assert "ada@example.com" not in stored and "[redacted:" in stored  # what the model read, past the guardrails
    reopened = reopened_call(run, "bg1")
    assert reopened["status"] == "ok" and STARTED not in json.dumps(reopened["result"])
    assert "thanks Ada" in json.dumps(reopened["result"])


def test_a_run_stopped_under_its_background_browse_leaves_the_call_unfinished(org, owner, fake_openai, stepper,
                                                                             browser_env, site):
    agent, version = agent_with_browser(org, owner, fake_openai, stepper, browser_env)
    fake_openai.queue(browse(f"http://{SITE}:{site.port}/form"), Reply.tool_call("browser_read", {}),
                      Reply.text("It is running."))
    stepper.queue(*form_steps("Sent."))
    second = hold_step(stepper, 2, lambda: stepper.released.wait(30))
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
    call = ToolCall.objects.get(run=run, tool_call_id="bg1")
    assert call.status == ToolCall.Status.UNFINISHED
    assert call.result is None  # never the "started" reply as if it were the browse's result
