"""The generated-media store: every file an agent made, per organization, with its run and conversation.

- `check_quota` is asked before a provider is paid (the tools call it first); `save` writes the bytes to
  default_storage (MEDIA_ROOT, or S3/MinIO through django-storages) under `generated/<organization>/`, records
  the row, and, when the run has a workspace (capability sandbox), writes the same bytes to
  `/workspace/output/<name>` so a later `execute` can build with them.
- A file is served by `/api/v1/generated/<filename>` to members of its organization only (views.py), and to
  the embed visitor of its conversation through the embed's own route.
- It goes with its conversation (pre_delete: files queued as `governance.PendingFileRemoval`, rows by foreign
  key) and after the organization's transcript period (`sweep_expired`, one of governance's retention sweeps).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import uuid
from datetime import datetime
from typing import IO, Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q, Sum

from agenticos.tenancy import parse_uuid
from media.models import GeneratedMedia

PREFIX = "generated/"
OUTPUT_DIR = "/workspace/output"
URL = "/api/v1/generated/{filename}"
# The only types the store keeps (and so serves): what the three capabilities make, each named by what its
# bytes are, never by what a provider claimed.
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif",
              "audio/mpeg": "mp3", "audio/wav": "wav", "video/mp4": "mp4"}
# The only shape a public handle has (what `save` mints): anything else — a path, a NUL, a name of another
# storage — is answered "not found" before it reaches a query or the storage.
FILENAME_RE = re.compile(r"[0-9a-f]{32}\.[a-z0-9]{2,5}")
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")


class QuotaExceeded(Exception):
    """The organization's generated media already fill its quota: nothing is generated (or paid for)."""


def quota_bytes() -> int:
    return int(settings.GENERATED_MEDIA_QUOTA_MB) * 1024 * 1024


def used_bytes(organization_id: Any) -> int:
    return int(GeneratedMedia.objects.filter(organization_id=organization_id).aggregate(n=Sum("size"))["n"] or 0)


def check_quota(organization_id: Any) -> None:
    """Raise `QuotaExceeded` when the organization's stored media reached its quota (0 = no quota). A tool asks
    this first, before the budget and before the provider: the size of what it will make is not known until it
    is made, so a quota binds once it is reached (as a budget cap does), and the file that crosses it is kept —
    it was paid for. Sync (ORM)."""
    cap = quota_bytes()
    if not cap:
        return
    used = used_bytes(organization_id)
    if used >= cap:
        raise QuotaExceeded(
            f"This organization's generated media fill its quota ({used / 1048576:.1f} of "
            f"{cap / 1048576:.0f} MB): nothing was generated and nothing was spent. An owner can delete old "
            "conversations to make room.")


def file_entry(media: GeneratedMedia) -> dict[str, str]:
    """What a tool result carries for each file: the renderer shows it inline / as a player from this."""
    return {"url": URL.format(filename=media.filename), "media_type": media.media_type, "name": media.name,
            "filename": media.filename}


def _unique_workspace_path(workspace_id: str, name: str) -> str:
    from workspaces import store as workspace

    target = f"{OUTPUT_DIR}/{workspace.safe_name(name)}"
    if not workspace.exists(workspace_id, target):
        return target
    stem, dot, ext = target.rpartition(".")
    return f"{stem}-{uuid.uuid4().hex[:6]}{dot}{ext}" if dot else f"{target}-{uuid.uuid4().hex[:6]}"


def _land(workspace_id: str, name: str, data: bytes, run_id: str) -> str:
    """The copy in the run's workspace, or "" when it does not fit (the stored file is what counts)."""
    from workspaces import store as workspace

    target = _unique_workspace_path(workspace_id, name)
    try:
        workspace.write(workspace_id, target, data, run_id=run_id)
    except OSError:
        return ""
    return target


def is_filename(value: object) -> bool:
    return isinstance(value, str) and FILENAME_RE.fullmatch(value) is not None


def extension_for(media_type: str) -> str:
    try:
        return EXTENSIONS[media_type]
    except KeyError:
        raise ValueError(f"the generated-media store does not keep {media_type!r}") from None


def clean_name(name: str, ext: str) -> str:
    """The download name: word characters, dots, dashes and spaces only (it goes into a header and a
    workspace path), ending in the stored type's extension."""
    base = _UNSAFE_NAME.sub("-", posixpath.basename(name or "")).strip(" .-")[:190] or "generated"
    return base if base.lower().endswith(f".{ext}") else f"{base}.{ext}"


