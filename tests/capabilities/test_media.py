"""Images out of history (capabilities/media) through the real OpenAI client against the fake server: a parked
run's stored history keeps its image in the organization's storage behind a media+sha256:// reference, and the
resumed run sends the model the image again; the store is content-addressed and scoped to its organization
and conversation (an outsider holding the hash resolves nothing); both directions fail softly."""

from __future__ import annotations

import base64
import hashlib
import json
import logging

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pydantic import ValidationError
from pydantic_ai import BinaryContent
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart

from agents.models import Conversation, Run, RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.media import MediaConfig, MediaOffload, history
from capabilities.media.store import OrganizationMediaStore
from governance.models import Approval
from tests import factories
from tests.capabilities.helpers import deps
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16  # 4104 bytes, over a 2 KiB threshold
DIGEST = hashlib.sha256(IMAGE).hexdigest()
URI = f"media+sha256://{DIGEST}"


def media_agent(org, owner, fake_openai, *, media: bool = True):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-media-0000000000",
                                      base_url=fake_openai.base_url)
    capabilities = [{"id": "charts", "tool_approval": {"create_chart": "required"}}]
    if media:
        capabilities.append({"id": "media", "config": {"threshold_bytes": 2048}})
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Screens", spec={
        "name": "Screens", "model_profile_id": str(profile.pk), "capabilities": capabilities})
    return agent, services.publish_agent(actor=actor, agent=agent)


def attached() -> dict:
    path = default_storage.save("test-attachments/screen.png", ContentFile(IMAGE))
    return {"file_id": "screen", "name": "screen.png", "mime": "image/png", "size": len(IMAGE), "path": path}


def parked_with_an_image(org, owner, fake_openai, *, media: bool = True) -> Run:
    agent, version = media_agent(org, owner, fake_openai, media=media)
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS))
    run = start(org, owner, agent, version, prompt="Chart what this screenshot shows", attachments=[attached()])
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL, run.error
    return run


def as_json(messages) -> list:
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def sent_images(request) -> list[str]:
    return [item["image_url"]["url"] for message in request.json["messages"]
            if isinstance(message.get("content"), list)
            for item in message["content"] if item.get("type") == "image_url"]


def test_a_parked_history_keeps_its_image_in_storage_and_the_resumed_request_carries_it_again(
        org, owner, admin_user, api_as, fake_openai):
    run = parked_with_an_image(org, owner, fake_openai)
    first = fake_openai.chat_requests[0]
    assert sent_images(first) == [f"data:image/png;base64,{base64.b64encode(IMAGE).decode()}"]

    stored = json.dumps(run.parked_state)
    assert URI in stored and run.parked_state["media"] is True  # written by the walker, so read back by it
    assert base64.b64encode(IMAGE).decode() not in stored and base64.urlsafe_b64encode(IMAGE).decode() not in stored
    path = f"media/{org.pk}/{run.conversation_id}/{DIGEST}"
    assert default_storage.exists(path)
    with default_storage.open(path, "rb") as handle:
        assert handle.read() == IMAGE

    client = api_as(admin_user, org)
    approval = Approval.objects.get(run=run)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    fake_openai.queue(Reply.text("Charted the error rates from the screenshot."))
    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    resumed = fake_openai.chat_requests[-1]
    assert sent_images(resumed) == sent_images(first)  # the model read the same image, not a reference
    assert "media+sha256://" not in resumed.text
    # The reopened transcript still names the attachment where it was stored; nothing in it was rewritten.
    response = api_as(owner, org).get(f"/api/v1/conversations/{run.conversation_id}/messages")
    assert response.status_code == 200
    body = response.json()
    listed = body["results"] if isinstance(body, dict) else body
    user = next(m for m in listed if m["role"] == "user")
    assert [a["name"] for a in user["attachments"]] == ["screen.png"]
    assert default_storage.exists(user["attachments"][0]["path"])


