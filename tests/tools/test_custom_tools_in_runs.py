"""Custom tools through the real runner: the secret is absent from every message, tool call row, frame and
log line; approval parks a call by the tool's alias; a big response is read back through its handle."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Conversation, Message, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from tests import factories
from tests.runner.conftest import publish

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("tool_capabilities", "local_allowed")]


def tool_then_text(name: str, args: dict) -> FunctionModel:
    def answered(messages) -> bool:
        return any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", []))

    def respond(messages, info: AgentInfo):
        if answered(messages):
            return ModelResponse(parts=[TextPart("All done.")])
        return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id="call-1")])

    async def stream(messages, info: AgentInfo):
        if answered(messages):
            yield "All done."
            return
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id="call-1")}

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


def _run(org, user, agent, version, model, monkeypatch) -> tuple[Run, list[dict]]:
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
    conv = Conversation.objects.create(organization=org, agent=agent, owner=user, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt="Who am I?", user=user, acting_role="owner",
                    conversation=conv, enqueue=False)
    sink = CollectingSink()
    execute(run.pk, sink)
    return Run.objects.get(pk=run.pk), sink.frames


@pytest.mark.parametrize("family,auth", [
    ("bearer", {"family": "header", "header_name": "Authorization", "prefix": "Bearer "}),
    ("query", {"family": "query", "query_name": "api_key"}),
])
def test_the_credential_never_appears_in_messages_tool_calls_frames_or_logs(
    org, owner, rest_api, monkeypatch, caplog, family, auth
):
    caplog.set_level(logging.DEBUG)
    secret = factories.secret(org, value=rest_api.secret)
    tool = factories.custom_tool(org, alias="whoami", url=f"{rest_api.base}/auth/{family}", auth=auth,
                                 credential=secret)
    agent, version = publish(org, owner, custom_tool_ids=[str(tool.pk)],
                             capabilities=[{"id": "custom_tools", "config": {}}])
    run, frames = _run(org, owner, agent, version, tool_then_text("whoami", {}), monkeypatch)
    assert run.status == "completed", run.error
    call = ToolCall.objects.get(run=run)
    assert call.result["status"] == 200 and call.result["body"]["ok"] is True
    assert rest_api.requests[-1].path == f"/auth/{family}"  # the provider really saw the credential
    everything = json.dumps([
        list(Message.objects.filter(run=run).values("content", "parts")),
        list(ToolCall.objects.filter(run=run).values("args", "result")),
        frames, run.parked_state, run.error,
    ], default=str) + caplog.text
    assert rest_api.secret not in everything


def test_a_tool_that_requires_approval_parks_by_its_alias_and_is_not_called(org, owner, rest_api, monkeypatch):
    tool = factories.custom_tool(org, alias="delete_contact", method="DELETE", url=f"{rest_api.base}/contacts/1")
    agent, version = publish(org, owner, custom_tool_ids=[str(tool.pk)], capabilities=[
        {"id": "custom_tools", "config": {"tool_approval": {"delete_contact": "required"}}}])
    run, frames = _run(org, owner, agent, version, tool_then_text("delete_contact", {}), monkeypatch)
    assert run.status == "awaiting_approval", run.status
    assert rest_api.requests == []
    from governance.models import Approval

    assert Approval.objects.get(run=run).tool_name == "delete_contact"
    assert any(f["type"] == "tool_approval_required" for f in frames)


def test_an_approved_call_runs_when_the_run_resumes(org, owner, rest_api, monkeypatch):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from governance.models import Approval
    from governance.services import decide_approval

    tool = factories.custom_tool(org, alias="echo_it", method="POST", url=f"{rest_api.base}/echo",
                                 parameters=[{"name": "note", "location": "body", "required": True}])
    agent, version = publish(org, owner, custom_tool_ids=[str(tool.pk)], capabilities=[
        {"id": "custom_tools", "config": {"tool_approval": {"echo_it": "required"}}}])
    run, _ = _run(org, owner, agent, version, tool_then_text("echo_it", {"note": "hi"}), monkeypatch)
    assert run.status == "awaiting_approval" and rest_api.requests == []
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    decide_approval(actor=actor, approval=Approval.objects.get(run=run), decision="approve")
    Run.objects.filter(pk=run.pk).update(status="queued")  # what resume_run does, without the broker
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert [(r.method, json.loads(r.body)) for r in rest_api.requests] == [("POST", {"note": "hi"})]
