"""How full the model's context window was — reported by every agent, compacting or not (spec: "Lo llena que
estaba la ventana lo informa cada agent, compacte o no"): the input tokens the provider billed for the run's
last request against the window, on the run's row, its `complete` frame, the reopened conversation and the API;
an embed's `complete` carries no usage at all (embeds/frames.py)."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import RunStatus
from agents.runner.frames import ending_frames
from console import selectors
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


def plain_agent(org, owner, fake_openai, *, window: int | None, model: str = "gpt-4o-mini"):
    profile = factories.model_profile(org, "openai_compatible", model, api_key="sk-context-0000000000",
                                      base_url=fake_openai.base_url, context_window=window)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Plain", spec={
        "name": "Plain", "model_profile_id": str(profile.pk), "capabilities": [{"id": "memory_files"}]})
    return agent, services.publish_agent(actor=actor, agent=agent)


def test_the_last_requests_input_is_the_fill_measured_by_the_profiles_window(org, owner, fake_openai):
    agent, version = plain_agent(org, owner, fake_openai, window=32_000)
    fake_openai.queue(Reply.tool_call("list_memory", usage={"prompt_tokens": 4_000, "completion_tokens": 9}),
                      Reply.text("Empty.", usage={"prompt_tokens": 8_000, "completion_tokens": 3}))
    run = start(org, owner, agent, version, prompt="what is in memory?")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    # The last request, not the sum: the run's input_tokens add both requests up.
    assert (run.context_tokens, run.context_window, run.input_tokens) == (8_000, 32_000, 12_000)
    usage = next(f for f in frames if f["type"] == "complete")["data"]["usage"]
    assert (usage["context_tokens"], usage["context_window"]) == (8_000, 32_000)
    # A listener whose frames were dropped rebuilds the same ending from the row.
    rebuilt = ending_frames(run.pk)[-1]["data"]["usage"]
    assert (rebuilt["context_tokens"], rebuilt["context_window"]) == (8_000, 32_000)
    # Reopened in web chat: the turn's usage carries it for the usage strip.
    turns = selectors.conversation_turns(run.conversation, owner.pk)
    answer = next(t for t in turns if t["role"] == "assistant")
    assert (answer["usage"]["context_tokens"], answer["usage"]["context_window"]) == (8_000, 32_000)


def test_without_a_profile_window_the_models_own_is_used_and_unknown_stays_unknown(org, owner, fake_openai):
    known, known_version = plain_agent(org, owner, fake_openai, window=None, model="gpt-4o-mini")
    fake_openai.queue(Reply.text("Hi.", usage={"prompt_tokens": 1_280, "completion_tokens": 1}))
    run = start(org, owner, known, known_version, prompt="hello")
    run_now(run)
    run.refresh_from_db()
    assert run.context_tokens == 1_280 and run.context_window == 128_000  # genai-prices' gpt-4o-mini

    unknown, unknown_version = plain_agent(org, owner, fake_openai, window=None, model="house-model-7")
    fake_openai.queue(Reply.text("Hi.", usage={"prompt_tokens": 900, "completion_tokens": 1}))
    run = start(org, owner, unknown, unknown_version, prompt="hello")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.context_tokens == 900 and run.context_window is None
    usage = next(f for f in frames if f["type"] == "complete")["data"]["usage"]
    assert usage["context_tokens"] == 900 and "context_window" not in usage


def test_a_run_that_never_reached_the_model_reports_no_fill(org, owner, fake_openai):
    agent, version = plain_agent(org, owner, fake_openai, window=32_000)
    fake_openai.queue(Reply.error(400, "bad request"))
    run = start(org, owner, agent, version, prompt="hello")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.context_tokens is None and run.context_window is None
