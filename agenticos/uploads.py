"""What an uploaded file is: its type sniffed from its first bytes against one allow-list, never taken from its
name or the browser's word. Every door a stranger or a member uploads through uses it — the hosted page, the widget,
the console's chat, the REST API, the chat platforms' files."""

from __future__ import annotations

from agenticos import images

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
    image = images.sniff(head)
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
