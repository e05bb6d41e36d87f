"""POST /agents/{id}/run through a real Celery worker, the run ledger, conversations, tenant isolation."""

from __future__ import annotations

import pytest
from pydantic_ai.models.function import FunctionModel

from agenticos.models import ApiKey
from agents.models import Conversation, Message, Run
from tests.runner.conftest import actor_of, publish

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def echo_model(scripted_model):
    async def stream(messages, info):
        yield f"echo: {messages[-1].parts[-1].content}"

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


def bearer(user, org):
    from rest_framework.test import APIClient

    from agenticos.services import create_api_key

    _, raw = create_api_key(actor=actor_of(user, org), name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_the_api_runs_an_agent_and_waits_for_its_answer(org, owner, echo_model, celery_worker):
    agent, _ = publish(org, owner)
    response = bearer(owner, org).post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "hello"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "completed"
    assert body["output"] == "echo: hello"
    assert body["input_tokens"] > 0 and body["output_tokens"] > 0
    assert set(body) >= {"run_id", "status", "output", "input_tokens", "output_tokens", "cost_usd", "cost_is_partial"}
    run = Run.objects.get(pk=body["run_id"])
    assert run.surface == "api" and run.api_key_id is not None
    assert not Message.objects.filter(run=run).exists()  # no conversation_id → nothing to write a turn into


def test_the_api_records_the_turn_when_given_a_conversation(org, owner, echo_model, celery_worker):
    agent, _ = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, surface="api")
    response = bearer(owner, org).post(
        f"/api/v1/agents/{agent.pk}/run", {"prompt": "hi", "conversation_id": str(conversation.pk)}, format="json"
    )
    assert response.status_code == 200
    roles = list(Message.objects.filter(conversation=conversation).values_list("role", "content"))
    assert roles == [("user", "hi"), ("assistant", "echo: hi")]


def test_wait_false_returns_202_with_the_run_id(org, owner, echo_model, celery_worker):
    agent, _ = publish(org, owner)
    response = bearer(owner, org).post(f"/api/v1/agents/{agent.pk}/run?wait=false", {"prompt": "x"}, format="json")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"


def test_an_empty_or_too_long_prompt_runs_nothing(org, owner, settings, echo_model):
    agent, _ = publish(org, owner)
    client = bearer(owner, org)
    assert client.post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "  "}, format="json").status_code == 422
    settings.MAX_MESSAGE_CHARS = 100
    response = client.post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "x" * 101}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["limit"] == 100
    assert Run.objects.count() == 0


def test_the_run_rate_limit_answers_429_with_retry_after(org, owner, settings, echo_model, ratelimit_clock):
    settings.RATE_LIMIT_RUN_PER_MINUTE = 2
    agent, _ = publish(org, owner)
    client = bearer(owner, org)

    def run():
        return client.post(f"/api/v1/agents/{agent.pk}/run?wait=false", {"prompt": "x"}, format="json")

    assert [run().status_code for _ in range(3)] == [202, 202, 429]
    ratelimit_clock.advance(20)  # 21 s into the window
    limited = run()
    assert int(limited["Retry-After"]) == 39
    assert limited.json()["error"]["code"] == "rate_limited"
    assert Run.objects.count() == 2  # the refusals started nothing
    ratelimit_clock.advance(39)  # the next window
    assert [run().status_code for _ in range(3)] == [202, 202, 429]


def test_a_viewer_cannot_run_and_an_outsider_cannot_see_the_agent(
    org, owner, viewer, outsider, outsider_org, echo_model, api_as
):
    agent, _ = publish(org, owner)
    assert api_as(viewer, org).post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "x"}, format="json").status_code == 403
    assert bearer(outsider, outsider_org).post(
        f"/api/v1/agents/{agent.pk}/run", {"prompt": "x"}, format="json"
    ).status_code == 404
    assert Run.objects.count() == 0


def test_a_member_cannot_run_a_private_agent_they_were_not_granted(org, owner, member, echo_model):
    agent, _ = publish(org, owner, visibility="private")
    response = bearer(member, org).post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "x"}, format="json")
    assert response.status_code == 404


