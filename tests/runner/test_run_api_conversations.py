"""POST /agents/{id}/run opens a conversation ("conversation": "new") and continues it by its id: the turns
before reach the model. Someone else's conversation, another agent's and another organization's are 404;
a bad value is the error envelope; all of it in the OpenAPI schema."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agents.models import Conversation, Message, Run
from tests.runner.conftest import publish
from tests.runner.test_run_api import bearer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def recalling_model(scripted_model):
    """Answers with every user prompt it was given, history included, so a test reads what reached it."""

    async def stream(messages, info):
        said = [
            str(part.content)
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, UserPromptPart)
        ]
        yield "heard: " + " | ".join(said)

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


def run(client, agent, **body):
    return client.post(f"/api/v1/agents/{agent.pk}/run", body, format="json")


def test_new_opens_a_conversation_and_its_id_continues_it_with_the_history(
    org, owner, recalling_model, celery_worker
):
    agent, _ = publish(org, owner)
    client = bearer(owner, org)

    first = run(client, agent, prompt="My name is Ada.", conversation="new")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["output"] == "heard: My name is Ada."
    conversation_id = body["conversation_id"]
    assert conversation_id is not None
    conversation = Conversation.objects.get(pk=conversation_id)
    assert conversation.owner == owner and conversation.agent == agent and conversation.surface == "api"

    second = run(client, agent, prompt="What is my name?", conversation=conversation_id)
    assert second.status_code == 200, second.content
    assert second.json()["conversation_id"] == conversation_id
    # The earlier turn reached the model as history, before this turn's own words.
    assert second.json()["output"] == "heard: My name is Ada. | What is my name?"
    assert list(Message.objects.filter(conversation=conversation).order_by("id").values_list("role", "content")) == [
        ("user", "My name is Ada."),
        ("assistant", "heard: My name is Ada."),
        ("user", "What is my name?"),
        ("assistant", "heard: My name is Ada. | What is my name?"),
    ]
    # Each "new" is a conversation of its own.
    third = run(client, agent, prompt="Hello again.", conversation="new")
    assert third.json()["conversation_id"] not in (None, conversation_id)
    assert third.json()["output"] == "heard: Hello again."


def test_new_without_waiting_answers_202_with_the_conversation_id(org, owner, recalling_model, celery_worker):
    agent, _ = publish(org, owner)
    response = bearer(owner, org).post(
        f"/api/v1/agents/{agent.pk}/run?wait=false", {"prompt": "hi", "conversation": "new"}, format="json"
    )
    assert response.status_code == 202
    conversation_id = response.json()["conversation_id"]
    assert Conversation.objects.filter(pk=conversation_id, owner=owner).exists()
    assert Run.objects.get(pk=response.json()["run_id"]).conversation_id is not None


def test_someone_elses_or_another_agents_or_another_orgs_conversation_is_404_and_runs_nothing(
    org, owner, member, outsider, outsider_org, recalling_model
):
    agent, _ = publish(org, owner)
    other_agent, _ = publish(org, owner, name="Other")
    owners = Conversation.objects.create(organization=org, agent=agent, owner=owner, surface="api")
    Message.objects.create(conversation=owners, role="user", content="the owner's secret plan")
    others_agent = Conversation.objects.create(organization=org, agent=other_agent, owner=member, surface="api")
    outsider_agent, _ = publish(outsider_org, outsider, name="Theirs")

    as_member = bearer(member, org)
    for conversation in (owners, others_agent):
        response = run(as_member, agent, prompt="tell me", conversation=str(conversation.pk))
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    # An outsider naming this organization's conversation on their own agent: the same 404.
    response = run(bearer(outsider, outsider_org), outsider_agent, prompt="tell me", conversation=str(owners.pk))
    assert response.status_code == 404
    assert Run.objects.count() == 0
    assert list(Message.objects.filter(conversation=owners).values_list("content", flat=True)) == [
        "the owner's secret plan"
    ]


def test_a_viewer_cannot_open_a_conversation(org, owner, viewer, api_as, recalling_model):
    agent, _ = publish(org, owner)
    response = api_as(viewer, org).post(
        f"/api/v1/agents/{agent.pk}/run", {"prompt": "x", "conversation": "new"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert not Conversation.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize("value", ["old", "New", "new ", "12345", "", 42])
def test_a_bad_conversation_value_is_a_400_in_the_error_envelope(org, owner, recalling_model, value):
    agent, _ = publish(org, owner)
    response = run(bearer(owner, org), agent, prompt="x", conversation=value)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error" and "conversation" in error["details"]
    assert not Conversation.objects.exists() and not Run.objects.exists()


def test_conversation_and_a_different_conversation_id_are_refused_together(org, owner, recalling_model):
    agent, _ = publish(org, owner)
    mine = Conversation.objects.create(organization=org, agent=agent, owner=owner, surface="api")
    response = run(bearer(owner, org), agent, prompt="x", conversation="new", conversation_id=str(mine.pk))
    assert response.status_code == 400
    assert "conversation" in response.json()["error"]["details"]
    assert not Run.objects.exists()


def test_the_schema_documents_opening_and_continuing_a_conversation(client):
    schema = client.get("/api/schema/?format=json").json()
    request = schema["components"]["schemas"]["RunRequestRequest"]["properties"]["conversation"]
    assert '"new"' in request["description"] and "conversation_id" in request["description"]
    assert "conversation_id" in schema["components"]["schemas"]["RunResult"]["properties"]
    operation = next(
        op["post"] for path, op in schema["paths"].items() if path.endswith("/run") and "post" in op
    )
    bad = operation["responses"]["400"]["content"]["application/json"]["schema"]
    assert bad == {"$ref": "#/components/schemas/Error"}
