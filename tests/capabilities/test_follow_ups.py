"""Follow-ups through the real OpenAI client against the fake server: after the answer is committed, a
separate model with no tools and none of the agent's instructions writes up to three next steps, metered on an
auxiliary run of its own (a used-up cap refuses it and nothing is shown); web chat shows the stored buttons when
the conversation is reopened; an embed never gets them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from agents.models import Conversation, Run, RunStatus
from agents.runs import start_run
from capabilities.follow_ups import service
from capabilities.follow_ups.models import FollowUp
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)

INSTRUCTIONS = "You are the refunds desk. Internal code word: PELICAN-77."


@pytest.fixture
def eager_tasks():
    from config.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = eager


@pytest.fixture
def queued_tasks(monkeypatch):
    """Holds the enqueued follow-up ids instead of sending them, so a test can act before the task runs."""
    from capabilities import tasks

    held: list[int] = []
    monkeypatch.setattr(tasks.write_follow_ups, "delay", held.append)
    return held


def follow_up_agent(org, owner, fake_openai, *, budget: str | None = None, bound: bool = True, name="Refunds"):
    from agents import services

    main = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label=f"main {name}",
                                   api_key="sk-followups-main-000000", base_url=fake_openai.base_url)
    helper = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label=f"next steps {name}",
                                     api_key="sk-followups-help-000000", base_url=fake_openai.base_url)
    spec = {"name": name, "instructions": INSTRUCTIONS, "model_profile_id": str(main.pk),
            "capabilities": [{"id": "follow_ups",
                              "config": {"model_profile_id": str(helper.pk)} if bound else {}}]}
    if budget is not None:
        spec["budget"] = {"monthly_usd": budget}
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name=name, spec=spec)
    return agent, services.publish_agent(actor=actor, agent=agent)


def ask(owner, agent, version, prompt: str, *, surface: str = "web", **extra) -> Run:
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface=surface, prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False, **extra)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    return run


def test_steps_are_written_after_the_answer_by_a_separate_metered_model_without_tools_or_instructions(
        org, owner, fake_openai, eager_tasks):
    agent, version = follow_up_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Refunds take five days."),
                      Reply.text("How do I ask for a refund?\n- Can I track my refund?\n3. Which cards?\nA fourth"))
    run = ask(owner, agent, version, "How long do refunds take?")

    main_request, follow_request = fake_openai.chat_requests
    assert "tools" in main_request.json and "PELICAN-77" in main_request.text
    body = follow_request.json
    assert "tools" not in body and "PELICAN-77" not in follow_request.text
    assert 512 in (body.get("max_tokens"), body.get("max_completion_tokens")), sorted(body)
    assert "How long do refunds take?" in follow_request.text and "Refunds take five days." in follow_request.text

    follow_up = FollowUp.objects.get(source_run=run)
    assert follow_up.status == FollowUp.Status.READY
    assert follow_up.steps == ["How do I ask for a refund?", "Can I track my refund?", "Which cards?"]
    assert follow_up.message.content == "Refunds take five days."
    aux = follow_up.run
    assert aux.status == RunStatus.COMPLETED and aux.prompt == service.RUN_LABEL and aux.conversation_id is None
    entry = SpendEntry.objects.get(kind=service.LEDGER_KIND)
    assert entry.run_id == aux.pk and entry.agent_id == agent.pk and entry.input_tokens > 0
    run.refresh_from_db()
    assert run.requests == 1  # the answer's own cost is unchanged
    assert not SpendEntry.objects.filter(run=run, kind=service.LEDGER_KIND).exists()


def test_web_chat_shows_the_stored_buttons_when_the_conversation_is_reopened(org, owner, fake_openai, eager_tasks,
                                                                              client):
    agent, version = follow_up_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Refunds take five days."), Reply.text("Track my refund"))
    run = ask(owner, agent, version, "How long do refunds take?")
    client.force_login(owner)
    response = client.get(reverse("console:chat-turns", args=[run.conversation_id]))
    assert response.status_code == 200
    answer = response.json()["turns"][-1]
    assert answer["role"] == "assistant" and answer["follow_ups"] == ["Track my refund"]
    page = client.get(reverse("console:chat-conversation", args=[run.conversation_id]))
    assert b"Track my refund" in page.content  # in the page's initial state, drawn by chat.js

    outsider = factories.member(factories.organization(name="Elsewhere"), "owner")
    client.force_login(outsider)
    assert client.get(reverse("console:chat-turns", args=[run.conversation_id])).status_code == 404


def test_a_used_up_cap_refuses_the_follow_up_call_and_nothing_is_shown(org, owner, fake_openai, queued_tasks,
                                                                        client):
    agent, version = follow_up_agent(org, owner, fake_openai, budget="1")
    fake_openai.queue(Reply.text("Refunds take five days."), Reply.text("Never sent"))
    run = ask(owner, agent, version, "How long do refunds take?")
    assert len(queued_tasks) == 1
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1"))  # the cap is now used up

    assert service.write(queued_tasks[0]) == FollowUp.Status.REFUSED
    assert len(fake_openai.chat_requests) == 1  # only the answer reached the model
    follow_up = FollowUp.objects.get(pk=queued_tasks[0])
    assert follow_up.steps == [] and follow_up.run.status == RunStatus.BUDGET_EXCEEDED
    assert not SpendEntry.objects.filter(kind=service.LEDGER_KIND).exists()
    client.force_login(owner)
    answer = client.get(reverse("console:chat-turns", args=[run.conversation_id])).json()["turns"][-1]
    assert answer["follow_ups"] == []


def test_an_embed_run_and_an_unset_model_never_get_follow_ups(org, owner, fake_openai, queued_tasks):
    import uuid

    agent, version = follow_up_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Hello from the widget."))
    ask(owner, agent, version, "hi", surface="embed", embed_id=uuid.uuid4())
    unset_agent, unset_version = follow_up_agent(org, owner, fake_openai, bound=False, name="Unset")
    fake_openai.queue(Reply.text("Hello from the console."))
    ask(owner, unset_agent, unset_version, "hi")
    assert queued_tasks == [] and not FollowUp.objects.exists()
    assert len(fake_openai.chat_requests) == 2  # the two answers, no follow-up call


def test_the_live_console_hears_which_conversation_and_message_the_steps_belong_to(org, owner, fake_openai,
                                                                                    queued_tasks):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from agents.run_handle import group_name

    agent, version = follow_up_agent(org, owner, fake_openai)
    fake_openai.queue(Reply.text("Refunds take five days."), Reply.text("Track my refund"))
    run = ask(owner, agent, version, "How long do refunds take?")
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name(run.pk), channel)
    assert service.write(queued_tasks[0]) == FollowUp.Status.READY
    event = async_to_sync(layer.receive)(channel)
    follow_up = FollowUp.objects.get(pk=queued_tasks[0])
    assert event["frame"] == {"type": "follow_ups", "data": {
        "conversation_id": str(run.conversation_id), "message_id": follow_up.message_id, "run_id": str(run.pk),
        "steps": ["Track my refund"]}}


def test_the_demo_model_answers_the_follow_up_call_in_the_persons_language(org, owner):
    import asyncio

    from agents.providers.demo import demo_model
    from governance import metered

    agent = factories.published_agent(org, owner, name="Demo")
    meter = metered.for_agent(org.pk, agent.pk, kind=service.LEDGER_KIND)
    text = asyncio.run(service._ask(meter, demo_model(), "¿Cuánto tarda un reembolso?", "Cinco días."))
    steps = service.parse_steps(text)
    assert len(steps) == 3 and steps[0] == "¿Qué más puedes hacer?"
    assert SpendEntry.objects.get(kind=service.LEDGER_KIND).cost_usd == 0


def test_propose_setup_draws_at_most_three_cards_of_a_trigger_an_agent_or_a_connection(org, owner, fake_openai,
                                                                                        queued_tasks):
    from agents.models import ToolCall

    agent, version = follow_up_agent(org, owner, fake_openai)
    trigger = {"kind": "trigger", "title": "Monday refunds digest", "schedule": "0 9 * * 1"}
    fake_openai.queue(
        Reply.tool_call("propose_setup", {"cards": [trigger] * 4}),
        Reply.tool_call("propose_setup", {"cards": [trigger, {"kind": "agent", "title": "Refund tracker"},
                                                    {"kind": "connection", "title": "Stripe", "server_key": "stripe"}]}),
        Reply.text("Here are three things to set up."))
    run = ask(owner, agent, version, "What should I automate?")
    refused, drawn = ToolCall.objects.filter(run=run, tool_name="propose_setup").order_by("id")
    assert refused.result["cards"] == [] and "At most 3" in refused.result["error"]
    assert [card["kind"] for card in drawn.result["cards"]] == ["trigger", "agent", "connection"]
    assert drawn.result["cards"][0]["schedule"] == "0 9 * * 1"
    assert "suggest_next_steps" not in fake_openai.chat_requests[0].text  # never offered to the main model
