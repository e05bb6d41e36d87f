"""Files in web chat, end to end: uploaded through POST /api/v1/attachments, named by the message on the chat socket,
run by a real Celery worker against the fake OpenAI server — the image reaches the model as an image and a document
as its text, the person's message keeps the files, and the reopened transcript shows them (name, type, size; never
the storage path). Another person's or another organization's file is refused on the socket, and nothing runs."""

from __future__ import annotations

import base64

import pytest
from channels.db import database_sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from agenticos.models import Membership
from agents import services
from agents.models import Conversation, Message, Run
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_chat_socket import TIMEOUT, connect, receive_until

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def reader_agent(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-files-0000000000",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Reader", spec={
        "name": "Reader", "model_profile_id": str(profile.pk), "capabilities": []})
    services.publish_agent(actor=actor, agent=agent)
    return agent


def upload(user, org, data: bytes, name: str, mime: str) -> dict:
    client = APIClient()
    client.force_authenticate(user)
    client.credentials(HTTP_X_ORGANIZATION_ID=str(org.pk))
    response = client.post("/api/v1/attachments", {"file": SimpleUploadedFile(name, data, content_type=mime)},
                           format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def sent_content(request) -> list[dict]:
    """The parts of the last user message the model was sent."""
    user = [m for m in request.json["messages"] if m["role"] == "user"][-1]
    return user["content"] if isinstance(user["content"], list) else [{"type": "text", "text": user["content"]}]


async def test_an_image_and_a_document_reach_the_model_and_stay_on_the_message(org, owner, fake_openai,
                                                                                 celery_worker):
    agent = await database_sync_to_async(reader_agent)(org, owner, fake_openai)
    fake_openai.queue(Reply.text("A tiny picture and an order."))
    image = await database_sync_to_async(upload)(owner, org, PNG, "screen.png", "image/png")
    notes = await database_sync_to_async(upload)(owner, org, b"order 1234, blue, size M", "notes.txt", "text/plain")
    communicator, connected = await connect(owner, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "What are these?",
                                     "attachment_ids": [image["id"], notes["id"]]})
    frames = await receive_until(communicator)
    assert frames[-1]["type"] == "complete", frames[-1]

    [request] = fake_openai.requests_to("chat")
    content = sent_content(request)
    images = [c["image_url"]["url"] for c in content if c["type"] == "image_url"]
    assert images == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    text = "\n".join(c["text"] for c in content if c["type"] == "text")
    assert "What are these?" in text
    assert "[Attached file: notes.txt (text/plain" in text and "order 1234, blue, size M" in text

    run_id = frames[1]["data"]["run_id"]
    message = await database_sync_to_async(Message.objects.get)(run_id=run_id, role="user")
    assert message.content == "What are these?"
    assert [(a["name"], a["mime"], a["size"]) for a in message.attachments] == [
        ("screen.png", "image/png", len(PNG)), ("notes.txt", "text/plain", 24)]

    # Reopened: the transcript the console draws shows the files on the person's message, without the path.
    from console.selectors import conversation_turns

    turns = await database_sync_to_async(
        lambda: conversation_turns(Conversation.objects.get(pk=message.conversation_id)))()
    assert turns[0]["attachments"] == [{"name": "screen.png", "mime": "image/png", "size": len(PNG)},
                                       {"name": "notes.txt", "mime": "text/plain", "size": 24}]
    await communicator.disconnect()


async def test_another_persons_or_organizations_file_is_refused_on_the_socket_and_nothing_runs(
        org, owner, member, outsider, outsider_org, fake_openai):
    agent = await database_sync_to_async(reader_agent)(org, owner, fake_openai)
    colleagues = await database_sync_to_async(upload)(owner, org, PNG, "theirs.png", "image/png")
    foreign = await database_sync_to_async(upload)(outsider, outsider_org, PNG, "foreign.png", "image/png")
    # The member belongs to the outsider's organization too: a file of theirs there is still not one of ours.
    await database_sync_to_async(Membership.objects.create)(organization=outsider_org, user=member, role="member")
    own_elsewhere = await database_sync_to_async(upload)(member, outsider_org, PNG, "mine.png", "image/png")
    communicator, _ = await connect(member, org)
    for file in (colleagues, foreign, own_elsewhere):
        await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "Look",
                                         "attachment_ids": [file["id"]]})
        frame = await communicator.receive_json_from(timeout=TIMEOUT)
        assert frame["type"] == "error"
        assert frame["data"]["code"] == "attachment_not_yours"
        assert frame["data"]["message"] == "One of those files was uploaded by someone else: attach your own."
    assert await communicator.receive_nothing(timeout=0.2)
    assert await database_sync_to_async(Run.objects.count)() == 0
    assert await database_sync_to_async(Message.objects.count)() == 0
    assert fake_openai.requests_to("chat") == []
    await communicator.disconnect()
