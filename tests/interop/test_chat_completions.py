"""/v1/chat/completions and /v1/models through daphne with the real `openai` client; runs on the in-process
worker with scripted models."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import openai
import pytest
from pydantic_ai.messages import TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Conversation, Message, Run, RunStatus
from governance.models import Approval, SpendEntry
from tests.interop.conftest import api_key
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seen():
    return []


@pytest.fixture
def echo_model(scripted_model, seen):
    """Answers `echo: <the prompt>` in two deltas; keeps what each request carried."""

    async def stream(messages, info: AgentInfo):
        seen.append({"messages": messages, "instructions": info.instructions})
        yield "echo: "
        yield str(messages[-1].parts[-1].content)

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


@pytest.fixture
def helper(org, owner):
    agent, _ = publish(org, owner, name="Helper", description="Answers questions about the shop.")
    return agent


def client(base: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=60)


def test_a_completion_runs_the_agent_and_reports_usage(live_server_url, org, owner, helper, echo_model, seen,
                                                       celery_worker):
    completion = client(live_server_url, api_key(owner, org)).chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "hello"}]
    )
    assert completion.object == "chat.completion"
    assert completion.model == helper.slug
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "echo: hello"
    assert completion.choices[0].finish_reason == "stop"
    run = Run.objects.get()
    assert completion.id == f"chatcmpl-{run.pk.hex}"
    assert run.surface == "api" and run.api_key_id is not None and run.status == RunStatus.COMPLETED
    assert completion.usage.prompt_tokens == run.input_tokens > 0
    assert completion.usage.completion_tokens == run.output_tokens > 0
    assert completion.usage.total_tokens == run.input_tokens + run.output_tokens


def test_a_stream_is_openais_chunks_with_a_usage_chunk(live_server_url, org, owner, helper, echo_model,
                                                       celery_worker):
    stream = client(live_server_url, api_key(owner, org)).chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "stream me"}], stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream me"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    run = Run.objects.get()
    assert chunks[-1].usage.prompt_tokens == run.input_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_a_stream_without_include_usage_has_no_usage_chunk(live_server_url, org, owner, helper, echo_model,
                                                           celery_worker):
    chunks = list(client(live_server_url, api_key(owner, org)).chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "x"}], stream=True,
    ))
    assert all(c.choices for c in chunks) and chunks[-1].choices[0].finish_reason == "stop"


def test_the_clients_messages_are_the_conversation_and_its_system_message_adds_context(
    live_server_url, org, owner, helper, echo_model, seen, celery_worker
):
    client(live_server_url, api_key(owner, org)).chat.completions.create(model=helper.slug, messages=[
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "what is my name?"},
    ])
    # The earlier turns are the model's message history (a request, a response), the last one the prompt.
    said = [(type(m).__name__, p.content) for m in seen[0]["messages"] for p in m.parts
            if isinstance(p, (UserPromptPart, TextPart))]
    assert said == [("ModelRequest", "my name is Ada"), ("ModelResponse", "noted"),
                    ("ModelRequest", "what is my name?")]
    assert Run.objects.get().prompt == "what is my name?"
    assert "You are a helpful test agent." in seen[0]["instructions"]  # the agent's own, kept
    assert "Answer in French." in seen[0]["instructions"]
    assert not Conversation.objects.exists()  # nothing stored without a conversation id


def test_a_conversation_id_continues_the_stored_transcript(live_server_url, org, owner, helper, echo_model, seen,
                                                           celery_worker):
    conversation = Conversation.objects.create(organization=org, agent=helper, owner=owner, surface="api")
    openai_client = client(live_server_url, api_key(owner, org))
    openai_client.chat.completions.create(model=helper.slug, messages=[{"role": "user", "content": "first"}],
                                          metadata={"conversation_id": str(conversation.pk)})
    openai_client.chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "ignored"}, {"role": "user", "content": "second"}],
        extra_headers={"X-AgenticOS-Conversation-Id": str(conversation.pk)},
    )
    assert list(Message.objects.filter(conversation=conversation).order_by("id").values_list("role", "content")) == [
        ("user", "first"), ("assistant", "echo: first"), ("user", "second"), ("assistant", "echo: second")]
    assert str(seen[1]["messages"][-1].parts[-1].content) == "second"  # history from the store, not the request
    assert any("echo: first" in str(getattr(p, "content", "")) for m in seen[1]["messages"] for p in m.parts)


def test_another_organizations_conversation_is_a_404(live_server_url, org, owner, helper, outsider, outsider_org,
                                                     echo_model):
    theirs_agent, _ = publish(outsider_org, outsider, name="Theirs")
    theirs = Conversation.objects.create(organization=outsider_org, agent=theirs_agent, owner=outsider)
    with pytest.raises(openai.NotFoundError):
        client(live_server_url, api_key(owner, org)).chat.completions.create(
            model=helper.slug, messages=[{"role": "user", "content": "x"}], metadata={"conversation_id": str(theirs.pk)})
    assert not Run.objects.exists()


def test_models_lists_the_agents_the_key_may_run_and_an_outsider_sees_none(
    live_server_url, org, owner, member, helper, outsider, outsider_org
):
    private, _ = publish(org, owner, name="Private", visibility="private")
    publish(outsider_org, outsider, name="Theirs")
    ours = {m.id for m in client(live_server_url, api_key(member, org)).models.list()}
    assert ours == {helper.slug, f"{helper.slug}@dev"}  # the owner's private agent is not the member's
    owners = {m.id for m in client(live_server_url, api_key(owner, org)).models.list()}
    assert {helper.slug, private.slug} <= owners
    theirs = {m.id for m in client(live_server_url, api_key(outsider, outsider_org)).models.list()}
    assert theirs and not theirs & owners


def test_an_unknown_model_and_an_outsiders_key_get_404_and_run_nothing(
    live_server_url, org, owner, helper, outsider, outsider_org
):
    with pytest.raises(openai.NotFoundError) as unknown:
        client(live_server_url, api_key(owner, org)).chat.completions.create(
            model="no-such-agent", messages=[{"role": "user", "content": "x"}])
    assert unknown.value.code == "model_not_found"
    for model in (helper.slug, str(helper.pk)):
        with pytest.raises(openai.NotFoundError):
            client(live_server_url, api_key(outsider, outsider_org)).chat.completions.create(
                model=model, messages=[{"role": "user", "content": "x"}])
    assert not Run.objects.exists()


def test_a_bad_key_gets_401_in_openais_error_shape(live_server_url, helper):
    with pytest.raises(openai.AuthenticationError) as bad:
        client(live_server_url, "aos_not-a-key").chat.completions.create(
            model=helper.slug, messages=[{"role": "user", "content": "x"}])
    assert bad.value.status_code == 401
    assert set(bad.value.body) >= {"message", "type", "code"} and bad.value.body["type"] == "authentication_error"
    assert httpx.get(f"{live_server_url}/v1/models").status_code == 401
    assert not Run.objects.exists()


def test_client_tools_are_refused_and_run_nothing(live_server_url, org, owner, helper):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(openai.BadRequestError) as refused:
        client(live_server_url, api_key(owner, org)).chat.completions.create(
            model=helper.slug, messages=[{"role": "user", "content": "x"}], tools=[tool])
    assert refused.value.code == "tools_not_supported" and "server-side" in refused.value.message
    assert not Run.objects.exists()


def test_a_spent_budget_is_402_before_any_model_call(live_server_url, org, owner, echo_model, seen, celery_worker):
    agent, _ = publish(org, owner, name="Capped", budget="1.00")
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1.00"), surface="api")
    openai_client = client(live_server_url, api_key(owner, org))
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as spent:
            openai_client.chat.completions.create(model=agent.slug, messages=[{"role": "user", "content": "x"}],
                                                  stream=stream)
        assert spent.value.status_code == 402 and spent.value.code == "budget_exceeded"
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.BUDGET_EXCEEDED}
    assert seen == []  # the model was never called


def test_a_parked_run_ends_the_completion_saying_so_with_its_run_id(live_server_url, org, owner, scripted_model,
                                                                    celery_worker):
    async def stream(messages, info):
        yield "Drawing."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c1")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, _ = publish(org, owner, name="Charts",
                       capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    openai_client = client(live_server_url, api_key(owner, org))
    completion = openai_client.chat.completions.create(model=agent.slug, messages=[{"role": "user", "content": "x"}])
    first = Run.objects.get()
    assert first.status == RunStatus.AWAITING_APPROVAL and Approval.objects.filter(run=first).exists()
    assert completion.choices[0].finish_reason == "stop"
    assert "waiting for an approval" in completion.choices[0].message.content
    assert str(first.pk) in completion.choices[0].message.content

    chunks = list(openai_client.chat.completions.create(
        model=agent.slug, messages=[{"role": "user", "content": "y"}], stream=True))
    second = Run.objects.exclude(pk=first.pk).get()
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("Drawing.") and str(second.pk) in text
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_key_whose_owner_became_a_viewer_lists_nothing_and_may_not_run(live_server_url, org, member, helper):
    from agenticos.models import Membership

    openai_client = client(live_server_url, api_key(member, org))  # a viewer cannot make keys: demoted after
    Membership.objects.filter(user=member, organization=org).update(role="viewer")
    assert list(openai_client.models.list()) == []
    with pytest.raises(openai.PermissionDeniedError):
        openai_client.chat.completions.create(model=helper.slug, messages=[{"role": "user", "content": "x"}])
    assert not Run.objects.exists()


def test_an_organization_header_naming_another_organization_is_404(live_server_url, org, owner, helper, outsider_org):
    openai_client = client(live_server_url, api_key(owner, org))
    with pytest.raises(openai.NotFoundError):
        openai_client.chat.completions.create(model=helper.slug, messages=[{"role": "user", "content": "x"}],
                                              extra_headers={"X-Organization-Id": str(outsider_org.pk)})
    assert not Run.objects.exists()


def test_slug_at_environment_runs_that_environments_version(live_server_url, org, owner, helper, echo_model,
                                                            celery_worker):
    completion = client(live_server_url, api_key(owner, org)).chat.completions.create(
        model=f"{helper.slug}@dev", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "echo: hi"
    with pytest.raises(openai.NotFoundError):
        client(live_server_url, api_key(owner, org)).chat.completions.create(
            model=f"{helper.slug}@nowhere", messages=[{"role": "user", "content": "hi"}])
    assert Run.objects.count() == 1


def test_malformed_requests_are_400_in_openais_shape_and_run_nothing(live_server_url, org, owner, helper):
    headers = {"Authorization": f"Bearer {api_key(owner, org)}", "Content-Type": "application/json"}
    url = f"{live_server_url}/v1/chat/completions"
    for body in (b"{not json", json.dumps({"model": helper.slug, "messages": []}).encode(),
                 json.dumps({"model": helper.slug, "messages": [{"role": "assistant", "content": "x"}]}).encode(),
                 json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode()):
        response = httpx.post(url, content=body, headers=headers)
        assert response.status_code == 400, body
        assert set(response.json()["error"]) >= {"message", "type", "code"}
    assert not Run.objects.exists()


def test_a_colleagues_conversation_or_another_agents_is_a_404(live_server_url, org, owner, member, helper):
    other_agent, _ = publish(org, owner, name="Other")
    colleagues = Conversation.objects.create(organization=org, agent=helper, owner=owner)
    mine_elsewhere = Conversation.objects.create(organization=org, agent=other_agent, owner=member)
    openai_client = client(live_server_url, api_key(member, org))
    for conversation in (colleagues, mine_elsewhere):
        with pytest.raises(openai.NotFoundError):
            openai_client.chat.completions.create(
                model=helper.slug, messages=[{"role": "user", "content": "x"}],
                extra_headers={"X-AgenticOS-Conversation-Id": str(conversation.pk)})
    assert not Run.objects.exists() and not Message.objects.exists()


def test_the_conversation_header_alone_continues_a_stored_transcript_streamed_or_not(
    live_server_url, org, owner, helper, echo_model, seen, celery_worker
):
    conversation = Conversation.objects.create(organization=org, agent=helper, owner=owner, surface="api")
    header = {"X-AgenticOS-Conversation-Id": str(conversation.pk)}
    openai_client = client(live_server_url, api_key(owner, org))
    raw = openai_client.chat.completions.with_raw_response.create(
        model=helper.slug, messages=[{"role": "user", "content": "my name is Ada"}], extra_headers=header)
    assert raw.headers["X-AgenticOS-Conversation-Id"] == str(conversation.pk)
    assert raw.parse().choices[0].message.content == "echo: my name is Ada"

    # Streamed, with only the new message: the earlier turn comes from the store.
    raw = openai_client.chat.completions.with_raw_response.create(
        model=helper.slug, messages=[{"role": "user", "content": "what is my name?"}], stream=True,
        extra_headers=header)
    assert raw.headers["X-AgenticOS-Conversation-Id"] == str(conversation.pk)
    assert "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices) == "echo: what is my name?"

    assert list(Message.objects.filter(conversation=conversation).order_by("id").values_list("role", "content")) == [
        ("user", "my name is Ada"), ("assistant", "echo: my name is Ada"),
        ("user", "what is my name?"), ("assistant", "echo: what is my name?")]
    assert set(Run.objects.values_list("conversation_id", flat=True)) == {conversation.pk}
    assert Conversation.objects.count() == 1  # continued, not a new one
    history = [(type(m).__name__, str(p.content)) for m in seen[1]["messages"] for p in m.parts
               if isinstance(p, (UserPromptPart, TextPart))]
    assert history == [("ModelRequest", "my name is Ada"), ("ModelResponse", "echo: my name is Ada"),
                       ("ModelRequest", "what is my name?")]


def test_an_organization_header_chooses_the_keys_organization_for_a_person_in_two(
    live_server_url, org, owner, helper, echo_model, celery_worker
):
    from agenticos.models import Membership
    from tests import factories

    second = factories.organization(name="Beta")
    Membership.objects.create(organization=second, user=owner, role="builder")
    theirs, _ = publish(second, owner, name="Helper")  # the same slug as the first organization's agent
    payroll, _ = publish(second, owner, name="Payroll")
    assert theirs.slug == helper.slug
    openai_client = client(live_server_url, api_key(owner, second))
    chosen = {"X-Organization-Id": str(second.pk)}

    models = list(openai_client.models.list(extra_headers=chosen))
    assert {m.id for m in models} == {theirs.slug, f"{theirs.slug}@dev", payroll.slug, f"{payroll.slug}@dev"}
    assert {m.owned_by for m in models} == {second.slug}
    completion = openai_client.chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "hi"}], extra_headers=chosen)
    assert completion.choices[0].message.content == "echo: hi"
    run = Run.objects.get()
    assert run.organization_id == second.pk and run.agent_id == theirs.pk  # not the first organization's Helper

    # The person owns the first organization too, but this key acts in the second only: naming the first is 404.
    first = {"X-Organization-Id": str(org.pk)}
    with pytest.raises(openai.NotFoundError):
        openai_client.models.list(extra_headers=first)
    with pytest.raises(openai.NotFoundError):
        openai_client.chat.completions.create(
            model=helper.slug, messages=[{"role": "user", "content": "x"}], extra_headers=first)
    assert Run.objects.count() == 1

    # The first organization's key, naming it, runs the first organization's Helper.
    client(live_server_url, api_key(owner, org)).chat.completions.create(
        model=helper.slug, messages=[{"role": "user", "content": "hello"}], extra_headers=first)
    assert Run.objects.exclude(pk=run.pk).get().agent_id == helper.pk
