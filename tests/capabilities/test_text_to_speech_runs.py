"""`generate_speech` inside real runs (agents.runner.execute, real PostgreSQL), OpenAI's speech endpoint reached
through the OpenAI SDK against the local fake: the tool result frame carries the stored clip's URL, the call,
the file and the spend all name the run; an approval gate parks the call before anything is paid; publishing
without a key is refused."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import Run, RunStatus, ToolCall
from capabilities import registry
from capabilities.text_to_speech import CAPABILITY
from governance.models import Approval, SpendEntry
from media.models import GeneratedMedia
from tests import factories
from tests.fakes.tts_server import FakeSpeechServer, fake_speech, mp3_of  # noqa: F401
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = FakeSpeechServer.api_key
TEXT = "Good morning, the build is green."


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


def narrator_model() -> FunctionModel:
    """Asks for one clip; after its result, answers in words."""

    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is the recording."
            return
        yield {0: DeltaToolCall(name="generate_speech", json_args=json.dumps({"text": TEXT, "voice": "coral"}),
                                tool_call_id="tts-1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def narrator(org, owner, **binding):
    secret = factories.secret(org, value=KEY)
    return publish(org, owner, capabilities=[{"id": "text_to_speech", "secret_id": str(secret.pk), **binding}])


def test_a_run_speaks_through_the_openai_client_and_its_frame_carries_the_stored_clip(org, owner, fake_speech,
                                                                                     scripted_model):
    scripted_model(narrator_model())
    agent, version = narrator(org, owner)
    run = start(org, owner, agent, version, prompt="Read the status aloud")

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "Here is the recording."
    media = GeneratedMedia.objects.get()
    assert (media.run_id, media.conversation_id, media.organization_id, media.kind) == (
        run.pk, run.conversation_id, org.pk, "speech")
    [result] = [f["data"] for f in frames if f["type"] == "tool_result"]
    assert result["content"]["url"] == f"/api/v1/generated/{media.filename}"
    assert result["content"]["media_type"] == "audio/mpeg"
    call = ToolCall.objects.get(run=run)
    assert (call.tool_name, call.capability_id, call.status) == ("generate_speech", "text_to_speech", "ok")
    entry = SpendEntry.objects.get(kind="text_to_speech")
    assert entry.run_id == run.pk and not entry.is_partial and entry.cost_usd > 0
    [request] = fake_speech.requests
    assert request.headers["authorization"] == f"Bearer {KEY}" and request.json["voice"] == "coral"
    assert request.headers["user-agent"].startswith("AsyncOpenAI/Python")  # the real SDK spoke to the fake
    assert KEY not in json.dumps(frames)


def test_an_approval_gate_parks_the_call_before_anything_is_paid_and_approval_speaks_it(
        org, owner, admin_user, api_as, fake_speech, scripted_model):
    scripted_model(narrator_model())
    agent, version = narrator(org, owner, tool_approval={"generate_speech": "required"})
    run = start(org, owner, agent, version, prompt="Read the status aloud")

    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert fake_speech.requests == []
    assert not SpendEntry.objects.filter(kind="text_to_speech").exists() and not GeneratedMedia.objects.exists()

    approval = Approval.objects.get(run=run)
    client = api_as(admin_user, org)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)

    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    assert len(fake_speech.requests) == 1 and GeneratedMedia.objects.filter(run=run).count() == 1


def test_publishing_a_speech_binding_without_a_key_is_refused(org, owner):
    actor = actor_of(owner, org)
    agent = agent_services.create_agent(actor=actor, name="Keyless narrator", spec={
        "name": "Keyless narrator", "instructions": "Speak.", "capabilities": [{"id": "text_to_speech"}]})

    with pytest.raises(Invalid) as refused:
        agent_services.publish_agent(actor=actor, agent=agent, note="test")

    assert "text_to_speech" in json.dumps(refused.value.details)
    assert agent.versions.count() == 0
