"""Bytes a stranger can make us store: logos and hosted-page uploads. Types are sniffed, never trusted."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings

from agenticos import images

# Logos are images people upload for others to see: one set of rules for all of them.
LOGO_MAX_BYTES = images.MAX_BYTES
sniff_image = images.sniff
store = images.store
remove_stored = images.remove


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


def logo_path_for(embed_id: object, ext: str) -> str:
    # The name is minted from the sniffed type: never the caller's file name.
    return f"embeds/{embed_id}/logo.{ext}"


def upload_path_for(embed_id: object, ext: str) -> str:
    return f"embeds/{embed_id}/files/{uuid.uuid4().hex}.{ext}"


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)
