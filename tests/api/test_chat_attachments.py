"""POST /api/v1/attachments (web chat's attach button) and the claim of its ids by a member's message: the hosted
page's intake (CHAT_MAX_UPLOAD_SIZE_MB, the type sniffed from the bytes), the envelope on every refusal, a viewer
and another organization refused, and a message that names another person's, another organization's, a forged or
an already attached file refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agenticos.errors import DomainError
from agenticos.models import Membership
from agents.chat import start_member_run
from agents.models import Conversation, Message, Run
from governance.models import PendingFileRemoval
from tests import factories
from tests.governance.test_conversation_files import run_after_commit
from tests.runner.conftest import actor_of, publish

pytestmark = pytest.mark.django_db

URL = "/api/v1/attachments"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def stored(media: Path) -> list[Path]:
    return [p for p in media.rglob("*") if p.is_file()]


def upload(client, data: bytes, name: str = "notes.txt", mime: str = "text/plain"):
    return client.post(URL, {"file": SimpleUploadedFile(name, data, content_type=mime)}, format="multipart")


def test_a_member_uploads_an_image_and_gets_an_id_for_the_message(api_as, org, member, media):
    response = upload(api_as(member, org), PNG, name="screen.png", mime="application/octet-stream")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "screen.png" and body["mime"] == "image/png" and body["size"] == len(PNG)
    assert isinstance(body["id"], str) and body["id"]
    [path] = stored(media)
    assert path.read_bytes() == PNG
    assert path.relative_to(media).parts[:2] == ("chat", str(org.pk))


def test_the_type_is_read_from_the_bytes_whatever_the_name_and_the_browser_claim(api_as, org, member, media):
    client = api_as(member, org)
    html = upload(client, b"<html><script>alert(1)</script>", name="cat.png", mime="image/png")
    exe = upload(client, b"MZ\x90\x00binary", name="notes.txt", mime="text/plain")
    for response in (html, exe):
        assert response.status_code == 415
        assert response.json()["error"]["code"] == "unsupported_type"
        assert "png" in response.json()["error"]["details"]["accepted"]
    assert stored(media) == []


def test_a_file_over_the_chat_ceiling_is_refused_and_nothing_is_stored(api_as, org, member, media, settings):
    settings.CHAT_MAX_UPLOAD_SIZE_MB = 0.01  # about 10 KB
    response = upload(api_as(member, org), b"a" * 12_000)
    assert response.status_code == 413
    assert response.json()["error"] == {"code": "too_large", "message": "The file is larger than 10 KB.",
                                        "details": {"limit_bytes": 10485}}
    assert stored(media) == []


def test_a_body_declared_over_the_ceiling_is_refused_before_it_is_read(api_as, org, member, media, settings):
    settings.CHAT_MAX_UPLOAD_SIZE_MB = 1
    # Declares 50 MB but carries a few bytes: reading it would fail, so a 413 proves it was not read.
    response = api_as(member, org).generic("POST", URL, b"--x\r\n", content_type="multipart/form-data; boundary=x",
                                           CONTENT_LENGTH=str(50 * 1024 * 1024))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


def test_no_file_field_is_a_bad_request_in_the_envelope(api_as, org, member, media):
    response = api_as(member, org).post(URL, {"other": "x"}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Send the file as the multipart field 'file'."


def test_a_viewer_an_outsider_and_a_stranger_store_nothing(api_as, org, viewer, outsider, media):
    assert upload(api_as(viewer, org), PNG, name="a.png").status_code == 403
    # An outsider naming our organization is not in it: 404, as for any of its objects.
    assert upload(api_as(outsider, org), PNG, name="a.png").status_code == 404
    anonymous = Client().post(URL, {"file": SimpleUploadedFile("a.png", PNG, content_type="image/png")})
    assert anonymous.status_code == 401 and "error" in anonymous.json()
    assert stored(media) == []


# ------------------------------------------------------------------ a message names the ids


@pytest.fixture
def agent(org, owner):
    return publish(org, owner, name="Reader")[0]


def uploaded(client, data: bytes = PNG, name: str = "screen.png", mime: str = "image/png") -> str:
    response = upload(client, data, name=name, mime=mime)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def send(user, org, agent, ids, text="What is this?"):
    return start_member_run(actor=actor_of(user, org), agent_id=agent.pk, text=text, surface="web",
                            create_conversation=True, attachment_ids=ids)


def test_a_message_carries_its_files_and_a_file_without_words_says_what_arrived(api_as, org, member, agent, media):
    client = api_as(member, org)
    image, notes = uploaded(client), uploaded(client, b"order 1234", name="notes.txt", mime="text/plain")
    run, _ = send(member, org, agent, [image, notes], text="")
    message = Message.objects.get(run=run, role="user")
    assert [(a["name"], a["mime"], a["size"]) for a in message.attachments] == [
        ("screen.png", "image/png", len(PNG)), ("notes.txt", "text/plain", 10)]
    assert all((media / a["path"]).is_file() for a in message.attachments)
    assert message.content == "Attached image: screen.png\nAttached file: notes.txt"


def refused(callable_, code: str) -> DomainError:
    runs, messages, conversations = Run.objects.count(), Message.objects.count(), Conversation.objects.count()
    with pytest.raises(DomainError) as caught:
        callable_()
    assert caught.value.code == code, caught.value.message
    # The refusal acted on nothing: no run, no message, no conversation.
    assert (Run.objects.count(), Message.objects.count(), Conversation.objects.count()) == (runs, messages, conversations)
    return caught.value


def test_another_persons_file_is_refused_with_a_clear_error(api_as, org, member, owner, agent, media):
    theirs = uploaded(api_as(owner, org))
    error = refused(lambda: send(member, org, agent, [theirs]), "attachment_not_yours")
    assert error.status == 403
    assert error.message == "One of those files was uploaded by someone else: attach your own."


def test_another_organizations_file_is_refused(api_as, org, member, agent, media):
    other_org = factories.organization(name="Other Corp")
    # The same person in a second organization: their file there is not a file of this one.
    Membership.objects.create(organization=other_org, user=member, role="member")
    elsewhere = uploaded(api_as(member, other_org))
    refused(lambda: send(member, org, agent, [elsewhere]), "attachment_not_yours")


def test_a_forged_or_malformed_id_is_not_found(api_as, org, member, agent, media):
    real = uploaded(api_as(member, org))
    forged = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    refused(lambda: send(member, org, agent, [forged]), "attachment_not_found")
    refused(lambda: send(member, org, agent, "not-a-list"), "invalid")
    refused(lambda: send(member, org, agent, [real] + ["x"] * 10), "invalid")  # over ten files


def test_a_file_is_attached_once(api_as, org, member, agent, media):
    image = uploaded(api_as(member, org))
    send(member, org, agent, [image])
    refused(lambda: send(member, org, agent, [image]), "attachment_used")


def test_a_refused_message_leaves_its_file_for_the_next_try(api_as, org, member, agent, media):
    image = uploaded(api_as(member, org))
    refused(lambda: send(member, org, agent, [image], text="x" * 40_000), "invalid")  # over MAX_MESSAGE_CHARS
    run, _ = send(member, org, agent, [image])
    assert Message.objects.get(run=run, role="user").attachments[0]["name"] == "screen.png"


def test_deleting_the_conversation_deletes_its_files(api_as, org, member, agent, media,
                                                     django_capture_on_commit_callbacks):
    client = api_as(member, org)
    run, _ = send(member, org, agent, [uploaded(client)])
    Run.objects.filter(pk=run.pk).update(status="completed")  # a conversation is deleted once its runs are over
    [path] = stored(media)
    with django_capture_on_commit_callbacks() as callbacks:
        assert client.delete(f"/api/v1/conversations/{run.conversation_id}").status_code == 204
    assert PendingFileRemoval.objects.filter(path=str(path.relative_to(media))).exists()
    run_after_commit(callbacks)  # the removal task, as a worker runs it
    assert not path.exists()


def test_an_id_older_than_a_day_is_not_available(api_as, org, member, agent, media, monkeypatch):
    from agents import uploads

    image = uploaded(api_as(member, org))
    monkeypatch.setattr(uploads, "UPLOAD_ID_MAX_AGE_SECONDS", -1)  # every id is past its day
    error = refused(lambda: send(member, org, agent, [image]), "attachment_not_found")
    assert error.message == "One of those files is not available any more: attach it again."


def test_the_schema_documents_what_the_upload_answers(api_as, org, member, media, client):
    from tests.api.test_schema_truth import assert_matches

    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = doc["paths"][URL]["post"]
    assert "multipart/form-data" in operation["requestBody"]["content"]
    assert {"201", "403", "413", "415"} <= operation["responses"].keys()
    created = upload(api_as(member, org), PNG, name="a.png", mime="image/png")
    assert_matches(doc, URL, "post", "201", created.json())
    refused = upload(api_as(member, org), b"MZ", name="a.exe", mime="application/octet-stream")
    assert_matches(doc, URL, "post", "415", refused.json())


def test_a_file_never_sent_goes_once_its_id_has_expired_and_a_sent_one_stays(api_as, org, member, agent, media):
    from datetime import timedelta

    from django.utils import timezone

    from agents.uploads import sweep_unsent

    client = api_as(member, org)
    run, _ = send(member, org, agent, [uploaded(client)])
    [sent] = stored(media)
    uploaded(client)  # staged, never sent
    [unsent] = [p for p in stored(media) if p != sent]
    assert sweep_unsent() == 0 and unsent.exists()  # its id may still be sent today
    assert sweep_unsent(timezone.now() + timedelta(days=2)) == 1
    assert sent.exists() and not unsent.exists()
    assert Message.objects.get(run=run, role="user").attachments[0]["path"] == str(sent.relative_to(media))