def save(*, organization_id: Any, run_id: Any, conversation_id: Any, kind: str, data: bytes, media_type: str,
         name: str, provider: str = "", model: str = "", workspace_id: str | None = None) -> GeneratedMedia:
    """Store one generated file and record it. The run and conversation are kept only when they belong to
    `organization_id`. A row that cannot be written leaves no file behind; a type outside EXTENSIONS is a
    ValueError before anything is written. Sync (ORM, storage)."""
    ext = extension_for(media_type)
    filename = f"{uuid.uuid4().hex}.{ext}"
    stored = default_storage.save(f"{PREFIX}{organization_id}/{filename}", ContentFile(data))
    try:
        with transaction.atomic():
            media = GeneratedMedia(
                organization_id=organization_id, run_id=_existing_run(run_id, organization_id),
                conversation_id=_existing_conversation(conversation_id, organization_id), kind=kind,
                filename=filename, path=stored, name=clean_name(name, ext), media_type=media_type, size=len(data),
                sha256=hashlib.sha256(data).hexdigest(), provider=provider[:40], model=model[:120])
            media.save(force_insert=True)
    except BaseException:
        default_storage.delete(stored)
        raise
    if workspace_id:
        # After the row: a workspace that is full or gone costs the copy, never the stored file.
        media.workspace_path = _land(workspace_id, media.name, data, str(run_id))
        if media.workspace_path:
            GeneratedMedia.objects.filter(pk=media.pk).update(workspace_path=media.workspace_path)
    return media


def _existing_run(run_id: Any, organization_id: Any) -> Any:
    from agents.models import Run

    run_uuid = parse_uuid(str(run_id)) if run_id else None
    if run_uuid and Run.objects.filter(pk=run_uuid, organization_id=organization_id).exists():
        return run_uuid
    return None


def _existing_conversation(conversation_id: Any, organization_id: Any) -> Any:
    from agents.models import Conversation

    conversation_uuid = parse_uuid(str(conversation_id)) if conversation_id else None
    if conversation_uuid and Conversation.objects.filter(pk=conversation_uuid,
                                                         organization_id=organization_id).exists():
        return conversation_uuid
    return None


def read(media: GeneratedMedia) -> bytes:
    with default_storage.open(media.path, "rb") as handle:
        return bytes(handle.read())


def open_stored(media: GeneratedMedia) -> IO[bytes] | None:
    """The stored file opened for streaming, or None when storage no longer has it."""
    try:
        return default_storage.open(media.path, "rb")
    except (FileNotFoundError, OSError):
        return None


def find(filename: object, **scope: Any) -> GeneratedMedia | None:
    """The file a public handle names within `scope` (organization_id=…, conversation_id=…), or None: a
    malformed handle is never looked up."""
    if not is_filename(filename) or not scope:
        return None
    return GeneratedMedia.objects.filter(filename=filename, **scope).first()


def of_run(run_id: Any) -> list[GeneratedMedia]:
    run_uuid = parse_uuid(str(run_id)) if run_id else None
    return list(GeneratedMedia.objects.filter(run_id=run_uuid).order_by("created_at")) if run_uuid else []


def made_in_run(run_id: Any, organization_id: Any, *, filename: str = "", sha256: str = "",
                kind: str = "image") -> GeneratedMedia | None:
    """A file this run made, by its filename or its bytes' digest: a filename alone never reaches another
    run's (or organization's) files."""
    run_uuid = parse_uuid(str(run_id)) if run_id else None
    if run_uuid is None or not (filename or sha256):
        return None
    match = Q(filename=filename) if filename else Q(sha256=sha256)
    return GeneratedMedia.objects.filter(match, run_id=run_uuid, organization_id=organization_id, kind=kind).first()


# ------------------------------------------------------------------ deletion


def _queue_files(rows: Any, reason: str) -> int:
    from governance import retention
    from governance.models import PendingFileRemoval

    found = [(org_id, path) for org_id, path in rows.values_list("organization_id", "path")
             if isinstance(path, str) and path.startswith(PREFIX) and ".." not in path]
    if found:
        PendingFileRemoval.objects.bulk_create(
            [PendingFileRemoval(organization_id=org_id, path=path, reason=reason) for org_id, path in found])
        retention._kick_after_commit()
    return len(found)


def on_conversation_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    """pre_delete of agents.Conversation: its files are queued in the deleting transaction (rows cascade)."""
    _queue_files(GeneratedMedia.objects.filter(conversation_id=instance.pk), reason="conversation_deleted")


def sweep_expired(now: datetime | None = None) -> int:
    """Generated files older than the organization's transcript period (they are part of the transcript):
    rows deleted in batches, their files queued for removal in the same transaction."""
    from governance import retention

    def select(org: Q, cutoff: datetime) -> int:
        # A run still going or parked keeps what it made, as it keeps its messages.
        chosen = GeneratedMedia.objects.filter(org, retention._ended_or_no_run("run"), created_at__lt=cutoff)
        return retention.delete_in_batches(chosen, before=lambda ids: _queue_files(
            GeneratedMedia.objects.filter(pk__in=ids), reason="generated_expired"))

    return retention._by_policy("generated_media", "transcript_days", "organization", now, select)


def display_name(prefix: str, text: str) -> str:
    """A readable file name from the prompt's first words ("image-a-red-fox")."""
    words = "".join(ch if ch.isalnum() else " " for ch in text.lower()).split()[:6]
    return posixpath.basename("-".join([prefix, *words]))[:80] or prefix
