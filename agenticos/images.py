"""Images people upload for others to see (an agent's avatar, the organization's logo, a hosted page's
logo): one of PNG/JPEG/WebP/GIF by sniffed type, at most 2 MB, stored under a name minted from that
type — never the caller's name, never an HTML or SVG that a browser could run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from agenticos.errors import Invalid

MAX_BYTES = 2 * 1024 * 1024

_SIGNATURES: list[tuple[bytes, str, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png", "png"),
    (b"\xff\xd8\xff", "image/jpeg", "jpg"),
    (b"GIF87a", "image/gif", "gif"),
    (b"GIF89a", "image/gif", "gif"),
]


def sniff(head: bytes) -> tuple[str, str] | None:
    """(mime, extension) of a PNG/JPEG/WebP/GIF, or None for anything else."""
    for signature, mime, ext in _SIGNATURES:
        if head.startswith(signature):
            return mime, ext
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp", "webp"
    return None


def accept(data: bytes, *, what: str, field: str) -> str:
    """The extension of an acceptable image, or a 400 naming the field."""
    if len(data) > MAX_BYTES:
        raise Invalid(f"The {what} is larger than 2 MB.", details={"field": field, "limit_bytes": MAX_BYTES})
    sniffed = sniff(data[:64])
    if sniffed is None:
        raise Invalid(f"The {what} must be a PNG, JPEG, WebP or GIF image.", details={"field": field})
    return sniffed[1]


def store(relative: str, data: bytes) -> str:
    if default_storage.exists(relative):
        default_storage.delete(relative)
    return default_storage.save(relative, ContentFile(data))


def read(relative: str) -> bytes | None:
    """The stored image, or None when missing, unreadable or no longer an image we serve."""
    if not relative or ".." in Path(relative).parts:
        return None
    try:
        with default_storage.open(relative, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except (FileNotFoundError, OSError):
        return None
    if len(data) > MAX_BYTES or sniff(data[:64]) is None:
        return None
    return data


def remove(relative: str) -> None:
    if relative and default_storage.exists(relative):
        default_storage.delete(relative)


def replace(obj: Any, field: str, data: bytes | None, path_for: Callable[[str], str], *, what: str) -> str:
    """Store `data` as the image in `obj.<field>` (None removes it). Call inside the caller's transaction:
    the replaced file is deleted once it commits, and a refused image changes nothing."""
    old = getattr(obj, field)
    new = ""
    if data is not None:
        new = store(path_for(accept(data, what=what, field="file")), data)
    type(obj).objects.filter(pk=obj.pk).update(**{field: new})
    setattr(obj, field, new)
    if old and old != new:
        transaction.on_commit(lambda: remove(old))
    return new
