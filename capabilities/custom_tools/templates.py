"""Preconfigured definitions for common services. Installing copies one into the account; the user then
adds their own credential and may edit any field. No special behaviour at runtime once installed."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agenticos import audit
from agenticos.errors import NotFound
from agenticos.tenancy import Actor

TEMPLATES: dict[str, dict[str, Any]] = {
    "stripe_list_customers": {
        "provider": "Stripe",
        "definition": {
            "name": "Stripe: list customers", "alias": "stripe_list_customers",
            "description": "Lists Stripe customers, newest first, optionally filtered by email.",
            "usage_notes": "Use to find a customer id before other Stripe calls. Paginate with starting_after.",
            "method": "GET", "url": "https://api.stripe.com/v1/customers",
            "parameters": [
                {"name": "email", "location": "query", "type": "string", "description": "Exact email to match."},
                {"name": "limit", "location": "query", "type": "integer", "description": "1-100, default 10."},
                {"name": "starting_after", "location": "query", "type": "string",
                 "description": "Customer id to continue after (pagination)."},
            ],
            "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
            "tags": ["stripe", "billing"],
        },
        "warnings": [{"level": "info", "text": "Results are paginated: pass starting_after with the last id."}],
    },
    "hubspot_search_contacts": {
        "provider": "HubSpot",
        "definition": {
            "name": "HubSpot: search contacts", "alias": "hubspot_search_contacts",
            "description": "Searches HubSpot CRM contacts by a free-text query.",
            "usage_notes": "Returns id and properties; use the id with the other HubSpot contact tools.",
            "method": "POST", "url": "https://api.hubapi.com/crm/v3/objects/contacts/search",
            "parameters": [
                {"name": "query", "location": "body", "type": "string", "required": True,
                 "description": "Text to search for (name, email, company)."},
                {"name": "limit", "location": "body", "type": "integer", "description": "Up to 100."},
            ],
            "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
            "tags": ["hubspot", "crm"],
        },
        "warnings": [],
    },
    "github_create_issue": {
        "provider": "GitHub",
        "definition": {
            "name": "GitHub: create issue", "alias": "github_create_issue",
            "description": "Opens an issue in a GitHub repository.",
            "usage_notes": "Confirm title and body with the person first; this writes to the repository.",
            "method": "POST", "url": "https://api.github.com/repos/{owner}/{repo}/issues",
            "parameters": [
                {"name": "owner", "location": "path", "type": "string", "required": True},
                {"name": "repo", "location": "path", "type": "string", "required": True},
                {"name": "title", "location": "body", "type": "string", "required": True},
                {"name": "body", "location": "body", "type": "string"},
                {"name": "Accept", "location": "header", "mode": "fixed", "value": "application/vnd.github+json"},
            ],
            "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
            "tags": ["github", "issues"],
        },
        "warnings": [],
    },
    "slack_post_message": {
        "provider": "Slack",
        "definition": {
            "name": "Slack: post a message", "alias": "slack_post_message",
            "description": "Posts a message to a Slack channel (chat.postMessage).",
            "usage_notes": "channel is an id (C…) or a name the bot is a member of.",
            "method": "POST", "url": "https://slack.com/api/chat.postMessage",
            "parameters": [
                {"name": "channel", "location": "body", "type": "string", "required": True},
                {"name": "text", "location": "body", "type": "string", "required": True},
            ],
            "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
            "tags": ["slack", "messaging"],
        },
        "warnings": [{"level": "warning", "text": "Slack answers HTTP 200 with ok=false on errors: read `ok`."}],
    },
    "json_webhook": {
        "provider": "Webhook",
        "definition": {
            "name": "Send a JSON webhook", "alias": "send_webhook",
            "description": "Sends an event as JSON to a webhook URL you configure.",
            "usage_notes": "Edit the URL to your endpoint before use.",
            "method": "POST", "url": "https://example.com/webhook",
            "parameters": [
                {"name": "event", "location": "body", "type": "string", "required": True},
                {"name": "message", "location": "body", "type": "string"},
            ],
            "auth": {"family": "hmac", "signature_header": "X-Signature", "timestamp_header": "X-Timestamp"},
            "tags": ["webhook"],
        },
        "warnings": [],
    },
    "github_list_issues": {
        "provider": "GitHub",
        "definition": {
            "name": "GitHub: list issues", "alias": "github_list_issues",
            "description": "Lists open issues of a GitHub repository.",
            "usage_notes": "Paginated by `page` (30 per page).",
            "method": "GET", "url": "https://api.github.com/repos/{owner}/{repo}/issues",
            "parameters": [
                {"name": "owner", "location": "path", "type": "string", "required": True},
                {"name": "repo", "location": "path", "type": "string", "required": True},
                {"name": "state", "location": "query", "type": "string", "enum": ["open", "closed", "all"]},
                {"name": "page", "location": "query", "type": "integer"},
            ],
            "auth": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
            "tags": ["github", "issues"],
        },
        "warnings": [],
    },
}


def catalog() -> list[dict[str, Any]]:
    return [{"key": key, "provider": t["provider"], "name": t["definition"]["name"],
             "alias": t["definition"]["alias"], "description": t["definition"]["description"],
             "method": t["definition"]["method"], "url": t["definition"]["url"],
             "auth_family": t["definition"]["auth"]["family"]} for key, t in TEMPLATES.items()]


def install(*, actor: Actor, key: str, alias: str | None = None, credential_id: Any = None):
    from capabilities.custom_tools.services import create_tool

    template = TEMPLATES.get(key)
    if template is None:
        raise NotFound("No such tool template.")
    definition = dict(template["definition"])
    if alias:
        definition["alias"] = alias
    with transaction.atomic():
        tool = create_tool(actor=actor, definition=definition, credential_id=credential_id,
                           warnings=template["warnings"], template_key=key)
        audit.record(actor=actor.user, organization=actor.organization, action="tool_template.installed",
                     target=tool, details={"template": key})
    return tool
