"""`generate_video` inside real runs (agents.runner.execute, real PostgreSQL), a BytePlus job polled on the
local fake: the tool result frame carries the stored clip's URL, the call, the file and the spend all name the
run; an approval gate parks the call before anything is submitted; publishing without a key is refused."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import Run, RunStatus, ToolCall
from capabilities import registry
from capabilities.video_generation import CAPABILITY
from capabilities.video_generation import capability as video
from governance.models import Approval, SpendEntry
from media.models import GeneratedMedia
from tests import factories
from tests.fakes.video_server import FakeVideoServer, Job, fake_video  # noqa: F401
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = FakeVideoServer.api_key
BYTEPLUS = {"provider": "byteplus", "model": "seedance-1-0-pro-250528"}


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    monkeypatch.setattr(video, "POLL_SECONDS", 0)
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


def director_model() -> FunctionModel:
    """Asks for one clip; after its result, answers in words."""

    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is your clip."
            return
        yield {0: DeltaToolCall(name="generate_video", json_args=json.dumps({"prompt": "A paper boat on a river"}),
                                tool_call_id="vid-1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def director(org, owner, **binding):
    secret = factories.secret(org, value=KEY)
    return publish(org, owner, capabilities=[{"id": "video_generation", "secret_id": str(secret.pk),
                                              "config": BYTEPLUS, **binding}])


def test_a_run_makes_a_clip_and_its_tool_result_frame_carries_the_stored_video(org, owner, fake_video,
                                                                              scripted_model):
    scripted_model(director_model())
    fake_video.jobs.append(Job(polls=1, duration=5))
    agent, version = director(org, owner)
    run = start(org, owner, agent, version, prompt="Make a clip")

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "Here is your clip."
    media = GeneratedMedia.objects.get()
    assert (media.run_id, media.conversation_id, media.kind, media.media_type) == (
        run.pk, run.conversation_id, "video", "video/mp4")
    [result] = [f["data"] for f in frames if f["type"] == "tool_result"]
    assert result["content"]["url"] == f"/api/v1/generated/{media.filename}"
    call = ToolCall.objects.get(run=run)
    assert (call.tool_name, call.capability_id, call.status) == ("generate_video", "video_generation", "ok")
    entry = SpendEntry.objects.get(kind="video_generation")
    assert entry.run_id == run.pk and entry.model == "byteplus:seedance-1-0-pro-250528"
    assert KEY not in json.dumps(frames)


def test_an_approval_gate_parks_the_call_before_anything_is_submitted_and_approval_makes_it(
        org, owner, admin_user, api_as, fake_video, scripted_model):
    scripted_model(director_model())
    agent, version = director(org, owner, tool_approval={"generate_video": "required"})
    run = start(org, owner, agent, version, prompt="Make a clip")

    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert fake_video.requests == []
    assert not SpendEntry.objects.filter(kind="video_generation").exists() and not GeneratedMedia.objects.exists()

    approval = Approval.objects.get(run=run)
    client = api_as(admin_user, org)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)

    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    assert len(fake_video.submitted) == 1 and GeneratedMedia.objects.filter(run=run).count() == 1


def test_publishing_a_video_binding_without_a_key_is_refused(org, owner):
    actor = actor_of(owner, org)
    agent = agent_services.create_agent(actor=actor, name="Keyless director", spec={
        "name": "Keyless director", "instructions": "Film.", "capabilities": [{"id": "video_generation"}]})

    with pytest.raises(Invalid) as refused:
        agent_services.publish_agent(actor=actor, agent=agent, note="test")

    assert "video_generation" in json.dumps(refused.value.details)
    assert agent.versions.count() == 0
