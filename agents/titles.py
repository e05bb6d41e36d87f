"""A conversation's title from its first message: the first line a person would read, without markdown.

The raw prompt made a poor title: "## Context\\n```python…", a pasted link, 80 characters cut mid-word. Here
the first line that has words in it, its markdown marks taken off (headings, emphasis, code fences and
backticks, list and quote markers, links and images kept as their text), whitespace folded, and cut at a
word boundary with an ellipsis. Deterministic and free: no model call for a title.
"""

from __future__ import annotations

import re

MAX_TITLE = 60
FALLBACK = "New conversation"

_FENCE = re.compile(r"^\s*(```|~~~)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_LINE_MARKERS = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+)+")
_EMPHASIS = re.compile(r"(\*\*|__|~~|\*|_)(?=\S)(.+?)(?<=\S)\1")
_CODE = re.compile(r"`+([^`]*)`+")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_SPACE = re.compile(r"\s+")


def conversation_title(text: str, *, limit: int = MAX_TITLE) -> str:
    """The readable title of a conversation whose first message is `text` (FALLBACK when it has no words)."""
    in_fence = False
    for raw_line in (text or "").splitlines():
        if _FENCE.match(raw_line):
            in_fence = not in_fence
            continue
        if in_fence or _RULE.match(raw_line):
            continue
        line = plain_line(raw_line)
        if any(ch.isalnum() for ch in line):
            return shorten(line, limit)
    # Only code (or nothing): the first line of code is still better than nothing.
    for raw_line in (text or "").splitlines():
        line = _SPACE.sub(" ", raw_line).strip()
        if line and not _FENCE.match(raw_line) and any(ch.isalnum() for ch in line):
            return shorten(line, limit)
    return FALLBACK


def plain_line(line: str) -> str:
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(r"\1", line)
    line = _LINE_MARKERS.sub("", line)
    line = _HTML_TAG.sub("", line)
    line = _CODE.sub(r"\1", line)
    for _ in range(3):  # nested emphasis (***bold italic***)
        line = _EMPHASIS.sub(r"\2", line)
    return _SPACE.sub(" ", line).strip()


def shorten(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
