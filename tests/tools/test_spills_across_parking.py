"""A spilled tool result's handle still reads after the run parks for an approval and resumes in another
execution (the memory of the first one is gone): the content is kept with the run, in its organization,
and swept once the run has finished."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents.models import Conversation, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from capabilities.models import SpilledOutput
from capabilities.tasks import sweep_spilled_outputs
from capabilities.tool_output_limits.capability import RunSpillStore
from governance.models import Approval
from governance.services import decide_approval
from tests import factories
from tests.runner.conftest import publish

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("tool_capabilities", "local_allowed")]
HANDLE = re.compile(r"stored to handle '([^']+)'")


def _returns(messages) -> dict[str, str]:
    return {p.tool_name: str(p.content) for m in messages for p in getattr(m, "parts", [])
            if isinstance(p, ToolReturnPart)}


def _next_call(messages) -> tuple[str, dict, str] | None:
    """big_report → delete_contact (parks) → read_tool_result on the handle from the first turn → answer."""
    returned = _returns(messages)
    if "big_report" not in returned:
        return "big_report", {}, "c-big"
    if "delete_contact" not in returned:
        return "delete_contact", {}, "c-del"
    if "read_tool_result" not in returned:
        handle = HANDLE.search(returned["big_report"]).group(1)
        return "read_tool_result", {"handle": handle, "pattern": '"i": 499,'}, "c-read"
    return None


def scripted() -> FunctionModel:
    def respond(messages, info: AgentInfo):
        step = _next_call(messages)
        if step is None:
            return ModelResponse(parts=[TextPart("Found it.")])
        return ModelResponse(parts=[ToolCallPart(tool_name=step[0], args=step[1], tool_call_id=step[2])])

    async def stream(messages, info: AgentInfo):
        step = _next_call(messages)
        if step is None:
            yield "Found it."
            return
        yield {0: DeltaToolCall(name=step[0], json_args=json.dumps(step[1]), tool_call_id=step[2])}

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


@pytest.fixture
def parked_run(org, owner, rest_api, monkeypatch):
    report = factories.custom_tool(org, alias="big_report", url=f"{rest_api.base}/big?kb=60")
    delete = factories.custom_tool(org, alias="delete_contact", method="DELETE", url=f"{rest_api.base}/contacts/1")
    agent, version = publish(org, owner, custom_tool_ids=[str(report.pk), str(delete.pk)], capabilities=[
        {"id": "custom_tools", "config": {"tool_approval": {"delete_contact": "required"}}}])
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: scripted())
    conv = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt="Report, then clean up", user=owner,
                    acting_role="owner", conversation=conv, enqueue=False)
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    assert run.status == "awaiting_approval", run.error
    return run


def _approve_and_resume(run: Run, owner) -> Run:
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    decide_approval(actor=actor, approval=Approval.objects.get(run=run), decision="approve")
    Run.objects.filter(pk=run.pk).update(status="queued")  # what resume_run does, without the broker
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    return run


def test_a_spilled_handle_reads_after_the_run_parks_and_resumes(parked_run, org, owner):
    spilled = SpilledOutput.objects.get(run=parked_run)
    assert spilled.organization_id == org.pk and spilled.size > 20_000
    run = _approve_and_resume(parked_run, owner)
    assert run.status == "completed", run.error
    read = ToolCall.objects.get(run=run, tool_name="read_tool_result")
    text = json.dumps(read.result)
    assert '\\"i\\": 499,' in text or '"i": 499,' in text, text[:500]
    assert "No stored tool result" not in text


def test_another_organization_cannot_read_a_runs_spills(parked_run, outsider_org):
    handle = SpilledOutput.objects.get(run=parked_run).handle
    mine = RunSpillStore(run_id=str(parked_run.pk), organization_id=str(parked_run.organization_id))
    assert len(asyncio.run(mine.read(handle))) > 20_000
    theirs = RunSpillStore(run_id=str(parked_run.pk), organization_id=str(outsider_org.pk))
    with pytest.raises(FileNotFoundError):
        asyncio.run(theirs.read(handle))


def test_spills_are_swept_once_their_run_has_finished(parked_run, owner):
    assert sweep_spilled_outputs() == 0  # parked: its handles are still needed
    run = _approve_and_resume(parked_run, owner)
    assert run.status == "completed", run.error
    assert sweep_spilled_outputs() == 0  # just finished: within the grace period
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(hours=1))
    assert sweep_spilled_outputs() == 1
    assert not SpilledOutput.objects.filter(run=run).exists()
