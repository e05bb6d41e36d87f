"""A streamed turn with a tool call through the real OpenAI client against the local fake server."""

from __future__ import annotations

import json

import pytest

from agents.models import Message, RunStatus, ToolCall
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-live-very-secret-key-123456"


def test_a_streamed_turn_with_a_tool_call_runs_through_the_real_openai_client(org, owner, fake_openai):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Real", spec={
        "name": "Real", "instructions": "Be brief.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "charts"}]})
    version = services.publish_agent(actor=actor, agent=agent)
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS), Reply.text("Here is the chart you asked for."))

    run = start(org, owner, agent, version, prompt="chart it")
    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "Here is the chart you asked for."
    assert ToolCall.objects.get(run=run).status == "ok"
    assert [f["type"] for f in frames].count("text_delta") > 1  # streamed over SSE
    assert SpendEntry.objects.filter(run=run).count() == 2
    # The key went to the provider in the header and nowhere else.
    assert all(r.bearer == KEY for r in fake_openai.chat_requests)
    assert KEY not in json.dumps(frames)
    assert KEY not in json.dumps(list(Message.objects.values()), default=str)
    assert KEY not in json.dumps(fake_openai.all_bodies())


def test_a_provider_500_fails_the_run_with_a_safe_summary(org, owner, fake_openai):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Real", spec={
        "name": "Real", "model_profile_id": str(profile.pk)})
    version = services.publish_agent(actor=actor, agent=agent)
    fake_openai.queue(Reply.error(500))
    run = start(org, owner, agent, version, prompt="hi")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["status"] == 500
    assert KEY not in json.dumps(run.error) and fake_openai.base_url not in json.dumps(run.error)
    assert frames[-1]["type"] == "error"


def test_a_bad_key_fails_the_run_with_401_and_no_key_in_sight(org, owner, fake_openai):
    from agents import services

    fake_openai.api_key = "the-right-key"
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Real", spec={"name": "Real", "model_profile_id": str(profile.pk)})
    version = services.publish_agent(actor=actor, agent=agent)
    run = start(org, owner, agent, version, prompt="hi")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["status"] == 401
    assert KEY not in json.dumps(run.error)
