"""The phone-number detector the harness does not ship: libphonenumber's matcher at STRICT_GROUPING.

A candidate is redacted only when it is a real number — valid in its country's numbering plan, with its
separators where that country groups digits — so a date, an amount or an order number a digit-count rule
would take passes unchanged. A number written with "+" names its own country and is read whatever the list
says; a national one is read against each listed region (each added region widens what a bare run of digits
may be: 123456789 is a valid Polish landline).

Each region beyond four is another pass over the text, so the readable size shrinks in proportion: with up
to four, at most 200,000 characters and 10,000 digits; with sixteen, 50,000 and 2,500. A longer text cannot
be read, and passing it unread would pass every number in it, so it raises `TextTooLong` (the run ends
`guardrail_blocked`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import phonenumbers
from pydantic_ai_harness.guardrails import GuardrailResult

MAX_REGIONS = 16
BASE_REGIONS = 4
BASE_MAX_CHARS = 200_000
BASE_MAX_DIGITS = 10_000
PLACEHOLDER = "[redacted:phone]"
_DIGIT = re.compile(r"\d")


class TextTooLong(Exception):
    """The text is longer than the phone detector reads with this many regions."""


def split_codes(text: str) -> list[str]:
    """Region codes or keywords as written: separated by commas or line breaks, blanks dropped."""
    return [item.strip() for item in re.split(r"[,\n]", text or "") if item.strip()]


def unknown_regions(codes: Sequence[str]) -> list[str]:
    return [code for code in codes if code.upper() not in phonenumbers.SUPPORTED_REGIONS]


def limits(region_count: int) -> tuple[int, int]:
    """(characters, digits) the detector reads with this many regions."""
    scale = BASE_REGIONS / max(BASE_REGIONS, region_count)
    return int(BASE_MAX_CHARS * scale), int(BASE_MAX_DIGITS * scale)


class PhoneDetector:
    """A text detector (`GuardrailResult`), like the harness's: replaces each real phone number."""

    def __init__(self, regions: Sequence[str]):
        self.regions = tuple(dict.fromkeys(code.upper() for code in regions))
        self.max_chars, self.max_digits = limits(len(self.regions))

    def readable(self, text: str) -> None:
        if len(text) > self.max_chars or len(_DIGIT.findall(text)) > self.max_digits:
            raise TextTooLong(f"more than {self.max_chars} characters or {self.max_digits} digits")

    def spans(self, text: str) -> list[tuple[int, int]]:
        self.readable(text)
        found: list[tuple[int, int]] = []
        # No region at all still reads numbers written with "+", which name their own country.
        for region in self.regions or (None,):
            for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.STRICT_GROUPING):
                found.append((match.start, match.end))
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def __call__(self, text: object) -> GuardrailResult:
        if not isinstance(text, str):
            return GuardrailResult.allow()
        self.readable(text)
        if not _DIGIT.search(text):
            return GuardrailResult.allow()
        spans = self.spans(text)
        if not spans:
            return GuardrailResult.allow()
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], PLACEHOLDER]
            last = end
        out.append(text[last:])
        return GuardrailResult.replace("".join(out))