def test_a_parked_history_is_restored_after_the_binding_is_gone(org, owner, admin_user, api_as, fake_openai):
    from agents import services

    run = parked_with_an_image(org, owner, fake_openai)
    agent = run.agent
    actor = actor_of(owner, org)
    unbound = {**agent.draft_spec, "capabilities": [b for b in agent.draft_spec["capabilities"] if b["id"] != "media"]}
    services.update_agent(actor=actor, agent=agent, spec=unbound)
    version = services.publish_agent(actor=actor, agent=agent)
    Run.objects.filter(pk=run.pk).update(version=version)  # the resume builds a run without the binding
    client = api_as(admin_user, org)
    client.post(f"/api/v1/approvals/{Approval.objects.get(run=run).pk}", {"decision": "approve"}, format="json")
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    fake_openai.queue(Reply.text("Charted."))
    run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert sent_images(fake_openai.chat_requests[-1]) == sent_images(fake_openai.chat_requests[0])


def test_an_unbound_agent_stores_its_parked_history_whole(org, owner, fake_openai):
    run = parked_with_an_image(org, owner, fake_openai, media=False)
    stored = json.dumps(run.parked_state)
    assert "media+sha256://" not in stored and "media" not in run.parked_state
    assert not default_storage.exists(f"media/{org.pk}/{run.conversation_id}/{DIGEST}")


def test_another_organization_holding_the_hash_resolves_nothing(org, owner, outsider_org, fake_openai):
    run = parked_with_an_image(org, owner, fake_openai)
    ours = OrganizationMediaStore(org.pk, str(run.conversation_id))
    assert ours.get_sync(URI) == IMAGE

    # The same conversation folder name and the same hash, from the outsider's side: nothing.
    theirs = OrganizationMediaStore(outsider_org.pk, str(run.conversation_id))
    assert not theirs.exists_sync(URI)
    with pytest.raises(FileNotFoundError):
        theirs.get_sync(URI)
    # A history carrying our reference, restored for the outsider, gets the unreadable line, never our image.
    restored = history.restore(run.parked_state["messages"], organization_id=outsider_org.pk,
                               conversation_id=run.conversation_id, run_id=run.pk)
    messages = ModelMessagesTypeAdapter.validate_python(restored)
    prompt = next(p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart))
    assert history.UNREADABLE in prompt.content
    assert not any(isinstance(c, BinaryContent) for c in prompt.content)
    # Another conversation of the same organization does not resolve it either (its lifecycle folder).
    other = Conversation.objects.create(organization=org, agent_id=run.agent_id, owner=owner, title="other")
    assert not OrganizationMediaStore(org.pk, str(other.pk)).exists_sync(URI)


def test_the_store_is_content_addressed_and_refuses_anything_but_a_sha256_reference(org):
    store = OrganizationMediaStore(org.pk, "thread")
    assert store.put_sync(IMAGE) == URI and store.put_sync(IMAGE) == URI
    _, files = default_storage.listdir(f"media/{org.pk}/thread")
    assert files == [DIGEST]
    for hostile in ("media+sha256://../../generated/x", f"media+sha256://{DIGEST.upper()}", f"file:///{DIGEST}"):
        with pytest.raises(ValueError):
            store.get_sync(hostile)
    with pytest.raises(ValueError):
        OrganizationMediaStore(org.pk, "../other")
    with pytest.raises(ValueError):
        OrganizationMediaStore("not-an-org", "thread")


