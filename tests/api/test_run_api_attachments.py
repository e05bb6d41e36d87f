"""The REST run endpoint takes the ids POST /api/v1/attachments answered, like the chat socket: the sender's own
files go on the turn's message; another person's are refused in the envelope and nothing runs."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.models import Message, Run
from tests.runner.conftest import publish

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def uploaded(client) -> str:
    response = client.post("/api/v1/attachments", {"file": SimpleUploadedFile("a.png", PNG, content_type="image/png")},
                           format="multipart")
    assert response.status_code == 201
    return response.json()["id"]


def test_a_run_through_the_api_carries_the_senders_files_and_refuses_anothers(api_as, org, owner, member):
    agent, _ = publish(org, owner)
    mine, theirs = api_as(member, org), api_as(owner, org)
    url = f"/api/v1/agents/{agent.pk}/run?wait=false"
    response = mine.post(url, {"prompt": "Look", "conversation": "new", "attachment_ids": [uploaded(mine)]},
                         format="json")
    assert response.status_code == 202, response.content
    message = Message.objects.get(run_id=response.json()["run_id"], role="user")
    assert [a["name"] for a in message.attachments] == ["a.png"]

    refused = mine.post(url, {"prompt": "Look", "conversation": "new", "attachment_ids": [uploaded(theirs)]},
                        format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "attachment_not_yours"
    assert Run.objects.count() == 1
