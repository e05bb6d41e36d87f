"""Instruction reminders through the real OpenAI client against the fake server: the cadence counts model
requests over the whole conversation (the counters live on the conversation and are seeded into the next
turn), a fired reminder reaches the model at the tail of that request and never the transcript, and the
model-written reminder is metered on the run."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Conversation, Message, RunStatus
from agents.runs import start_run
from agents.spec import AgentSpec
from capabilities import registry
from governance import budgets, metered
from governance.models import SpendEntry
from tests import factories
from tests.capabilities.helpers import deps
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)

LINE = "Always cite the ledger row you used."


def reminded(org, owner, fake_openai, config: dict, budget: str | None = None):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-reminders-0000000000",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    spec = {"name": "Reminded", "model_profile_id": str(profile.pk),
            "capabilities": [{"id": "system_reminders", "config": config}]}
    if budget is not None:
        spec["budget"] = {"monthly_usd": budget}
    agent = services.create_agent(actor=actor, name="Reminded", spec=spec)
    return agent, services.publish_agent(actor=actor, agent=agent)


def turn(owner, agent, version, conversation, prompt: str):
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    return run


def conversation_of(org, owner, agent):
    return Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")


def tail_user_text(request) -> str:
    """The last message of a request when it is the person's side (a user prompt), else ""."""
    last = request.json["messages"][-1]
    if last["role"] != "user":
        return ""
    content = last["content"]
    return content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)


def system_texts(request) -> str:
    return " ".join(str(m["content"]) for m in request.json["messages"] if m["role"] == "system")


def test_a_reminder_counts_requests_across_turns_and_never_enters_the_transcript(org, owner, fake_openai):
    agent, version = reminded(org, owner, fake_openai, {"reminders": [{"text": LINE, "interval": 2}]})
    conversation = conversation_of(org, owner, agent)
    for prompt in ("one", "two", "three", "four"):
        turn(owner, agent, version, conversation, prompt)
    sent = [LINE in request.text for request in fake_openai.chat_requests]
    assert sent == [False, True, False, True]  # the 2nd and 4th request of the conversation, one per turn
    # At the tail of that request, as a user prompt (spec), never in system voice.
    assert LINE in tail_user_text(fake_openai.chat_requests[1])
    assert LINE not in system_texts(fake_openai.chat_requests[1])
    conversation.refresh_from_db()
    assert conversation.state["reminders"] == {"requests": 4, "fires": {"line:0": 2}}
    assert not Message.objects.filter(conversation=conversation, content__contains=LINE).exists()


def test_max_fires_caps_a_reminder_over_the_whole_conversation(org, owner, fake_openai):
    agent, version = reminded(org, owner, fake_openai, {"goal_reanchor": {"interval": 1, "max_fires": 2}})
    conversation = conversation_of(org, owner, agent)
    for prompt in ("a", "b", "c"):
        turn(owner, agent, version, conversation, prompt)
    anchored = ["original request" in request.text for request in fake_openai.chat_requests]
    assert anchored == [True, True, False]
    conversation.refresh_from_db()
    assert conversation.state["reminders"]["fires"]["goal"] == 2


def test_first_after_sets_the_first_fire_then_the_interval_follows(org, owner, fake_openai):
    agent, version = reminded(org, owner, fake_openai,
                              {"reminders": [{"text": LINE, "interval": 2, "first_after": 1}]})
    conversation = conversation_of(org, owner, agent)
    for prompt in ("a", "b", "c"):
        turn(owner, agent, version, conversation, prompt)
    assert [LINE in r.text for r in fake_openai.chat_requests] == [True, False, True]


def test_a_model_written_reminder_is_metered_on_the_run(org, owner, fake_openai):
    agent, version = reminded(org, owner, fake_openai, {"llm_reminder": {"interval": 1}})
    fake_openai.queue(Reply.text("Stay on the refund question."), Reply.text("Here is the refund policy."))
    run = turn(owner, agent, version, conversation_of(org, owner, agent), "what is the refund policy?")
    writer, main = fake_openai.chat_requests
    assert "stay-on-task reminder" in writer.text and "what is the refund policy?" in writer.text
    assert "Stay on the refund question." in main.text
    entry = SpendEntry.objects.get(run=run, kind=metered.REMINDER)
    assert entry.agent_id == agent.pk and entry.input_tokens > 0
    assert run.requests == 2 and run.output == "Here is the refund policy."


def test_a_spent_cap_refuses_the_reminder_writer_before_it_is_sent(org, owner, fake_openai):
    import asyncio

    from pydantic_ai.messages import ModelRequest
    from pydantic_ai.models import ModelRequestParameters

    from agents.providers import build_model

    agent, _ = publish(org, owner, budget="1")
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1"))
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-reminders-0000000000",
                                      base_url=fake_openai.base_url)
    meter = metered.for_agent(org.pk, agent.pk, kind=metered.REMINDER)
    model = metered.metered_model(build_model(profile), meter)
    with pytest.raises(budgets.BudgetExceeded):
        asyncio.run(model.request([ModelRequest.user_text_prompt("hi")], None, ModelRequestParameters()))
    assert fake_openai.requests == [] and SpendEntry.objects.count() == 1


def test_nothing_is_attached_without_a_reminder_class(db, org):
    spec = AgentSpec(name="R", capabilities=[{"id": "system_reminders", "config": {}}])
    built = registry.build_for_run(spec, deps(organization_id=str(org.pk)), str(org.pk))
    assert built.capabilities == [] and "system_reminders" in built.skipped


async def test_a_fired_reminder_is_a_user_prompt_behind_a_cache_point_with_the_bindings_ttl():
    from pydantic_ai.messages import CachePoint, ModelRequest, SystemPromptPart, UserPromptPart

    from tests.capabilities.helpers import run, spec

    outcome = await run(spec({"id": "system_reminders",
                              "config": {"reminders": [{"text": LINE, "interval": 1}], "cache_ttl": "1h"}}), [])

    sent = outcome.script.sent[0]
    tail = sent[-1]
    assert isinstance(tail, ModelRequest)
    reminder = tail.parts[-1]
    assert isinstance(reminder, UserPromptPart) and isinstance(reminder.content, list)
    assert reminder.content[0] == CachePoint(ttl="1h")
    assert LINE in reminder.content[1]
    assert not [p for m in sent if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, SystemPromptPart) and LINE in p.content]
    # Ephemeral: the run's history never holds it as something the person said.
    assert not [p for p in outcome.parts(UserPromptPart) if LINE in str(p.content)]
