"""`generate_image` inside real runs (agents.runner.execute, real PostgreSQL): the tool result frame carries
the stored image's URL, the call, the file and the spend all name the run; an approval gate parks the call
before anything is paid; publishing without a key is refused."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import Run, RunStatus, ToolCall
from capabilities import registry
from capabilities.image_generation import CAPABILITY
from governance.models import Approval, SpendEntry
from media.models import GeneratedMedia
from tests import factories
from tests.fakes.openai_responses import SMALL_PNG, fake_responses  # noqa: F401
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-image-run-key-0000000000000000"


@pytest.fixture(autouse=True)
def _registered(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    added = registry.find(CAPABILITY.id) is None
    if added:
        registry.register(CAPABILITY)
    yield
    if added:
        registry.unregister(CAPABILITY.id)


def painter_model() -> FunctionModel:
    """Asks for one image; after its result, answers in words."""

    async def stream(messages, info: AgentInfo):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "Here is your fox."
            return
        yield {0: DeltaToolCall(name="generate_image", json_args=json.dumps({"prompt": "a fox in the snow"}),
                                tool_call_id="img-1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def painter(org, owner, **binding):
    secret = factories.secret(org, value=KEY)
    return publish(org, owner, capabilities=[{"id": "image_generation", "secret_id": str(secret.pk), **binding}])


def test_a_run_draws_and_its_tool_result_frame_carries_the_stored_image(org, owner, fake_responses, scripted_model):
    scripted_model(painter_model())
    agent, version = painter(org, owner)
    run = start(org, owner, agent, version, prompt="Draw a fox")

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "Here is your fox."
    media = GeneratedMedia.objects.get()
    assert (media.run_id, media.conversation_id, media.organization_id) == (run.pk, run.conversation_id, org.pk)
    [result] = [f["data"] for f in frames if f["type"] == "tool_result"]
    assert result["content"]["url"] == f"/api/v1/generated/{media.filename}"
    assert result["content"]["media_type"] == "image/png"
    call = ToolCall.objects.get(run=run)
    assert (call.tool_name, call.capability_id, call.status) == ("generate_image", "image_generation", "ok")
    entry = SpendEntry.objects.get(kind="image_generation")
    assert entry.run_id == run.pk and run.cost_is_partial
    assert fake_responses.requests[0].bearer == KEY
    assert KEY not in json.dumps(frames)


def test_an_approval_gate_parks_the_call_before_anything_is_paid_and_approval_draws_it(
        org, owner, admin_user, api_as, fake_responses, scripted_model):
    scripted_model(painter_model())
    agent, version = painter(org, owner, tool_approval={"generate_image": "required"})
    run = start(org, owner, agent, version, prompt="Draw a fox")

    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert fake_responses.requests == []
    assert not SpendEntry.objects.filter(kind="image_generation").exists()
    assert not GeneratedMedia.objects.exists()

    approval = Approval.objects.get(run=run)
    client = api_as(admin_user, org)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)

    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    assert len(fake_responses.requests) == 1 and GeneratedMedia.objects.filter(run=run).count() == 1


def test_publishing_an_image_binding_without_a_key_is_refused(org, owner):
    actor = actor_of(owner, org)
    agent = agent_services.create_agent(actor=actor, name="Keyless painter", spec={
        "name": "Keyless painter", "instructions": "Draw.", "capabilities": [{"id": "image_generation"}]})

    with pytest.raises(Invalid) as refused:
        agent_services.publish_agent(actor=actor, agent=agent, note="test")

    assert "image_generation" in json.dumps(refused.value.details)
    assert agent.versions.count() == 0
