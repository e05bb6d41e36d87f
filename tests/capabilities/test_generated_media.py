"""The generated-media store: files per organization in default_storage, recorded with their run and
conversation, the organization's quota, the copy in the run's workspace, and deletion with the conversation,
the organization and the retention period (the files themselves, not only the rows)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.db import DataError
from django.utils import timezone

from agents.chat import delete_conversation
from agents.models import RunStatus
from governance import retention
from governance.models import PendingFileRemoval, RetentionPolicy
from media import store
from media.models import GeneratedMedia
from tests import factories
from tests.api.conftest import actor_of
from tests.governance.helpers import conversation, run_in
from workspaces import store as workspaces

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
NOW = timezone.now()


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


@pytest.fixture
def chat(agent, owner):
    return conversation(agent, owner)


@pytest.fixture
def run(chat):
    return run_in(chat)


def save(run, data: bytes = PNG, **extra) -> GeneratedMedia:
    fields = {"organization_id": run.organization_id, "run_id": run.pk, "conversation_id": run.conversation_id,
              "kind": "image", "data": data, "media_type": "image/png", "name": "image-a-red-fox",
              "provider": "openai", "model": "gpt-image-2"} | extra
    return store.save(**fields)


def stored_files(org) -> list[str]:
    folder = f"{store.PREFIX}{org.pk}"
    return default_storage.listdir(folder)[1] if default_storage.exists(folder) else []


# ------------------------------------------------------------------ saving


def test_a_saved_file_is_stored_in_its_organizations_folder_with_its_run_and_conversation(org, run, chat):
    media = save(run)

    assert media.path == f"generated/{org.pk}/{media.filename}"
    assert store.is_filename(media.filename) and media.filename.endswith(".png")
    with default_storage.open(media.path, "rb") as handle:
        assert handle.read() == PNG
    row = GeneratedMedia.objects.get(pk=media.pk)
    assert (row.organization_id, row.run_id, row.conversation_id) == (org.pk, run.pk, chat.pk)
    assert (row.kind, row.media_type, row.size, row.name) == ("image", "image/png", len(PNG), "image-a-red-fox.png")
    assert row.sha256 == __import__("hashlib").sha256(PNG).hexdigest()
    assert store.file_entry(row) == {"url": f"/api/v1/generated/{row.filename}", "media_type": "image/png",
                                     "name": "image-a-red-fox.png", "filename": row.filename}


def test_a_name_with_folders_or_control_characters_is_cleaned_before_it_reaches_a_header(run):
    media = save(run, name="../../etc/pass\r\nwd\x00")
    assert media.name == "pass-wd.png"
    assert save(run, name="").name == "generated.png"


def test_a_run_or_conversation_of_another_organization_is_not_recorded(org, run, outsider_org, outsider):
    foreign_agent = factories.published_agent(outsider_org, outsider)
    foreign_chat = conversation(foreign_agent, outsider)
    foreign_run = run_in(foreign_chat)

    media = save(run, run_id=foreign_run.pk, conversation_id=foreign_chat.pk)

    row = GeneratedMedia.objects.get(pk=media.pk)
    assert (row.organization_id, row.run_id, row.conversation_id) == (org.pk, None, None)
    assert stored_files(outsider_org) == []


def test_a_row_that_cannot_be_written_leaves_no_file_behind(org, run):
    with pytest.raises(DataError):
        save(run, kind="k" * 40)  # longer than the column
    assert GeneratedMedia.objects.count() == 0
    assert stored_files(org) == []


def test_a_type_the_store_does_not_serve_is_refused_before_anything_is_written(org, run):
    for media_type in ("text/html", "image/svg+xml", "application/octet-stream"):
        with pytest.raises(ValueError, match="does not keep"):
            save(run, media_type=media_type)
    assert GeneratedMedia.objects.count() == 0 and stored_files(org) == []


def test_a_run_with_a_workspace_gets_the_same_bytes_under_output(run):
    workspace = workspaces.open_for_run(run, "run")

    first = save(run, workspace_id=str(workspace.pk))
    second = save(run, workspace_id=str(workspace.pk))  # the same name: a second file, not an overwrite

    assert first.workspace_path == "/workspace/output/image-a-red-fox.png"
    assert second.workspace_path.startswith("/workspace/output/image-a-red-fox-") and second.workspace_path != \
        first.workspace_path
    assert workspaces.read(workspace.pk, first.workspace_path) == PNG
    assert workspaces.read(workspace.pk, second.workspace_path) == PNG
    assert GeneratedMedia.objects.get(pk=first.pk).workspace_path == first.workspace_path


def test_a_full_workspace_costs_the_copy_but_never_the_stored_file(run, settings):
    settings.SANDBOX_STATE_MAX_BYTES = 10
    workspace = workspaces.open_for_run(run, "run")

    media = save(run, workspace_id=str(workspace.pk))

    assert media.workspace_path == ""
    assert not workspaces.exists(workspace.pk, "/workspace/output/image-a-red-fox.png")
    assert GeneratedMedia.objects.filter(pk=media.pk).exists() and default_storage.exists(media.path)


def test_files_made_in_a_run_are_found_by_name_or_bytes_only_within_that_run(run, chat):
    media = save(run)
    other_run = run_in(chat)

    assert store.made_in_run(run.pk, run.organization_id, filename=media.filename) == media
    assert store.made_in_run(run.pk, run.organization_id, sha256=media.sha256) == media
    assert store.made_in_run(other_run.pk, run.organization_id, filename=media.filename) is None
    assert store.made_in_run(run.pk, run.organization_id, filename=media.filename, kind="video") is None
    assert [m.pk for m in store.of_run(run.pk)] == [media.pk]


# ------------------------------------------------------------------ the quota


def test_the_quota_refuses_once_the_organizations_files_reach_it_and_binds_nobody_else(
        org, run, settings, outsider_org):
    settings.GENERATED_MEDIA_QUOTA_MB = 1
    store.check_quota(org.pk)  # empty: room
    save(run, data=b"x" * (1024 * 1024 - 1))
    store.check_quota(org.pk)  # one byte short of the quota: still room

    save(run, data=b"y")

    with pytest.raises(store.QuotaExceeded) as refused:
        store.check_quota(org.pk)
    assert "quota (1.0 of 1 MB)" in str(refused.value) and "nothing was spent" in str(refused.value)
    store.check_quota(outsider_org.pk)  # another organization's files are not this one's quota


def test_a_quota_of_zero_is_no_quota(org, run, settings):
    settings.GENERATED_MEDIA_QUOTA_MB = 0
    save(run, data=b"z" * 2048)
    store.check_quota(org.pk)
    assert store.used_bytes(org.pk) == 2048


# ------------------------------------------------------------------ deletion


def test_deleting_a_conversation_deletes_its_files_and_keeps_the_others(
        org, owner, agent, run, chat, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(retention, "_kick", lambda: None)  # the removal task is run below, by hand
    gone = save(run)
    other_chat = conversation(agent, owner)
    kept = save(run_in(other_chat))

    with django_capture_on_commit_callbacks(execute=True):
        delete_conversation(actor=actor_of(owner, org), conversation_id=chat.pk)

    assert list(GeneratedMedia.objects.values_list("pk", flat=True)) == [kept.pk]
    assert list(PendingFileRemoval.objects.values_list("path", "reason")) == [(gone.path, "conversation_deleted")]
    assert retention.remove_pending_files() == 1
    assert not default_storage.exists(gone.path)
    assert default_storage.exists(kept.path)


def test_the_retention_sweep_removes_files_past_the_transcript_period(
        org, owner, agent, chat, outsider_org, outsider, settings, monkeypatch):
    monkeypatch.setattr(retention, "_kick", lambda: None)
    settings.RETENTION_TRANSCRIPT_DAYS = 0  # only the organization's own value deletes
    RetentionPolicy.objects.create(organization=org, transcript_days=30)
    old = save(run_in(chat))
    fresh = save(run_in(chat))
    running = save(run_in(chat, status=RunStatus.RUNNING))
    GeneratedMedia.objects.filter(pk__in=[old.pk, running.pk]).update(created_at=NOW - timedelta(days=31))
    GeneratedMedia.objects.filter(pk=fresh.pk).update(created_at=NOW - timedelta(days=29))
    foreign_chat = conversation(factories.published_agent(outsider_org, outsider), outsider)
    foreign = save(run_in(foreign_chat))  # an organization that keeps everything
    GeneratedMedia.objects.filter(pk=foreign.pk).update(created_at=NOW - timedelta(days=3000))

    removed = retention.sweep_all(NOW)

    assert removed["generated_media"] == 1 and removed["removed_files"] == 1
    assert set(GeneratedMedia.objects.values_list("pk", flat=True)) == {fresh.pk, running.pk, foreign.pk}
    assert not default_storage.exists(old.path)
    assert all(default_storage.exists(m.path) for m in (fresh, running, foreign))
    assert retention.sweep_all(NOW)["generated_media"] == 0  # idempotent
