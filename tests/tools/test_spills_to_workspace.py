"""A tool result too big for the context spills into the run's workspace, under /workspace/tool_output/, when the
agent has one (spec "Un volcado va al propio backend del agent"): the agent's own read_file and grep reach it, it
is the organization's, it counts against the workspace's cap and is swept once its run has finished. The
`read_tool_result` a custom tool's big response brings is a declared tool: a binding gates or renames it."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Conversation, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from capabilities.models import SpilledOutput
from capabilities.tasks import sweep_spilled_outputs
from capabilities.tool_output_limits.capability import RunSpillStore
from governance.models import Approval
from tests import factories
from tests.runner.conftest import publish
from workspaces import store
from workspaces.models import Workspace, WorkspaceFile

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("tool_capabilities", "local_allowed")]
HANDLE = re.compile(r"stored to handle '([^']+)'")
NEEDLE = '"i": 499,'


def _returns(messages) -> dict[str, str]:
    return {p.tool_name: str(p.content) for m in messages for p in getattr(m, "parts", [])
            if isinstance(p, ToolReturnPart)}


def scripted(steps, offered: list[set[str]] | None = None) -> FunctionModel:
    """`steps(returned)` → the next (tool, args) given the results so far, or None to answer."""

    def next_call(messages, info: AgentInfo):
        if offered is not None:
            offered.append({t.name for t in info.function_tools})
        step = steps(_returns(messages))
        return None if step is None else (step[0], step[1], f"c-{step[0]}")

    def respond(messages, info: AgentInfo):
        step = next_call(messages, info)
        if step is None:
            return ModelResponse(parts=[TextPart("Done.")])
        return ModelResponse(parts=[ToolCallPart(tool_name=step[0], args=step[1], tool_call_id=step[2])])

    async def stream(messages, info: AgentInfo):
        step = next_call(messages, info)
        if step is None:
            yield "Done."
            return
        yield {0: DeltaToolCall(name=step[0], json_args=json.dumps(step[1]), tool_call_id=step[2])}

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


def read_it_with_the_workspace_tools(returned: dict[str, str]):
    if "big_report" not in returned:
        return "big_report", {}
    handle = HANDLE.search(returned["big_report"]).group(1)
    if "read_file" not in returned:
        return "read_file", {"path": handle, "offset": 0, "limit": 5}
    if "grep" not in returned:
        return "grep", {"pattern": NEEDLE, "path": store.SPILLS, "output_mode": "content"}
    return None


def read_it_with_read_tool_result(returned: dict[str, str]):
    if "big_report" not in returned:
        return "big_report", {}
    if "read_tool_result" not in returned:
        handle = HANDLE.search(returned["big_report"]).group(1)
        return "read_tool_result", {"handle": handle, "pattern": NEEDLE}
    return None


SANDBOX = {"id": "sandbox", "config": {"backend": "state", "session_scope": "conversation"}}


def _run(org, owner, rest_api, monkeypatch, steps, *, capabilities, offered=None) -> Run:
    report = factories.custom_tool(org, alias="big_report", url=f"{rest_api.base}/big?kb=60")
    agent, version = publish(org, owner, custom_tool_ids=[str(report.pk)], capabilities=capabilities)
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: scripted(steps, offered))
    conv = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt="Report", user=owner,
                    acting_role="owner", conversation=conv, enqueue=False)
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    return run


def test_a_big_result_lands_in_tool_output_and_read_file_and_grep_reach_it(org, owner, rest_api, monkeypatch):
    run = _run(org, owner, rest_api, monkeypatch, read_it_with_the_workspace_tools,
               capabilities=[{"id": "custom_tools"}, SANDBOX])
    assert run.status == "completed", run.error
    spill = WorkspaceFile.objects.get(path__startswith=store.SPILLS + "/")
    assert spill.workspace.organization_id == org.pk and str(spill.created_by_run) == str(run.pk)
    assert spill.path.startswith(f"{store.SPILLS}/{run.pk}/") and spill.size > 20_000
    assert not SpilledOutput.objects.filter(run=run).exists()  # the workspace holds it, not a row beside it
    big = ToolCall.objects.get(run=run, tool_name="big_report")
    assert spill.path in json.dumps(big.result) and "read_file and grep reach it" in json.dumps(big.result)
    page = json.dumps(ToolCall.objects.get(run=run, tool_name="read_file").result)
    assert '\\"rows\\"' in page or '"rows"' in page, page[:300]
    found = json.dumps(ToolCall.objects.get(run=run, tool_name="grep").result)
    assert "499" in found and spill.path in found, found[:300]


def test_read_tool_result_reads_a_workspace_spill_and_another_organization_cannot(
        org, owner, outsider_org, outsider, rest_api, monkeypatch):
    run = _run(org, owner, rest_api, monkeypatch, read_it_with_read_tool_result,
               capabilities=[{"id": "custom_tools"}, SANDBOX])
    assert run.status == "completed", run.error
    read = json.dumps(ToolCall.objects.get(run=run, tool_name="read_tool_result").result)
    assert "499" in read and "No stored tool result" not in read
    handle = WorkspaceFile.objects.get(path__startswith=store.SPILLS + "/").path

    mine = Workspace.objects.get(organization=org)
    theirs_agent, _ = publish(outsider_org, outsider, capabilities=[SANDBOX])
    theirs = Workspace.objects.create(organization=outsider_org, agent=theirs_agent, scope="agent", key="")
    own = RunSpillStore(scratch={store.SCRATCH_BACKEND: store.DatabaseWorkspaceBackend(str(mine.pk))})
    assert NEEDLE.encode() in asyncio.run(own.read(handle))
    other = RunSpillStore(scratch={store.SCRATCH_BACKEND: store.DatabaseWorkspaceBackend(str(theirs.pk))})
    with pytest.raises(FileNotFoundError):
        asyncio.run(other.read(handle))
    with pytest.raises(FileNotFoundError):  # a run without a workspace has no spill files at all
        asyncio.run(RunSpillStore().read(handle))
    with pytest.raises(FileNotFoundError):  # nor does "../" leave the spill folder of the run's own workspace
        asyncio.run(own.read(store.SPILLS + "/../uploads/x.txt"))


def test_read_tool_result_waits_for_a_person_when_its_binding_gates_it(org, owner, rest_api, monkeypatch):
    run = _run(org, owner, rest_api, monkeypatch, read_it_with_read_tool_result,
               capabilities=[{"id": "custom_tools", "tool_approval": {"read_tool_result": "required"}}, SANDBOX])
    assert run.status == "awaiting_approval", run.error
    approval = Approval.objects.get(run=run)
    assert approval.tool_name == "read_tool_result"
    assert not ToolCall.objects.filter(run=run, tool_name="read_tool_result", status="completed").exists()


def test_a_binding_renames_read_tool_result(org, owner, rest_api, monkeypatch):
    offered: list[set[str]] = []

    def steps(returned):
        if "big_report" not in returned:
            return "big_report", {}
        if "read_api_result" not in returned:
            return "read_api_result", {"handle": HANDLE.search(returned["big_report"]).group(1), "pattern": NEEDLE}
        return None

    run = _run(org, owner, rest_api, monkeypatch, steps, offered=offered, capabilities=[
        {"id": "custom_tools", "tool_overrides": {"read_tool_result": {"name": "read_api_result"}}}])
    assert run.status == "completed", run.error
    assert "read_api_result" in offered[0] and "read_tool_result" not in offered[0]
    assert "499" in json.dumps(ToolCall.objects.get(run=run, tool_name="read_api_result").result)


def test_with_tool_output_limits_bound_too_one_reader_reads_both(org, owner, rest_api, monkeypatch):
    offered: list[set[str]] = []

    def steps(returned):  # whichever binding spilled it (their serializers differ), the one reader pages it
        if "big_report" not in returned:
            return "big_report", {}
        if "read_tool_result" not in returned:
            return "read_tool_result", {"handle": HANDLE.search(returned["big_report"]).group(1), "pattern": "rows"}
        return None

    run = _run(org, owner, rest_api, monkeypatch, steps, offered=offered,
               capabilities=[{"id": "custom_tools"}, {"id": "tool_output_limits"}])
    assert run.status == "completed", run.error
    assert "read_tool_result" in offered[0]
    read = json.dumps(ToolCall.objects.get(run=run, tool_name="read_tool_result").result)
    assert "1 matching line(s)" in read and '\\"i\\":0,' in read, read[:300]


def test_a_full_workspace_truncates_instead_of_spilling(org, owner, rest_api, monkeypatch, settings):
    settings.SANDBOX_STATE_MAX_BYTES = 10_000

    def steps(returned):
        return ("big_report", {}) if "big_report" not in returned else None

    run = _run(org, owner, rest_api, monkeypatch, steps, capabilities=[{"id": "custom_tools"}, SANDBOX])
    assert run.status == "completed", run.error
    assert not WorkspaceFile.objects.filter(path__startswith=store.SPILLS + "/").exists()
    text = json.dumps(ToolCall.objects.get(run=run, tool_name="big_report").result)
    assert "stored to handle" not in text and len(text) < 40_000


def test_a_runs_spills_are_swept_once_it_has_finished_and_nothing_else(org, owner, rest_api, monkeypatch):
    run = _run(org, owner, rest_api, monkeypatch, read_it_with_read_tool_result,
               capabilities=[{"id": "custom_tools"}, SANDBOX])
    assert run.status == "completed", run.error
    workspace = Workspace.objects.get(organization=org)
    store.write(workspace.pk, "notes.md", b"mine", run_id=str(run.pk))
    # Another run sharing the workspace, still going: its spill stays.
    other = Run.objects.create(organization=org, agent=run.agent, version=run.version, prompt="x", surface="web")
    store.write(workspace.pk, f"{store.SPILLS}/{other.pk}/c.0", b"theirs", run_id=str(other.pk))
    assert sweep_spilled_outputs() == 0  # just finished: within the grace period
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(hours=1))
    assert sweep_spilled_outputs() == 1
    left = set(WorkspaceFile.objects.filter(workspace=workspace, is_dir=False).values_list("path", flat=True))
    assert left == {"/workspace/notes.md", f"{store.SPILLS}/{other.pk}/c.0"}
