"""One edge's checks: the harness's detectors (secrets, personal data, blocked keywords) plus the phone
detector, applied to text and to every string inside a structured value (tool arguments and results)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai_harness.guardrails import GuardrailError, GuardrailResult
from pydantic_ai_harness.guardrails.detectors import blocked_keywords, personal_data, secret_data

from capabilities.guardrails.config import EDGE_NAMES, Edge, GuardrailsConfig
from capabilities.guardrails.phones import PhoneDetector, TextTooLong

Detector = Callable[[Any], GuardrailResult]

# What a person sees in place of a reasoning step that held a blocked term (reasoning is not the answer,
# so it does not end the run).
WITHHELD_REASONING = "[reasoning withheld by the output guardrail]"


class GuardrailBlocked(GuardrailError):
    """A blocked term matched (or a text could not be read): the run ends `guardrail_blocked`.

    The message names the edge, never the term: the list is the author's and may itself be sensitive."""

    def __init__(self, edge: Edge, reason: str = "a blocked term matched"):
        self.edge = edge
        self.reason = reason
        super().__init__(f"The {EDGE_NAMES[edge]} guardrail stopped this run: {reason}.")


@dataclass(frozen=True)
class Screen:
    edge: Edge
    redactors: tuple[Detector, ...] = ()
    keywords: Detector | None = None

    @classmethod
    def for_edge(cls, config: GuardrailsConfig, edge: Edge) -> Screen | None:
        if not config.configured(edge):
            return None
        redactors: list[Detector] = []
        if getattr(config, f"redact_secrets_{edge}"):
            redactors.append(secret_data())
        if getattr(config, f"redact_pii_{edge}"):
            redactors += [personal_data(), PhoneDetector(config.regions())]
        terms = config.keywords(edge)
        return cls(edge=edge, redactors=tuple(redactors), keywords=blocked_keywords(terms) if terms else None)

    # ---- text

    def blocked(self, text: str) -> bool:
        return bool(text) and self.keywords is not None and self.keywords(text).action == "block"

    def redact(self, text: str) -> str:
        for detector in self.redactors:
            try:
                verdict = detector(text)
            except TextTooLong as exc:
                # Passing it unread would pass every number in it.
                raise GuardrailBlocked(self.edge, f"a text too long to read for phone numbers ({exc})") from None
            if verdict.action == "replace" and isinstance(verdict.replacement, str):
                text = verdict.replacement
        return text

    def clean(self, text: str) -> str:
        """The redacted text; a blocked term raises `GuardrailBlocked`."""
        if self.blocked(text):
            raise GuardrailBlocked(self.edge)
        return self.redact(text)

    # ---- structured values

    def clean_value(self, value: Any) -> Any:
        """`value` with every string in it cleaned (dict keys stay as they are); a blocked term anywhere raises."""
        from pydantic_ai.messages import ToolReturn

        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, dict):
            return {key: self.clean_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.clean_value(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.clean_value(item) for item in value)
        if isinstance(value, ToolReturn):
            content = value.content
            cleaned_content = self.clean_value(list(content)) if isinstance(content, list | tuple) else (
                self.clean_value(content) if isinstance(content, str) else content)
            return replace(value, return_value=self.clean_value(value.return_value), content=cleaned_content)
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            dumped = dump(mode="json")
            cleaned = self.clean_value(dumped)
            return value if cleaned == dumped else cleaned
        return value
