"""Deleting a conversation deletes its files: the uploads in storage (a hosted page's, a chat's), the
workspace it generated files in, however it is deleted (the receiver is on the model, not on a view); another
conversation's files and workspace stay. Files of messages that transcript retention removes go too."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from agents.models import Conversation, Message
from channelbots import files as chat_files
from channelbots.incoming import IncomingFile
from channelbots.models import ChannelBot
from channelbots.platforms import Download
from config.celery import app as celery_app
from embeds import services as embed_services
from embeds.models import EmbedFile
from governance import retention
from governance.models import PendingFileRemoval, RetentionPolicy
from tests import factories
from tests.governance.helpers import conversation, turn
from workspaces.models import Workspace, WorkspaceFile, WorkspaceUse

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


class _Platform:
    """Where a chat file comes from: the platform's download (the one call fetch_and_store makes)."""

    def __init__(self, data: bytes):
        self.data = data

    def download(self, file: IncomingFile, max_bytes: int) -> Download:
        return Download(data=self.data, content_type="text/csv")


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


@pytest.fixture
def page(agent, owner):
    return factories.embed(agent, kind="page", created_by=owner)


@pytest.fixture
def bot(org):
    return ChannelBot.objects.create(organization=org, platform="slack", name="bot")


def filled_conversation(agent, owner, page, bot, label: str) -> dict:
    """A conversation with a hosted-page upload, a chat file, and a workspace its run wrote a file in."""
    chat = conversation(agent, owner, title=label)
    upload = embed_services.store_visitor_file(page, name=f"{label}.txt", mime="text/plain", ext="txt",
                                               data=f"notes of {label}".encode())
    run, asked, *_ = turn(chat, attachments=[{"file_id": str(upload.pk), "name": upload.name, "mime": upload.mime,
                                              "size": upload.size, "path": upload.path}])
    EmbedFile.objects.filter(pk=upload.pk).update(message=asked, attached_at=timezone.now())
    stored = chat_files.fetch_and_store(_Platform(f"col\n{label}\n".encode()), bot,
                                        IncomingFile(ref="F1", name=f"{label}.csv", mime="text/csv"))
    turn(chat, attachments=[stored])
    workspace = Workspace.objects.create(organization_id=chat.organization_id, agent=agent, scope="conversation",
                                         key=str(chat.pk), conversation=chat)
    WorkspaceFile.objects.create(workspace=workspace, path="/workspace/report.md", data=b"# report", size=8,
                                 created_by_run=run.pk)
    WorkspaceUse.objects.create(workspace=workspace, conversation=chat)
    return {"chat": chat, "paths": [upload.path, stored["path"]], "page_file": upload.pk, "workspace": workspace.pk}


def stored(path: str) -> bool:
    return default_storage.exists(path)


def run_after_commit(callbacks) -> None:
    """The deleting transaction committed: its callbacks run, the removal task with them (eager: the same
    task a worker would run)."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        for callback in callbacks:
            callback()
    finally:
        celery_app.conf.task_always_eager = eager


def test_deleting_a_conversation_removes_its_files_and_workspace_and_leaves_anothers(
        org, owner, agent, page, bot, django_capture_on_commit_callbacks):
    gone = filled_conversation(agent, owner, page, bot, "gone")
    kept = filled_conversation(agent, owner, page, bot, "kept")
    assert all(stored(path) for path in gone["paths"] + kept["paths"])

    with django_capture_on_commit_callbacks() as callbacks:
        Conversation.objects.filter(pk=gone["chat"].pk).delete()
    # Queued in the deleting transaction; nothing is removed before it commits.
    assert sorted(PendingFileRemoval.objects.values_list("path", flat=True)) == sorted(gone["paths"])
    assert all(stored(path) for path in gone["paths"])
    run_after_commit(callbacks)

    assert not any(stored(path) for path in gone["paths"])
    assert all(stored(path) for path in kept["paths"])
    assert not PendingFileRemoval.objects.exists()
    assert list(EmbedFile.objects.values_list("pk", flat=True)) == [kept["page_file"]]
    assert list(Workspace.objects.values_list("pk", flat=True)) == [kept["workspace"]]
    assert list(WorkspaceFile.objects.values_list("workspace_id", flat=True)) == [kept["workspace"]]
    assert Message.objects.filter(conversation=kept["chat"]).count() == 4


def test_one_removal_task_per_transaction_however_many_conversations_go(
        org, owner, agent, page, bot, django_capture_on_commit_callbacks):
    chats = [filled_conversation(agent, owner, page, bot, f"c{n}") for n in range(3)]
    with django_capture_on_commit_callbacks() as callbacks:
        Conversation.objects.filter(pk__in=[c["chat"].pk for c in chats]).delete()
    assert [c for c in callbacks if c is retention._kick] == [retention._kick]
    assert PendingFileRemoval.objects.count() == 6


def test_a_rolled_back_deletion_keeps_the_files_and_queues_nothing(org, owner, agent, page, bot):
    from django.db import transaction

    chat = filled_conversation(agent, owner, page, bot, "kept")

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        Conversation.objects.filter(pk=chat["chat"].pk).delete()
        raise Undo
    assert not PendingFileRemoval.objects.exists()
    assert all(stored(path) for path in chat["paths"])
    assert EmbedFile.objects.filter(pk=chat["page_file"]).exists()


def test_a_path_outside_the_upload_folders_is_never_deleted(org, owner, agent, media):
    chat = conversation(agent, owner)
    logo = default_storage.save(f"organizations/{org.pk}/logo.png", ContentFile(b"\x89PNG"))
    turn(chat, attachments=[{"name": "logo.png", "mime": "image/png", "size": 4, "path": logo},
                            {"name": "up", "path": "embeds/../../etc/passwd"}])
    Conversation.objects.filter(pk=chat.pk).delete()
    assert not PendingFileRemoval.objects.exists()
    assert stored(logo)


def test_a_file_storage_refuses_stays_queued_for_the_next_sweep(org, owner, agent, page, bot, media):
    chat = filled_conversation(agent, owner, page, bot, "gone")
    Conversation.objects.filter(pk=chat["chat"].pk).delete()
    refused, removable = chat["paths"]
    # Storage cannot delete a directory that still holds something: the same refusal a locked file gives.
    (media / refused).unlink()
    (media / refused).mkdir()
    (media / refused / "inside").write_bytes(b"x")

    assert retention.sweep_removed_files() == 1
    assert not stored(removable)
    assert list(PendingFileRemoval.objects.values_list("path", flat=True)) == [refused]
    (media / refused / "inside").unlink()
    assert retention.sweep_removed_files() == 1
    assert not PendingFileRemoval.objects.exists()


def test_messages_removed_by_transcript_retention_take_their_files_with_them(org, owner, agent, page, bot):
    RetentionPolicy.objects.create(organization=org, transcript_days=7)
    old = filled_conversation(agent, owner, page, bot, "old")
    Message.objects.filter(conversation=old["chat"]).update(created_at=timezone.now() - timedelta(days=8))
    fresh = filled_conversation(agent, owner, page, bot, "fresh")

    removed = retention.sweep_all()

    assert removed["transcript_messages"] == 4 and removed["removed_files"] == 2
    assert not any(stored(path) for path in old["paths"])
    assert all(stored(path) for path in fresh["paths"])
    assert list(EmbedFile.objects.values_list("pk", flat=True)) == [fresh["page_file"]]
    # The conversation itself and its workspace stay: only what is older than the period went.
    assert Conversation.objects.filter(pk=old["chat"].pk).exists()
    assert Workspace.objects.filter(pk=old["workspace"]).exists()
