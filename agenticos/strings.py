"""Reading text from requests, free of Django (agenticos.hostports reads settings with it while they load)."""

from __future__ import annotations


def digits_only(text: str) -> bool:
    """Whether `text` is ASCII digits, all `int()` should read from a request. `str.isdigit()` is also true of
    '³', '①' and other characters `int()` refuses — an id or number check with it let those through to a 500
    (the fuzz test's `?actor=³` on the audit log)."""
    return text.isascii() and text.isdigit()
