"""A file a person attaches to a chat turn: one way in for every surface that takes one from a browser.

`read_upload` is the intake web chat (agents.api_attachments) and the hosted page (embeds.views.upload) share:
the multipart field `file`, the surface's ceiling checked against the declared body before a byte is read and
against the bytes after (a claim is not a measurement), and the type sniffed from the bytes with the one
allow-list (agenticos.uploads.sniff_upload) — never taken from the name or the browser. A channel's files come the
same way from a platform (channelbots.files). Who may upload, the surface's own ceiling and where the bytes go
stay with each surface.

Web chat's files are staged without a row: the upload answers an id that is a signed note of whose file it is
(organization, person), where it is stored and what it is, so a message can name only the sender's own upload,
and attaches it at most once — the message's `attachments` then hold it like every surface's (runner/attachments).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone
from rest_framework.request import Request

from agenticos.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotFound,
    UnsupportedType,
    UploadTooLarge,
)
from agenticos.tenancy import Actor
from agenticos.uploads import UPLOAD_MIME_ALLOW, sniff_upload
from agents.models import Message

# What a multipart envelope may add around the file itself before we call the body oversized.
MULTIPART_OVERHEAD = 64 * 1024
# Web chat: a member's message may carry more than a public page's three (the prompt stays bounded by
# ATTACHMENT_MAX_CHARS per file); more than this is a mistake rather than a question.
MAX_FILES_PER_MESSAGE = 10
# An uploaded file not sent within a day is attached again: the id is a signed note, not a row to keep.
UPLOAD_ID_MAX_AGE_SECONDS = 24 * 3600
STORAGE_PREFIX = "chat/"
_SALT = "agents.uploads.chat-attachment"


@dataclass(frozen=True)
class Upload:
    name: str
    mime: str
    ext: str
    data: bytes


def chat_max_bytes() -> int:
    """The chat surface's own ceiling (CHAT_MAX_UPLOAD_SIZE_MB); a public page narrows it further."""
    return int(float(getattr(settings, "CHAT_MAX_UPLOAD_SIZE_MB", 10)) * 1024 * 1024)


def accepted_kinds() -> list[str]:
    return sorted(set(UPLOAD_MIME_ALLOW.values()))


def _too_large(limit_bytes: int) -> UploadTooLarge:
    # A ceiling under 1 MB is said in KB: "larger than 1 MB" for a 10 KB cap would send a person the wrong way.
    size = f"{limit_bytes // (1024 * 1024)} MB" if limit_bytes >= 1024 * 1024 else f"{max(limit_bytes // 1024, 1)} KB"
    return UploadTooLarge(f"The file is larger than {size}.",
                    details={"limit_bytes": limit_bytes})