def test_a_missing_blob_becomes_a_line_saying_so_and_the_history_still_loads(org, owner, fake_openai, caplog):
    run = parked_with_an_image(org, owner, fake_openai)
    default_storage.delete(f"media/{org.pk}/{run.conversation_id}/{DIGEST}")
    with caplog.at_level(logging.WARNING, logger="capabilities.media.history"):
        restored = history.restore(run.parked_state["messages"], organization_id=org.pk,
                                   conversation_id=run.conversation_id, run_id=run.pk)
    assert "could not be read back" in caplog.text
    messages = ModelMessagesTypeAdapter.validate_python(restored)
    assert history.UNREADABLE in json.dumps(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


def test_a_store_that_fails_keeps_the_history_inline(org, monkeypatch, caplog):
    def broken(self, data):
        raise OSError("disk full")

    monkeypatch.setattr(OrganizationMediaStore, "put_sync", broken)
    messages = [ModelRequest(parts=[UserPromptPart(content=["look", BinaryContent(IMAGE, media_type="image/png")])])]
    with caplog.at_level(logging.WARNING, logger="capabilities.media.history"):
        tree, offloaded = history.offload(messages, threshold_bytes=2048, organization_id=org.pk,
                                          conversation_id=None, run_id="r1")
    assert "kept inline" in caplog.text and not offloaded
    assert tree == as_json(messages)


def test_parts_under_the_threshold_stay_inline_and_a_conversationless_run_keeps_its_own_folder(org):
    small = b"\x89PNG" + b"\x01" * 100
    messages = [ModelRequest(parts=[UserPromptPart(content=["look", BinaryContent(small, media_type="image/png"),
                                                            BinaryContent(IMAGE, media_type="image/png")])])]
    tree, offloaded = history.offload(messages, threshold_bytes=2048, organization_id=org.pk, conversation_id=None,
                                      run_id="r9")
    assert offloaded
    assert URI in json.dumps(tree) and hashlib.sha256(small).hexdigest() not in json.dumps(tree)
    assert default_storage.exists(f"media/{org.pk}/run-r9/{DIGEST}")
    back = history.restore(tree, organization_id=org.pk, conversation_id=None, run_id="r9")
    assert as_json(ModelMessagesTypeAdapter.validate_python(back)) == as_json(messages)


def test_the_threshold_is_bounded_and_the_binding_builds_its_offload(org):
    assert MediaConfig().threshold_bytes == 32768
    for bad in (1023, 10 * 1024 * 1024 + 1):
        with pytest.raises(ValidationError):
            MediaConfig(threshold_bytes=bad)
    spec = AgentSpec(name="M", capabilities=[{"id": "media", "config": {"threshold_bytes": 4096}}])
    built = registry.build_for_run(spec, deps(organization_id=str(org.pk)), str(org.pk))
    assert built.active == ["media"] and built.tools == {}
    assert [c.threshold_bytes for c in built.capabilities if isinstance(c, MediaOffload)] == [4096]
    cap = registry.get("media")
    assert cap.advanced and cap.voice == "never" and cap.tools == ()


def test_a_deleted_conversation_queues_its_media_folder_and_the_sweep_removes_only_that(org, owner, outsider_org,
                                                                                        monkeypatch):
    from django.db import transaction

    from governance import retention
    from governance.models import PendingFileRemoval

    # The sweep is run below, by hand: the session's worker running the queued task beside it would take the row
    # first (the queue read below would be empty) or hold it while this test looks.
    monkeypatch.setattr(retention, "_kick", lambda: None)
    from tests.runner.conftest import publish

    agent, _ = publish(org, owner)
    gone = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="gone")
    kept = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="kept")
    for store in (OrganizationMediaStore(org.pk, str(gone.pk)), OrganizationMediaStore(org.pk, str(kept.pk)),
                  OrganizationMediaStore(outsider_org.pk, str(gone.pk))):
        store.put_sync(IMAGE)
    gone_id = gone.pk
    with transaction.atomic():
        gone.delete()  # the pre_delete receiver connected in CapabilitiesConfig.ready queues the folder
    assert list(PendingFileRemoval.objects.values_list("path", flat=True)) == [f"media/{org.pk}/{gone_id}/{DIGEST}"]
    retention.remove_pending_files()
    assert not default_storage.exists(f"media/{org.pk}/{gone_id}/{DIGEST}")
    assert default_storage.exists(f"media/{org.pk}/{kept.pk}/{DIGEST}")
    assert default_storage.exists(f"media/{outsider_org.pk}/{gone_id}/{DIGEST}")
