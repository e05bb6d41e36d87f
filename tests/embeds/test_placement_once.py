"""The context note and the visitor variables go to the model once, with the visitor's first message of a
conversation — not on every turn. Proven on what the real OpenAI client sent to the local fake server, with
the real consumer and the real runner; they go again only when they changed."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents import services as agent_services
from agents.models import Message
from agents.runner import execute_collecting
from embeds.models import Embed
from tests import factories
from tests.embeds.conftest import FRONTEND, SHOP, communicator, frames_until_end, next_frame, wait_for
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db(transaction=True)

NOTE = "The visitor is on the pricing page."
KEY = "sk-fake-provider-key-0000000000"
VARIABLES = [{"name": "plan", "required": False, "description": "billing plan", "url_safe": True}]


@pytest.fixture
def real_agent(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = agent_services.create_agent(actor=actor, name="Shop", spec={
        "name": "Shop", "instructions": "Be brief.", "model_profile_id": str(profile.pk)})
    agent_services.publish_agent(actor=actor, agent=agent)
    return agent


def sent_text(request) -> str:
    return json.dumps(request.json["messages"], ensure_ascii=False)


def system_text(request) -> str:
    return json.dumps([m for m in request.json["messages"] if m["role"] in ("system", "developer")])


async def open_socket(embed, **query):
    origin = FRONTEND if embed.kind == "page" else SHOP
    comm = communicator(embed.public_key, origin=origin, **query)
    connected, _ = await comm.connect(timeout=5)
    assert connected and (await next_frame(comm))["type"] == "ready"
    if embed.kind == "page":
        assert (await next_frame(comm))["type"] == "history"
    return comm


async def turn(comm, dispatched, text, **extra) -> list[dict]:
    before = len(dispatched)
    await comm.send_json_to({"type": "message", "text": text, **extra})
    await wait_for(lambda: len(dispatched) > before)
    await database_sync_to_async(execute_collecting, thread_sensitive=False)(dispatched[-1])
    frames = await frames_until_end(comm, timeout=20)
    assert frames[-1]["type"] == "complete", frames
    return frames


async def test_a_widget_sends_the_note_and_variables_with_the_first_message_only(
    real_agent, builder, dispatched, fake_openai
):
    widget = await database_sync_to_async(factories.embed)(
        real_agent, kind="widget", created_by=builder, context_note=NOTE, variables=VARIABLES
    )
    fake_openai.queue(Reply.text("Hello."), Reply.text("We ship to Poland."), Reply.text("Yes."))
    comm = await open_socket(widget)
    context = {"plan": "pro"}

    await turn(comm, dispatched, "Hi!", context=context)
    await turn(comm, dispatched, "Do you ship to Poland?", context=context)

    first, second = fake_openai.chat_requests
    assert NOTE in system_text(first) and 'plan: \\"pro\\"' in system_text(first)
    assert "<visitor_data>" in system_text(first)
    # The second turn carries the conversation, not the placement a second time.
    assert NOTE not in sent_text(second) and "visitor_data" not in sent_text(second)
    assert "Hi!" in sent_text(second) and "Do you ship to Poland?" in sent_text(second)
    # An application that learned more about the visitor: the changed variables go, once.
    await turn(comm, dispatched, "Am I on the enterprise plan?", context={"plan": "enterprise"})
    third = fake_openai.chat_requests[2]
    assert 'plan: \\"enterprise\\"' in system_text(third)
    # The transcript records what the visitor wrote, never the placement.
    recorded = await database_sync_to_async(
        lambda: list(Message.objects.filter(role="user").values_list("content", flat=True))
    )()
    assert recorded and not any(NOTE in text or "visitor_data" in text for text in recorded)
    assert KEY not in fake_openai.all_bodies()
    await comm.disconnect()


async def test_a_hosted_page_resumed_later_does_not_send_the_note_again(real_agent, builder, dispatched, fake_openai):
    page = await database_sync_to_async(factories.embed)(real_agent, kind="page", created_by=builder,
                                                         context_note=NOTE)
    fake_openai.queue(Reply.text("Hello."), Reply.text("Still here."))
    visitor = "cd" * 16
    comm = await open_socket(page, visitor=visitor)
    await turn(comm, dispatched, "Hi!")
    await comm.disconnect()

    again = await open_socket(page, visitor=visitor)  # the bookmarked link, reopened
    await turn(again, dispatched, "Are you still there?")
    first, second = fake_openai.chat_requests
    assert NOTE in system_text(first)
    assert NOTE not in sent_text(second) and "Hi!" in sent_text(second)
    await again.disconnect()

    # A new thread on the same page starts with the note again.
    fake_openai.queue(Reply.text("Welcome."))
    fresh = await open_socket(page, visitor="ef" * 16)
    await turn(fresh, dispatched, "New here.")
    assert NOTE in system_text(fake_openai.chat_requests[2])
    await fresh.disconnect()


async def test_an_operator_edit_of_the_note_reaches_the_conversation_once(real_agent, builder, dispatched, fake_openai):
    widget = await database_sync_to_async(factories.embed)(real_agent, kind="widget", created_by=builder,
                                                           context_note=NOTE)
    fake_openai.queue(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    comm = await open_socket(widget)
    await turn(comm, dispatched, "First.")
    await database_sync_to_async(
        lambda: Embed.objects.filter(pk=widget.pk).update(context_note="Answer in German.")
    )()
    await turn(comm, dispatched, "Second.")
    await turn(comm, dispatched, "Third.")
    _, second, third = fake_openai.chat_requests
    assert "Answer in German." in system_text(second) and NOTE not in sent_text(second)
    assert "Answer in German." not in sent_text(third)
    await comm.disconnect()
