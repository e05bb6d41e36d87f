"""A refused form's errors in a builder's words (issue 44 §8): never the internal field path
("capabilities.0.id", "model_settings.temperature", "auth.header_name"), each message once — those the page
already shows at their field are left out of the list at the top."""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.translation import gettext as _

from agenticos.strings import digits_only

register = template.Library()


def field_words() -> dict[str, str]:
    """The label a person reads on the console's forms, for the field names their services report."""
    return {
        "name": _("Name"), "alias": _("Alias"), "description": _("Description"), "usage_notes": _("Usage notes"),
        "tags": _("Tags"), "method": _("Method"), "url": _("URL"), "timeout_secs": _("Time limit (seconds)"),
        "parameters": _("Parameters"), "auth": _("Authentication"), "credential_id": _("Credential from the vault"),
        "secret_id": _("Key"), "card_url": _("Agent card URL"), "platform": _("Platform"), "token": _("Bot token"),
        "signing_secret": _("Signing secret"), "app_token": _("App-level token"),
        "webhook_secret": _("Outgoing-webhook token"), "api_base_url": _("Server address"),
        "transport": _("How messages arrive"), "extra_prompt": _("Extra prompt"), "environment": _("Environment served"),
        "workspace_scope": _("Who shares the workspace"), "channel_tools_limit": _("Rows a lookup returns"),
        "footer_mode": _("Say what a turn cost"), "footer_threshold_percent": _("Threshold, in percent"),
        "footer_every_n": _("Every N replies"), "model_profile_id": _("Model"), "prompt": _("Message"),
        "args": _("Arguments"), "provider": _("Provider"), "kit": _("Kit"), "email": _("Email"), "role": _("Role"),
    }


# Pydantic's terse defaults, said as a sentence; anything else is the service's own sentence.
PLAIN_MESSAGES = {
    "Field required": "This is required.",
    "String should have at least 1 character": "This is required.",
    "Input should be a valid URL, relative URL without a base": "Enter a full web address (https://…).",
    "Input should be a valid integer, unable to parse string as an integer": "Enter a whole number.",
    "Input should be a valid number, unable to parse string as a number": "Enter a number.",
}


@register.filter(name="plain_error")
def plain_message(message: str) -> str:
    plain = PLAIN_MESSAGES.get(message.strip())
    return _(plain) if plain else message


def label_for(path: str) -> str:
    """The person's word for a reported field, or "" (the message then stands alone): "auth.header_name" is
    the authentication's, "parameters.0.name" a parameter's — the top-level field names the part of the form."""
    if path in ("all", "", "definition"):
        return ""
    return field_words().get(path.split(".", 1)[0], "")


@register.simple_tag(takes_context=True)
def form_error_lines(context: template.Context, errors: dict[str, Any] | None) -> list[tuple[str, str]]:
    """error_lines for the partial a page includes, with that page's `errors_at_fields` when it sets one."""
    return error_lines(errors, str(context.get("errors_at_fields") or ""))


def error_lines(errors: dict[str, Any] | None, shown_at_fields: str = "") -> list[tuple[str, str]]:
    """The lines of a form's error notice: "Label: message" or the message alone; none for the fields listed
    (comma-separated) in `shown_at_fields`, which the page draws at the field itself; no line twice. Each line
    comes with its field path, kept for the page's markup (data-error-field), never shown."""
    at_field = {f.strip() for f in (shown_at_fields or "").split(",") if f.strip()}
    lines: list[tuple[str, str]] = []
    for path, message in (errors or {}).items():
        if path in at_field:
            continue
        label = label_for(str(path))
        text = plain_message(str(message))
        line = f"{label}: {text}" if label and not text.startswith(label) else text
        if line not in (shown for _path, shown in lines):
            lines.append((str(path), line))
    return lines


@register.filter
def yaml_place(path: str) -> str:
    """Where in a person's own YAML file a problem is, in words ("capabilities.0.id" → "capabilities, item 1,
    id"): the file is theirs, so its keys are their words, but a zero-based index is not."""
    if path in ("all", "", "yaml"):
        return ""
    dotted = re.sub(r"\[(\d+)\]", r".\1", str(path).removeprefix("spec."))  # "capabilities[0].id" too
    parts = [_("item %(n)s") % {"n": int(p) + 1} if digits_only(p) else p for p in dotted.split(".") if p]
    return ", ".join(parts)