def refuse_oversized_body(request: HttpRequest | Request, limit_bytes: int) -> None:
    """Refuse a body that declares more than the file ceiling (plus its envelope) before it is read."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit_bytes + MULTIPART_OVERHEAD:
        raise _too_large(limit_bytes)


def read_upload(request: HttpRequest | Request, limit_bytes: int) -> Upload:
    """The multipart field `file`, at most `limit_bytes`, of an accepted type recognised by its bytes."""
    upload_file = request.FILES.get("file")
    if upload_file is None:
        raise DomainError("Send the file as the multipart field 'file'.", details={"field": "file"})
    if (upload_file.size or 0) > limit_bytes:
        raise _too_large(limit_bytes)
    data = upload_file.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise _too_large(limit_bytes)
    sniffed = sniff_upload(data[:4096], upload_file.content_type or "")
    if sniffed is None:
        raise UnsupportedType(f"This kind of file is not accepted (accepted: {', '.join(accepted_kinds())}).",
                              details={"accepted": accepted_kinds()})
    mime, ext = sniffed
    name = PurePosixPath((upload_file.name or "").replace("\\", "/")).name[:255] or f"file.{ext}"
    return Upload(name=name, mime=mime, ext=ext, data=data)


# ------------------------------------------------------------------ web chat's staged files


def store_chat_upload(*, actor: Actor, upload: Upload) -> dict[str, Any]:
    """Store a member's file for a message they are about to send; the answer's `id` names it in that message."""
    actor.require("agents:run")
    if actor.user_id is None:
        raise Forbidden("Only a person attaches files to a chat message.")
    path = default_storage.save(
        f"{STORAGE_PREFIX}{actor.organization.pk}/{uuid.uuid4().hex}.{upload.ext}", ContentFile(upload.data))
    note = {"o": str(actor.organization.pk), "u": actor.user_id, "p": path, "n": upload.name, "m": upload.mime,
            "s": len(upload.data)}
    return {"id": signing.dumps(note, salt=_SALT, compress=True), "name": upload.name, "mime": upload.mime,
            "size": len(upload.data)}


def _unavailable() -> NotFound:
    return NotFound("One of those files is not available any more: attach it again.", code="attachment_not_found")


def claim_chat_uploads(actor: Actor, ids: object) -> list[dict[str, Any]]:
    """The message's `attachments` for the upload ids it names: each the sender's own, in this organization, not
    attached to a message yet. Call inside the transaction that writes the message (the claim is locked there)."""
    if ids in (None, []):
        return []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise Invalid("attachment_ids is a list of the ids the upload answered.", details={"field": "attachment_ids"})
    if len(ids) > MAX_FILES_PER_MESSAGE:
        raise Invalid(f"A message carries at most {MAX_FILES_PER_MESSAGE} files.",
                      details={"field": "attachment_ids", "limit": MAX_FILES_PER_MESSAGE})
    attachments: list[dict[str, Any]] = []
    for file_id in dict.fromkeys(ids):
        try:
            note = signing.loads(file_id, salt=_SALT, max_age=UPLOAD_ID_MAX_AGE_SECONDS)
        except signing.SignatureExpired:
            raise _unavailable() from None
        except signing.BadSignature:
            raise _unavailable() from None
        if note.get("o") != str(actor.organization.pk) or note.get("u") != actor.user_id:
            raise Forbidden("One of those files was uploaded by someone else: attach your own.",
                            code="attachment_not_yours")
        path = str(note["p"])
        _lock(path)
        # An id lives a day, so only a message of the last day can hold its file: the scan stays that small.
        since = timezone.now() - timedelta(seconds=UPLOAD_ID_MAX_AGE_SECONDS)
        if Message.objects.filter(conversation__organization=actor.organization, created_at__gte=since,
                                  attachments__contains=[{"path": path}]).exists():
            raise Conflict("One of those files is already attached to a message: attach it again.",
                           code="attachment_used")
        if not default_storage.exists(path):
            raise _unavailable()
        attachments.append({"file_id": uuid.uuid5(uuid.NAMESPACE_URL, path).hex, "name": note["n"],
                            "mime": note["m"], "size": note["s"], "path": path})
    return attachments


def _lock(path: str) -> None:
    # Two sends of one upload at once: the second waits for the first's transaction, then finds it attached.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"chat-upload:{path}"])


def public_attachments(attachments: object) -> list[dict[str, Any]]:
    """What a reader of the transcript sees of a message's files: name, type and size, never the storage path."""
    out = []
    for item in attachments if isinstance(attachments, list) else []:
        if isinstance(item, dict):
            out.append({"name": str(item.get("name") or "file"), "mime": str(item.get("mime") or ""),
                        "size": item.get("size")})
    return out


def sweep_unsent(now: Any = None) -> int:
    """Delete staged files no message took once their id can no longer be sent (a day, plus an hour's grace for
    a send that was in flight): without a row, storage is the only record of them. A file some message holds
    stays (a deleted message's files go through retention's removed_files). Returns how many went."""
    import logging
    import os

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=UPLOAD_ID_MAX_AGE_SECONDS + 3600)
    removed = 0
    try:
        organizations, _ = default_storage.listdir(STORAGE_PREFIX.rstrip("/"))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for org_folder in organizations:
        try:
            organization_id = uuid.UUID(org_folder)
        except ValueError:
            continue
        folder = f"{STORAGE_PREFIX}{org_folder}"
        _, files = default_storage.listdir(folder)
        for name in files:
            path = f"{folder}/{name}"
            stored_at = default_storage.get_modified_time(path)
            if stored_at >= cutoff:
                continue
            # A message that took it was written after the upload and at most a day later (the id's life).
            window = (stored_at - timedelta(minutes=5), stored_at + timedelta(seconds=UPLOAD_ID_MAX_AGE_SECONDS + 3600))
            if Message.objects.filter(conversation__organization_id=organization_id, created_at__range=window,
                                      attachments__contains=[{"path": path}]).exists():
                continue
            default_storage.delete(path)
            removed += 1
    if removed:
        logging.getLogger(__name__).info("unsent chat uploads: deleted %d staged files (pid %d)", removed, os.getpid())
    return removed
