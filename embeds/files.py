"""Bytes a stranger can make us store: logos and hosted-page uploads. Types are sniffed, never trusted."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

LOGO_MAX_BYTES = 2 * 1024 * 1024

# The four image types a logo may be, by their first bytes. Anything else (HTML, SVG, …) is nothing.
_IMAGE_SIGNATURES: list[tuple[bytes, str, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
]


def sniff_image(head: bytes) -> tuple[str, str] | None:
    """(mime, extension) of a PNG/JPEG/WebP/GIF, or None for anything else."""
    for signature, mime, ext in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime, ext
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp", "webp"
    return None


# Hosted-page uploads: the allow-list and how each type is recognised. Text types cannot be sniffed
# by magic bytes, so they are accepted only when they decode as UTF-8 and carry no NUL byte.
UPLOAD_MIME_ALLOW = {
    "application/pdf": "pdf",
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/webp": "webp",
    "image/gif": "gif",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
}


def sniff_upload(head: bytes, declared: str) -> tuple[str, str] | None:
    image = sniff_image(head)
    if image:
        return image
    if head.startswith(b"%PDF-"):
        return "application/pdf", "pdf"
    declared = (declared or "").split(";")[0].strip().lower()
    if declared in ("text/plain", "text/markdown", "text/csv") and b"\x00" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError:
            # A multi-byte character cut at the end of the sniffed head is still text.
            try:
                head[:-3].decode("utf-8")
            except UnicodeDecodeError:
                return None
        return declared, UPLOAD_MIME_ALLOW[declared]
    return None


def store(relative: str, data: bytes) -> str:
    if default_storage.exists(relative):
        default_storage.delete(relative)
    return default_storage.save(relative, ContentFile(data))


def read_stored(relative: str) -> bytes | None:
    if not relative or ".." in Path(relative).parts:
        return None
    try:
        with default_storage.open(relative, "rb") as handle:
            return handle.read(LOGO_MAX_BYTES + 1)
    except (FileNotFoundError, OSError):
        return None


def remove_stored(relative: str) -> None:
    if relative and default_storage.exists(relative):
        default_storage.delete(relative)


def logo_path_for(embed_id: object, ext: str) -> str:
    # The name is minted from the sniffed type: never the caller's file name.
    return f"embeds/{embed_id}/logo.{ext}"


def upload_path_for(embed_id: object, ext: str) -> str:
    return f"embeds/{embed_id}/files/{uuid.uuid4().hex}.{ext}"


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)
