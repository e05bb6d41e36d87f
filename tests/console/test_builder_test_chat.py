"""The Builder's test chat: the draft runs through the web chat socket (environment "draft") with a real Celery
worker — frozen for the run as a draft snapshot (version 0), marked a draft run, its conversation kept out of the
person's chat list; editors only, another organization's agent unknown. And the missing-capability card's signal:
the model's request_capability call becomes a `capability_missing` frame."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents.chat import readable_conversations
from agents.drafts import DRAFT_CONVERSATION_KEY
from agents.models import AgentVersion, Conversation, Run
from tests.runner.conftest import publish
from tests.runner.test_chat_socket import connect, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def actor_of(user, org):
    from agenticos.models import Membership

    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user,
                                                                                               organization=org))


def published_with_a_changed_draft(org, owner):
    agent, version = publish(org, owner, capabilities=[{"id": "clock"}])
    spec = dict(agent.draft_spec)
    spec["instructions"] = "DRAFT INSTRUCTIONS: answer like a pirate."
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent, spec=spec)
    return agent, version


@pytest.fixture
def echo_instructions(scripted_model):
    """Answers with the instructions it was given, so a test sees which spec ran."""

    async def stream(messages, info):
        text = " ".join(str(getattr(m, "instructions", "") or "") for m in messages)
        yield "pirate" if "DRAFT INSTRUCTIONS" in text else "published"

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


async def test_the_draft_answers_without_being_published_and_the_run_is_a_draft_run(
    org, owner, echo_instructions, celery_worker
):
    agent, version = await database_sync_to_async(published_with_a_changed_draft)(org, owner)
    communicator, connected = await connect(owner, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hello",
                                     "environment": "draft"})
    frames = await receive_until(communicator)
    assert frames[-1]["type"] == "complete", frames[-1]
    assert "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta") == "pirate"
    conversation_id = next(f["data"]["conversation_id"] for f in frames if f["type"] == "conversation_created")

    # The second turn continues the same draft conversation.
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "again",
                                     "environment": "draft", "conversation_id": conversation_id})
    second = await receive_until(communicator)
    assert second[-1]["type"] == "complete"
    await communicator.disconnect()

    def check():
        runs = list(Run.objects.filter(agent=agent).select_related("version").order_by("created_at"))
        assert len(runs) == 2
        assert all(r.is_draft and r.version.number == 0 for r in runs)
        assert runs[0].version_id == runs[1].version_id  # one snapshot for an unchanged draft
        assert "DRAFT INSTRUCTIONS" in runs[0].version.spec["instructions"]
        # Nothing was published: v1 is still the only version, and every environment still runs it.
        assert list(AgentVersion.objects.filter(agent=agent, number__gt=0).values_list("number", flat=True)) == [1]
        assert set(agent.environments.values_list("version_id", flat=True)) == {version.pk}
        conversation = Conversation.objects.get(pk=conversation_id)
        assert conversation.external_key == DRAFT_CONVERSATION_KEY
        assert str(runs[1].conversation_id) == conversation_id
        # The person's chat list leaves the Builder's test conversations out.
        assert not readable_conversations(actor_of(owner, org)).filter(pk=conversation_id).exists()

    await database_sync_to_async(check)()


async def test_a_published_chat_cannot_continue_a_draft_conversation(org, owner, echo_instructions, celery_worker):
    agent, _version = await database_sync_to_async(published_with_a_changed_draft)(org, owner)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hello",
                                     "environment": "draft"})
    frames = await receive_until(communicator)
    conversation_id = next(f["data"]["conversation_id"] for f in frames if f["type"] == "conversation_created")
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "now published",
                                     "conversation_id": conversation_id})
    refused = json.loads(await communicator.receive_from(timeout=20))
    assert refused["type"] == "error" and refused["data"]["code"] == "not_found"
    await communicator.disconnect()
    assert await database_sync_to_async(Run.objects.filter(agent=agent).count)() == 1


@pytest.mark.parametrize("role", ["member", "viewer"])
async def test_only_an_editor_can_run_the_draft(org, owner, role, echo_instructions, celery_worker):
    from tests import factories

    agent, _version = await database_sync_to_async(published_with_a_changed_draft)(org, owner)
    person = await database_sync_to_async(factories.member)(org, role)
    communicator, connected = await connect(person, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hello",
                                     "environment": "draft"})
    refused = json.loads(await communicator.receive_from(timeout=20))
    assert refused["type"] == "error" and refused["data"]["code"] == "forbidden"
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
    assert not await database_sync_to_async(Run.objects.filter(agent=agent).exists)()
    assert not await database_sync_to_async(AgentVersion.objects.filter(agent=agent, number=0).exists)()


async def test_another_organizations_draft_is_not_found(org, owner, outsider_org, outsider, echo_instructions,
                                                        celery_worker):
    foreign, _version = await database_sync_to_async(published_with_a_changed_draft)(outsider_org, outsider)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(foreign.pk), "text": "hello",
                                     "environment": "draft"})
    refused = json.loads(await communicator.receive_from(timeout=20))
    assert refused["type"] == "error" and refused["data"]["code"] == "not_found"
    await communicator.disconnect()
    assert not await database_sync_to_async(Run.objects.filter(agent=foreign).exists)()


async def test_a_draft_that_would_not_publish_is_not_run(org, owner, echo_instructions, celery_worker):
    agent, _version = await database_sync_to_async(publish)(org, owner)

    def break_the_draft():
        spec = dict(agent.draft_spec)
        spec["model_profile_id"] = None
        agent_services.update_agent(actor=actor_of(owner, org), agent=agent, spec=spec)

    await database_sync_to_async(break_the_draft)()
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hello",
                                     "environment": "draft"})
    refused = json.loads(await communicator.receive_from(timeout=20))
    assert refused["type"] == "error" and refused["data"]["code"] == "invalid"
    assert refused["data"]["details"]["problems"]
    await communicator.disconnect()
    assert not await database_sync_to_async(Run.objects.filter(agent=agent).exists)()


# ------------------------------------------------------------------ the missing-capability signal


@pytest.fixture
def asks_for_web_research(scripted_model):
    seen: list[set[str]] = []

    async def stream(messages, info):
        seen.append({t.name for t in info.function_tools})
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "I would need web search for that."
            return
        yield {0: DeltaToolCall(name="request_capability", tool_call_id="c1", json_args=json.dumps(
            {"capability_id": "web_research", "reason": "Today's news needs a web search."}))}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    return seen


@pytest.mark.parametrize(("role", "can_enable"), [("owner", True), ("member", False)])
async def test_a_request_needing_a_lacking_capability_shows_its_card(org, owner, role, can_enable,
                                                                    asks_for_web_research, celery_worker):
    from tests import factories

    agent, _version = await database_sync_to_async(publish)(org, owner, capabilities=[{"id": "clock"}])
    person = owner if role == "owner" else await database_sync_to_async(factories.member)(org, role)
    communicator, _ = await connect(person, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "today's news?"})
    frames = await receive_until(communicator)
    await communicator.disconnect()
    assert frames[-1]["type"] == "complete"
    [card] = [f["data"] for f in frames if f["type"] == "capability_missing"]
    assert card["capability"]["id"] == "web_research" and card["capability"]["name"]
    assert card["reason"] == "Today's news needs a web search."
    assert card["can_enable"] is can_enable
    assert card["toolbox_url"] == f"/agents/{agent.pk}/#cap-web_research"
    # Offered only what the agent lacks: the tool, and not for a capability it has.
    assert "request_capability" in asks_for_web_research[0]


def test_activity_names_a_draft_run_as_one(client_as, org, owner):
    from agents.drafts import freeze_draft
    from agents.runs import start_run

    agent, version = published_with_a_changed_draft(org, owner)
    snapshot = freeze_draft(actor_of(owner, org), agent)
    draft = start_run(agent=agent, version=snapshot, surface="web", prompt="draft hi", user=owner,
                      options={"draft": True}, enqueue=False)
    published = start_run(agent=agent, version=version, surface="web", prompt="hi", user=owner, enqueue=False)
    page = client_as(owner, org).get("/activity/").content.decode()
    draft_row = page.split(f'data-run-row="{draft.pk}"')[1].split("</tr>")[0]
    published_row = page.split(f'data-run-row="{published.pk}"')[1].split("</tr>")[0]
    assert "Web chat (draft)" in draft_row
    assert "(draft)" not in published_row and "Web chat" in published_row