def test_a_revoked_key_gets_401(org, owner):
    client = bearer(owner, org)
    ApiKey.objects.update(revoked_at="2026-01-01T00:00:00Z")
    response = client.get("/api/v1/runs")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_runs_are_listed_filtered_and_scoped_to_the_organization(org, owner, member, outsider, outsider_org, api_as):
    agent, version = publish(org, owner)
    mine = Run.objects.create(organization=org, agent=agent, version=version, surface="api", user=member, prompt="a")
    Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner, prompt="b")
    other_agent, other_version = publish(outsider_org, outsider, name="Other")
    Run.objects.create(organization=outsider_org, agent=other_agent, version=other_version, surface="api",
                       user=outsider, prompt="c")

    everything = api_as(owner, org).get("/api/v1/runs").json()["results"]
    assert {r["prompt"] for r in everything} == {"a", "b"}
    assert [r["prompt"] for r in api_as(owner, org).get("/api/v1/runs?surface=api").json()["results"]] == ["a"]
    # A member without runs:view sees their own runs only.
    assert [r["run_id"] for r in api_as(member, org).get("/api/v1/runs").json()["results"]] == [str(mine.pk)]
    assert api_as(outsider, outsider_org).get(f"/api/v1/runs/{mine.pk}").status_code == 404
    assert api_as(owner, org).get("/api/v1/runs?since=yesterday").status_code == 422


def test_run_detail_lists_its_tool_calls_without_n_plus_one(org, owner, api_as, django_assert_max_num_queries):
    from agents.models import ToolCall

    agent, version = publish(org, owner)
    run = Run.objects.create(organization=org, agent=agent, version=version, surface="api", user=owner, prompt="a")
    for i in range(5):
        ToolCall.objects.create(run=run, tool_call_id=f"c{i}", tool_name="create_chart", args={"i": i})
    client = api_as(owner, org)
    with django_assert_max_num_queries(12):
        body = client.get(f"/api/v1/runs/{run.pk}").json()
    assert [c["tool_call_id"] for c in body["tool_calls"]] == [f"c{i}" for i in range(5)]


def test_conversations_and_messages_are_the_owners_only(org, owner, member, outsider, outsider_org, api_as):
    agent, _ = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="mine")
    Message.objects.create(conversation=conversation, role="user", content="hello")
    assert [c["title"] for c in api_as(owner, org).get("/api/v1/conversations").json()["results"]] == ["mine"]
    assert api_as(member, org).get("/api/v1/conversations").json()["results"] == []
    assert api_as(member, org).get(f"/api/v1/conversations/{conversation.pk}/messages").status_code == 404
    assert api_as(outsider, outsider_org).get(f"/api/v1/conversations/{conversation.pk}/messages").status_code == 404
    messages = api_as(owner, org).get(f"/api/v1/conversations/{conversation.pk}/messages").json()["results"]
    assert [m["content"] for m in messages] == ["hello"]


def test_stop_cancels_a_queued_run(org, owner, api_as):
    agent, version = publish(org, owner)
    run = Run.objects.create(organization=org, agent=agent, version=version, surface="api", user=owner, prompt="a")
    response = api_as(owner, org).post(f"/api/v1/runs/{run.pk}/stop")
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_consecutive_waiting_calls_each_get_their_answer(org, owner, echo_model, celery_worker):
    # Each waiting call runs its async part on a fresh loop; a shared channel layer would break the second.
    agent, _ = publish(org, owner)
    client = bearer(owner, org)
    outputs = [client.post(f"/api/v1/agents/{agent.pk}/run", {"prompt": p}, format="json").json()["output"]
               for p in ("one", "two", "three")]
    assert outputs == ["echo: one", "echo: two", "echo: three"]


def test_an_outsider_gets_404_on_every_run_action(org, owner, outsider, outsider_org, api_as):
    agent, version = publish(org, owner)
    run = Run.objects.create(organization=org, agent=agent, version=version, surface="api", user=owner, prompt="a",
                             status="awaiting_answer")
    client = api_as(outsider, outsider_org)
    assert client.post(f"/api/v1/runs/{run.pk}/stop").status_code == 404
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 404
    assert client.get(f"/api/v1/runs/{run.pk}/questions").status_code == 404
    assert client.post(f"/api/v1/runs/{run.pk}/answers", {"answers": ["x"]}, format="json").status_code == 404
    assert client.post(f"/api/v1/agents/{agent.pk}/run", {"prompt": "x"}, format="json").status_code == 404
    run.refresh_from_db()
    assert run.status == "awaiting_answer"
