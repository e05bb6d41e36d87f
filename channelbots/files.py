"""Files in from a chat: the same rules as a web upload (MIME allow-list sniffed from the bytes, size
checked against the platform's claim before download and against the bytes after)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from agenticos.uploads import UPLOAD_MIME_ALLOW, sniff_upload
from channelbots.incoming import IncomingFile
from channelbots.platforms import PlatformClient, PlatformError


@dataclass
class FileRefused(Exception):
    name: str
    reason: str


def max_bytes() -> int:
    return int(float(getattr(settings, "CHAT_MAX_UPLOAD_SIZE_MB", 10)) * 1024 * 1024)


def fetch_and_store(client: PlatformClient, bot, incoming_file: IncomingFile) -> dict:
    limit = max_bytes()
    name = incoming_file.name or "file"
    if incoming_file.size is not None and incoming_file.size > limit:
        raise FileRefused(name, f"it is larger than {limit // (1024 * 1024)} MB")
    try:
        download = client.download(incoming_file, limit)
    except PlatformError as exc:
        raise FileRefused(incoming_file.name or name, str(exc).rstrip(".")) from None
    name = incoming_file.name or name
    data = download.data
    if len(data) > limit:
        raise FileRefused(name, f"it is larger than {limit // (1024 * 1024)} MB")
    sniffed = sniff_upload(data[:4096], incoming_file.mime or download.content_type)
    if sniffed is None:
        allowed = ", ".join(sorted(set(UPLOAD_MIME_ALLOW.values())))
        raise FileRefused(name, f"that type of file is not accepted (accepted: {allowed})")
    mime, ext = sniffed
    path = default_storage.save(f"channelbots/{bot.pk}/files/{uuid.uuid4().hex}.{ext}", ContentFile(data))
    return {"file_id": uuid.uuid4().hex, "name": name[:255], "mime": mime, "size": len(data), "path": path}


def remove(path: str) -> None:
    if path and default_storage.exists(path):
        default_storage.delete(path)
