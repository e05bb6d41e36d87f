"""The files a person attached to this turn, as the model receives them.

Every surface stores an attachment the same way (a row in the user message's `attachments`: name, mime,
size and the storage path); what the model gets is decided here, once. For an agent with a workspace
(capability sandbox) each file is written to `/workspace/uploads/` and the prompt names where it is (an
image is also shown, up to the inline ceiling). Without one every file is folded into the prompt: a
document as its extracted text (a PDF page by page, cut at `ATTACHMENT_MAX_CHARS`), an image as the image
itself up to `ATTACHMENT_INLINE_IMAGE_MAX_MB`. A file that cannot be read is named with the reason, never
dropped in silence — an agent that ignores an attachment looks exactly like one that read it.

The transcript keeps what the person wrote; the folded text is the model's input only.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from pydantic_ai import BinaryContent

# Attachment MIME → knowledge parser kind (the same parsers ingestion uses).
_DOCUMENT_KINDS = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
}
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")


def user_prompt(text: str, attachments: list[dict], landed: dict[str, str] | None = None) -> str | list[Any]:
    """The prompt as the model receives it: the text alone, or the text followed by each file.

    `landed` maps an attachment's storage path to where it was written in the run's workspace."""
    if not attachments:
        return text
    parts: list[Any] = [text]
    for attachment in attachments:
        parts.extend(_fold(attachment, (landed or {}).get(str(attachment.get("path") or ""))))
    return parts


def land(workspace_id: str, run_id: str, attachments: list[dict]) -> dict[str, str]:
    """Write this turn's files into the run's workspace (`/workspace/uploads/<name>`)."""
    if not attachments:
        return {}
    from workspaces import store

    return store.land_uploads(workspace_id, attachments, run_id=run_id, read_bytes=_read)


def _fold(attachment: dict, in_workspace: str | None = None) -> list[Any]:
    name = str(attachment.get("name") or "file")
    mime = str(attachment.get("mime") or "")
    header = f"[Attached file: {name} ({mime or 'unknown type'}, {_size(attachment.get('size'))})]"
    if in_workspace:
        header += f"\nIt is in your workspace at {in_workspace}: read it with read_file when you need it."
        if mime not in _IMAGE_TYPES:
            return [header]
    data = _read(str(attachment.get("path") or ""))
    if data is None:
        return [f"{header}\nThe file could not be read back from storage, so its content is not available."]
    if mime in _IMAGE_TYPES:
        ceiling = settings.ATTACHMENT_INLINE_IMAGE_MAX_MB * 1024 * 1024
        if len(data) > ceiling:
            return [f"{header}\nThis image is larger than {settings.ATTACHMENT_INLINE_IMAGE_MAX_MB} MB, "
                    "so it is not shown to you."]
        return [header, BinaryContent(data=data, media_type=mime)]
    kind = _DOCUMENT_KINDS.get(mime)
    if kind is None:
        return [f"{header}\nFiles of this type cannot be read here."]
    return [f"{header}\n{_document_text(kind, data)}"]


def _document_text(kind: str, data: bytes) -> str:
    from knowledge.parsers import ParseError, parse

    try:
        sections = parse(kind, data)
    except ParseError as exc:
        return f"Its content could not be read: {exc}"
    text = "\n\n".join(f"[page {s.page}]\n{s.text}" if s.page else s.text for s in sections)
    limit = settings.ATTACHMENT_MAX_CHARS
    if len(text) > limit:
        text = text[:limit] + f"\n…[the file continues: {len(text) - limit} more characters not shown]"
    return f"--- content ---\n{text}\n--- end of file ---"


def _read(path: str) -> bytes | None:
    if not path:
        return None
    try:
        with default_storage.open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, OSError, ValueError):
        return None


def _size(size: object) -> str:
    try:
        value = int(size)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return "size unknown"
    if value < 1024:
        return f"{value} bytes"
    if value < 1024 * 1024:
        return f"{value / 1024:.0f} KB"
    return f"{value / (1024 * 1024):.1f} MB"
