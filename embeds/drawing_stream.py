"""A `draw` call's drawing for a visitor whose page hides a step's arguments (embeds/frames.py), while the model
writes it: from the raw argument deltas (partial JSON) only `kind` and `content` go out, re-encoded as the start of
an arguments object of their own — `{"kind": "svg", "content": "<svg…` and then the rest of the content as written —
so the visitor's renderer grows the drawing exactly as web chat does, and nothing else the call carries (its image
sources, anything a later field says) leaves the server before or after.

Incremental on purpose: the content is decoded from where the last delta stopped, never re-read from the start, so
a drawing of a megabyte costs one pass however many deltas it arrives in. Written here rather than taken from a
partial-JSON library: those re-parse the whole text on every call, and this needs two top-level strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

KINDS = ("svg", "mermaid", "html")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SPACE = " \t\r\n"


@dataclass
class DrawingStream:
    text: str = ""
    kind: str = ""
    content_at: int | None = None  # where the content string's characters start in `text`
    pos: int = 0  # how far the content has been decoded
    done: bool = False  # the content string closed, or this call cannot be streamed (kind after content)

    def feed(self, delta: str) -> str:
        """The visitor's next `args_delta` for this raw delta ("" when there is nothing to send yet)."""
        if self.done:
            return ""
        self.text += delta
        opening = ""
        if self.content_at is None:
            fields, content_at = _scan(self.text)
            kind = fields.get("kind", "")
            if content_at is None:
                return ""
            if kind not in KINDS:
                self.done = True  # the kind comes after the drawing (or is not one): drawn when complete
                return ""
            self.kind, self.content_at, self.pos = kind, content_at, content_at
            opening = '{"kind": ' + json.dumps(kind) + ', "content": "'
        piece = self._decode()
        return opening + (json.dumps(piece)[1:-1] if piece else "")

    def _decode(self) -> str:
        out: list[str] = []
        text, i, n = self.text, self.pos, len(self.text)
        while i < n:
            c = text[i]
            if c == '"':
                self.done = True
                i += 1
                break
            if c != "\\":
                out.append(c)
                i += 1
                continue
            if i + 1 >= n:
                break  # an escape not written out yet
            e = text[i + 1]
            if e == "u":
                if i + 6 > n:
                    break
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))  # each half of a surrogate pair on its own
                except ValueError:
                    self.done = True
                    break
                i += 6
            else:
                out.append(_ESCAPES.get(e, e))
                i += 2
        self.pos = i
        return "".join(out)


def _string_end(text: str, i: int) -> int | None:
    """The index after the closing quote of the string whose opening quote is at `i`, None when it is not closed."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return None


def _value_end(text: str, i: int) -> int | None:
    """The index after the value starting at `i` (any JSON value), None when it is not complete yet."""
    if i >= len(text):
        return None
    if text[i] == '"':
        return _string_end(text, i)
    if text[i] not in "[{":
        j = i
        while j < len(text) and text[j] not in ",}]" + _SPACE:
            j += 1
        return j if j < len(text) else None
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            end = _string_end(text, i)
            if end is None:
                return None
            i = end
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _scan(text: str) -> tuple[dict[str, str], int | None]:
    """The complete top-level string fields before `content`, and where `content`'s characters start (or None)."""
    fields: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    if i >= n or text[i] != "{":
        return fields, None
    i += 1
    while True:
        while i < n and text[i] in _SPACE + ",":
            i += 1
        if i >= n or text[i] != '"':
            return fields, None
        key_end = _string_end(text, i)
        if key_end is None:
            return fields, None
        key = json.loads(text[i:key_end])
        i = key_end
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n or text[i] != ":":
            return fields, None
        i += 1
        while i < n and text[i] in _SPACE:
            i += 1
        if key == "content" and i < n and text[i] == '"':
            return fields, i + 1
        end = _value_end(text, i)
        if end is None:
            return fields, None
        if text[i] == '"':
            fields[key] = json.loads(text[i:end])
        i = end
