"""The guardrails binding's settings: four edges × redact secrets / redact personal data / blocked keywords."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.guardrails.phones import MAX_REGIONS, split_codes, unknown_regions

Edge = Literal["in", "out", "tool", "args"]
EDGES: tuple[Edge, ...] = ("in", "out", "tool", "args")
EDGE_NAMES = {"in": "input", "out": "output", "tool": "tool result", "args": "tool arguments"}
MAX_KEYWORD_CHARS = 200
MAX_KEYWORDS = 500

_SECRETS = "Replace API keys, tokens, JWTs and PEM private key blocks with a [redacted:…] marker"
_PII = ("Replace emails, phone numbers (valid in their numbering plan), IBANs (mod-97), card numbers (Luhn) and "
        "US SSNs with a [redacted:…] marker")
_KEYWORDS = "Terms separated by commas or line breaks; a match ends the run as blocked by a guardrail"
_WHERE = {
    "in": "in the person's message before the model reads it (the conversation keeps what they typed)",
    "out": "in the agent's answer and reasoning before anyone sees it",
    "tool": "in what a tool returned, before the model reads it",
    "args": "in what the agent passes to a tool, before the tool runs",
}


def _flag(edge: Edge, what: str) -> bool:
    return Field(default=False, description=f"{what} {_WHERE[edge]}.")  # type: ignore[return-value]


def _terms(edge: Edge) -> str:
    return Field(default="", max_length=20_000, description=f"{_KEYWORDS}: checked {_WHERE[edge]}.")  # type: ignore[return-value]


class GuardrailsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    redact_secrets_in: bool = _flag("in", _SECRETS)
    redact_pii_in: bool = _flag("in", _PII)
    blocked_keywords_in: str = _terms("in")
    redact_secrets_out: bool = _flag("out", _SECRETS)
    redact_pii_out: bool = _flag("out", _PII)
    blocked_keywords_out: str = _terms("out")
    redact_secrets_tool: bool = _flag("tool", _SECRETS)
    redact_pii_tool: bool = _flag("tool", _PII)
    blocked_keywords_tool: str = _terms("tool")
    redact_secrets_args: bool = _flag("args", _SECRETS)
    redact_pii_args: bool = _flag("args", _PII)
    blocked_keywords_args: str = _terms("args")
    phone_regions: str = Field(
        default="US, GB, DE, PL", max_length=400,
        description="ISO 3166 country codes (commas or line breaks), at most 16, whose national phone formats the "
                    "personal-data redaction reads; a number written with + is read whatever this says.")

    @field_validator("phone_regions")
    @classmethod
    def _regions(cls, value: str) -> str:
        codes = split_codes(value)
        unknown = unknown_regions(codes)
        if unknown:
            hint = " (the United Kingdom is GB)" if any(code.upper() == "UK" for code in unknown) else ""
            raise ValueError(f"Unknown country code(s): {', '.join(unknown)}{hint}.")
        if len({code.upper() for code in codes}) > MAX_REGIONS:
            raise ValueError(f"At most {MAX_REGIONS} country codes.")
        return value

    @field_validator("blocked_keywords_in", "blocked_keywords_out", "blocked_keywords_tool", "blocked_keywords_args")
    @classmethod
    def _keywords(cls, value: str) -> str:
        terms = split_codes(value)
        if len(terms) > MAX_KEYWORDS:
            raise ValueError(f"At most {MAX_KEYWORDS} terms.")
        too_long = [term for term in terms if len(term) > MAX_KEYWORD_CHARS]
        if too_long:
            raise ValueError(f"A term is at most {MAX_KEYWORD_CHARS} characters.")
        return value

    def regions(self) -> list[str]:
        return list(dict.fromkeys(code.upper() for code in split_codes(self.phone_regions)))

    def keywords(self, edge: Edge) -> list[str]:
        return list(dict.fromkeys(split_codes(getattr(self, f"blocked_keywords_{edge}"))))

    def configured(self, edge: Edge) -> bool:
        return bool(getattr(self, f"redact_secrets_{edge}") or getattr(self, f"redact_pii_{edge}")
                    or self.keywords(edge))
