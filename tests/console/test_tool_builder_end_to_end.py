"""The AI tool builder end to end on a fresh organization: its only model a local OpenAI-compatible server (the
scripted fake, speaking the real protocol), a person starts a session in the console, the builder researches the
provider's docs, configures, tests for real and finalizes a tool in two turns; then an agent bound to that tool
calls it in its own run, the provider sees the organization's key in its header, and no key reaches the model."""

from __future__ import annotations

import json

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents.models import Agent, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from capabilities.custom_tools.builder import BUILDER_SLUG
from capabilities.models import CustomTool, ToolBuilderSession, ToolDraft, ToolKit
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.rest_api import FakeRestAPI

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outside(settings):
    """The model server and the provider's API, both on loopback, which the operator allows here."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    provider = FakeRestAPI().start()
    with FakeOpenAIServer() as model:
        yield model, provider
    provider.stop()


def run_last(conversation_id) -> Run:
    """The conversation's newest run, carried out here (no worker in this test: the runner itself)."""
    run = Run.objects.filter(conversation_id=conversation_id).latest("created_at")
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    assert run.status == "completed", run.error
    return run


def test_a_tool_built_by_the_ai_builder_on_a_fresh_organization_is_called_by_an_agent(client_as, api_as, outside):
    model, provider = outside
    org = factories.organization(name="Fresh")
    builder = factories.member(org, "builder")
    local = factories.model_profile(org, "openai_compatible", "qwen-local", label="Local model",
                                    base_url=model.base_url)
    key = factories.secret(org, name="CRM key", value=provider.secret)
    client = client_as(builder, org)

    # ---- turn 1: the person asks; the builder starts a kit with the organization's key (by id, never its value)
    started = client.post("/tools/ai/", {"title": "CRM tools"})
    session = ToolBuilderSession.objects.get(organization=org)
    assert started.status_code == 302 and started["Location"] == f"/tools/ai/{session.pk}/"
    model.queue(Reply.tool_call("start_kit", {"name": "CRM account", "provider": "FakeCRM",
                                              "credential_id": str(key.pk), "tools": ["Check account"]}),
                Reply.text("I will read the docs next."), route="chat")
    said = client.post(f"/tools/ai/{session.pk}/say", {"prompt": "A tool that checks our CRM account",
                                                       "model_profile_id": str(local.pk)})
    assert said.status_code == 302
    session.refresh_from_db()
    run_last(session.conversation_id)
    kit = ToolKit.objects.get(session=session)
    draft = ToolDraft.objects.get(kit=kit)

    # ---- turn 2: docs read, configured, tested against the provider for real, finalized
    docs = f"{provider.base}/page.html"
    definition = {"name": "Check account", "alias": "crm_check_account", "method": "GET",
                  "url": f"{provider.base}/auth/bearer", "description": "Checks the CRM account is reachable.",
                  "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
                  "parameters": [{"name": "note", "location": "query"}]}
    model.queue(Reply.tool_call("web_fetch", {"url": docs}),
                Reply.tool_call("configure_drafts", {"drafts": [{"draft_id": str(draft.pk), "docs_url": docs,
                                                                 "definition": definition}]}),
                Reply.tool_call("test_drafts", {"tests": [{"draft_id": str(draft.pk), "args": {"note": "test"}}]}),
                Reply.tool_call("finalize_kit", {"kit_id": str(kit.pk)}),
                Reply.text("Your tool is ready."), route="chat")
    assert client.post(f"/tools/ai/{session.pk}/say", {"prompt": "Yes, go ahead"}).status_code == 302
    build = run_last(session.conversation_id)
    assert list(ToolCall.objects.filter(run=build).order_by("started_at").values_list("tool_name", flat=True)) == [
        "web_fetch", "configure_drafts", "test_drafts", "finalize_kit"]
    tool = CustomTool.objects.get(organization=org)
    assert (tool.alias, tool.credential_id) == ("crm_check_account", key.pk)
    tested = [r for r in provider.requests if r.path == "/auth/bearer"]
    assert len(tested) == 1  # the builder's own test call
    # The builder ran on the chat model chosen, as the organization's own tool-builder agent.
    assert all(r.json["model"] == "qwen-local" for r in model.requests_to("chat"))
    assert Agent.objects.filter(organization=org, slug=BUILDER_SLUG).exists()

    # ---- an agent bound to the new tool calls it in its own run
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=builder))
    agent = agent_services.create_agent(actor=actor, name="Account checker", spec={
        "name": "Account checker", "instructions": "Check the CRM account when asked.",
        "model_profile_id": str(local.pk), "custom_tool_ids": [str(tool.pk)],
        "capabilities": [{"id": "custom_tools", "config": {}}]})
    agent_services.publish_agent(actor=actor, agent=agent, note="with the built tool")
    before = len(model.requests_to("chat"))
    model.queue(Reply.tool_call("crm_check_account", {"note": "from the agent"}),
                Reply.text("The CRM account answers."), route="chat")
    started = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/run?wait=false",
                                             {"prompt": "Is our CRM account reachable?"}, format="json")
    assert started.status_code == 202, started.json()
    run = Run.objects.get(pk=started.json()["run_id"])
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    assert run.status == "completed", run.error
    call = ToolCall.objects.get(run=run, tool_name="crm_check_account")
    assert call.status == "ok", call.result
    reached = [r for r in provider.requests if r.path == "/auth/bearer"]
    assert len(reached) == 2 and reached[-1].query.get("note") == ["from the agent"]
    assert reached[-1].headers.get("Authorization") == f"Bearer {provider.secret}"
    # The key went only to the provider: not to the model, not into the run's record.
    agent_requests = model.requests_to("chat")[before:]
    assert len(agent_requests) == 2
    tool_results = [m for m in agent_requests[1].json["messages"] if m.get("role") == "tool"]
    answered = json.loads(tool_results[0]["content"])
    assert answered["status"] == 200 and answered["body"]["ok"] is True  # the provider accepted the key
    # The provider echoed the header back; the model sees it hidden.
    assert answered["body"]["echo_headers"]["Authorization"] == "Bearer [credential hidden]"
    assert provider.secret not in model.all_bodies()
    assert provider.secret not in json.dumps(list(ToolCall.objects.filter(run__organization=org)
                                                  .values("args", "result")), default=str)
