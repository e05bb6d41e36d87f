"""The catalog of MCP servers people connect with one click (spec "propose_setup": a connection that names its
server by a catalog key is that service's card — its logo and its Connect button).

Each entry is a service's own official remote MCP server. Its URL is fixed here, never set by a tenant, and
every request to it (and to the authorization server its metadata names) still goes through the outbound
guard (`netguard.PinnedTransport`). `auth` says who signs in:

- `person`: each person connects their own account; a run uses the credential of the person it acts for, and
  a run for someone who has not connected leaves the server out (the agent can offer the card instead);
- `organization`: an editor connects once for everyone (a shared service account).

`registration` says how AgenticOS becomes a client of the service's authorization server: `dynamic`
(RFC 7591 dynamic client registration, what the MCP authorization spec asks servers to offer) or
`preregistered` (the service wants an OAuth app registered by hand: the operator puts its id and secret in
MCP_OAUTH_CLIENTS, and until then the entry is listed as unavailable).

Logos are simple originals (a letter mark on the service's colour) in static/mcp/logos/, not the services' own
artwork.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.conf import settings


@dataclass(frozen=True)
class CatalogEntry:
    key: str  # also the connection's name: its tools arrive as <key>_<tool>
    name: str
    description: str
    url: str
    auth: Literal["person", "organization"]
    registration: Literal["dynamic", "preregistered"] = "dynamic"
    transport: str = "streamable_http"
    # Scopes to ask for; empty = what the server's metadata says (the mcp client's scope selection).
    scope: str = ""

    @property
    def logo(self) -> str:
        """The logo's path under STATIC_URL."""
        return f"mcp/logos/{self.key}.svg"

    def preregistered_client(self) -> dict[str, str] | None:
        """The operator's OAuth app for a `preregistered` entry ({client_id, client_secret}), if configured."""
        client = (getattr(settings, "MCP_OAUTH_CLIENTS", {}) or {}).get(self.key)
        return dict(client) if isinstance(client, dict) and client.get("client_id") else None

    @property
    def available(self) -> bool:
        return self.registration == "dynamic" or self.preregistered_client() is not None


CATALOG: dict[str, CatalogEntry] = {e.key: e for e in (
    CatalogEntry("github", "GitHub", "Repositories, issues and pull requests.",
                 "https://api.githubcopilot.com/mcp/", auth="person", registration="preregistered"),
    CatalogEntry("linear", "Linear", "Issues, projects and cycles.", "https://mcp.linear.app/mcp", auth="person"),
    CatalogEntry("notion", "Notion", "Pages and databases of your workspace.", "https://mcp.notion.com/mcp",
                 auth="person"),
    CatalogEntry("atlassian", "Atlassian", "Jira issues and Confluence pages.", "https://mcp.atlassian.com/v1/mcp",
                 auth="person"),
    CatalogEntry("sentry", "Sentry", "Errors, issues and releases of your projects.", "https://mcp.sentry.dev/mcp",
                 auth="organization"),
    CatalogEntry("stripe", "Stripe", "Customers, payments and invoices of your account.", "https://mcp.stripe.com",
                 auth="organization"),
)}


def get(key: str) -> CatalogEntry | None:
    return CATALOG.get(key)


def entries() -> list[CatalogEntry]:
    return sorted(CATALOG.values(), key=lambda e: e.name.lower())
