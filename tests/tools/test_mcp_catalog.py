"""The MCP catalog (capabilities.mcp.catalog): its entries, propose_setup's connection cards that name one, and
/api/v1/mcp-catalog (the listing; DELETE …/connection disconnects) for every role and an outsider. The OAuth
flow itself runs against local fakes in tests/console/test_mcp_catalog_connect.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from agenticos import vault
from agenticos.models import AuditEvent
from capabilities.follow_ups.capability import SetupCard, draw
from capabilities.mcp import catalog
from capabilities.mcp.services import NAME_RE
from capabilities.models import McpConnection, McpCredential

pytestmark = pytest.mark.urls("tests.tools.urls")
ACCESS = "at-sealed-access-token-41"


def test_every_entry_is_an_https_server_with_a_logo_and_a_usable_name():
    static_root = Path(django_settings.BASE_DIR) / "static"
    assert {"github", "linear", "notion", "atlassian", "sentry", "stripe"} <= set(catalog.CATALOG)
    for entry in catalog.entries():
        assert entry.url.startswith("https://"), entry.key
        assert NAME_RE.match(entry.key), entry.key
        assert entry.auth in ("person", "organization")
        logo = (static_root / entry.logo).read_text()
        assert logo.startswith("<svg") and entry.name in logo


def test_a_connection_card_naming_a_catalog_service_carries_it_and_an_unknown_key_is_dropped(settings):
    settings.MCP_OAUTH_CLIENTS = {}
    cards = draw([SetupCard(kind="connection", title="Track issues", server_key="linear"),
                           SetupCard(kind="connection", title="Our CRM", server_key="crm"),
                           SetupCard(kind="connection", title="Code", server_key="github")])["cards"]
    assert cards[0]["service"] == {"key": "linear", "name": "Linear", "logo": "/static/mcp/logos/linear.svg"}
    assert cards[1]["server_key"] == "" and "service" not in cards[1]
    assert cards[2]["server_key"] == "" and "service" not in cards[2]  # GitHub has no OAuth app configured
    settings.MCP_OAUTH_CLIENTS = {"github": {"client_id": "gh", "client_secret": "s"}}
    (card,) = draw([SetupCard(kind="connection", title="Code", server_key="github")])["cards"]
    assert card["service"]["key"] == "github"


def _credential(org, user=None, key="linear"):
    entry = catalog.CATALOG[key]
    conn, _ = McpConnection.objects.get_or_create(organization=org, name=key,
                                                  defaults={"url": entry.url, "catalog_key": key})
    sealed = vault.seal(org.pk, json.dumps({"client": {"client_id": "c1", "redirect_uris": ["https://x/cb"]},
                                            "tokens": {"access_token": ACCESS, "token_type": "Bearer"}}))
    return McpCredential.objects.create(organization=org, connection=conn, user=user, key_version=sealed.key_version,
                                        wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext,
                                        connected_at=timezone.now())


@pytest.mark.django_db
def test_the_listing_says_whom_each_service_is_connected_for_and_never_shows_a_token(api_as, org, member,
                                                                                    builder, viewer):
    _credential(org, member, "linear")
    _credential(org, None, "sentry")
    mine = {r["key"]: r for r in api_as(member, org).get("/api/v1/mcp-catalog").json()["results"]}
    assert mine["linear"]["connected"] and mine["sentry"]["connected"]
    assert not mine["notion"]["connected"] and mine["notion"]["connection_id"] is None
    assert mine["linear"]["can_connect"] and not mine["sentry"]["can_connect"]  # sentry: an editor's
    theirs = {r["key"]: r for r in api_as(builder, org).get("/api/v1/mcp-catalog").json()["results"]}
    assert not theirs["linear"]["connected"] and theirs["sentry"]["connected"] and theirs["sentry"]["can_connect"]
    seen = api_as(viewer, org).get("/api/v1/mcp-catalog")
    assert seen.status_code == 200 and not any(r["can_connect"] for r in seen.json()["results"])
    assert ACCESS not in seen.content.decode()


@pytest.mark.django_db
def test_the_catalog_lists_in_two_queries(api_as, org, member, django_assert_max_num_queries):
    for key in ("linear", "notion", "atlassian"):
        _credential(org, member, key)
    client = api_as(member, org)
    with django_assert_max_num_queries(8):  # auth, membership, role … plus the listing's two
        client.get("/api/v1/mcp-catalog")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get("/api/v1/mcp-catalog")
    listing = [q for q in captured.captured_queries if "capabilities_mcp" in q["sql"]]
    assert len(listing) == 2


@pytest.mark.django_db
def test_a_person_disconnects_their_own_account_only(api_as, org, member, builder):
    own = _credential(org, member, "linear")
    other = _credential(org, builder, "linear")
    assert api_as(member, org).delete("/api/v1/mcp-catalog/linear/connection").status_code == 204
    assert not McpCredential.objects.filter(pk=own.pk).exists()
    assert McpCredential.objects.filter(pk=other.pk).exists()
    assert AuditEvent.objects.filter(organization=org, action="mcp_connection.disconnected").count() == 1
    again = api_as(member, org).delete("/api/v1/mcp-catalog/linear/connection")
    assert again.status_code == 404 and again.json()["error"]["code"]


@pytest.mark.django_db
def test_weaker_roles_and_outsiders_cannot_disconnect(api_as, org, member, viewer, outsider, outsider_org):
    shared = _credential(org, None, "sentry")
    assert api_as(member, org).delete("/api/v1/mcp-catalog/sentry/connection").status_code == 403
    assert api_as(viewer, org).delete("/api/v1/mcp-catalog/sentry/connection").status_code == 403
    # An outsider in their own organization has nothing to disconnect; naming ours, they are not let in.
    assert api_as(outsider, outsider_org).delete("/api/v1/mcp-catalog/sentry/connection").status_code == 404
    assert api_as(outsider, org).delete("/api/v1/mcp-catalog/sentry/connection").status_code == 404
    outside = api_as(outsider, outsider_org).get("/api/v1/mcp-catalog").json()["results"]
    assert not any(r["connected"] or r["connection_id"] for r in outside)
    assert McpCredential.objects.filter(pk=shared.pk).exists()
    assert not AuditEvent.objects.filter(action="mcp_connection.disconnected").exists()
    assert api_as(member, org).delete("/api/v1/mcp-catalog/nosuch/connection").status_code == 404


def _instructions(org, user, *, surface: str) -> str:
    from tests.capabilities.helpers import Script, agent_for, deps, spec

    run_deps = deps(organization_id=str(org.pk), user_id=user.pk, surface=surface, can_ask_user=surface == "web")
    script = Script([])
    agent_for(spec({"id": "follow_ups"}), run_deps, script).run_sync("go", deps=run_deps)
    return script.requests[0].instructions or ""


@pytest.mark.django_db
def test_web_chat_tells_the_agent_which_services_the_person_has_not_connected(org, member, builder, outsider_org,
                                                                             settings, django_assert_max_num_queries):
    """Spec: the agent "offers a connection card whenever a request needs a service the person has not connected"
    — it is told which those are: the person's own sign-ins and the organization's, never a colleague's or another
    organization's; a service the deployment cannot connect (GitHub without its OAuth app) is not offered."""
    settings.MCP_OAUTH_CLIENTS = {}
    _credential(org, member, "linear")  # the person's own
    _credential(org, None, "sentry")  # the organization's
    _credential(org, builder, "notion")  # a colleague's: not the person's
    _credential(outsider_org, None, "stripe")  # another organization's

    said = _instructions(org, member, surface="web")

    assert "Linear (server_key linear): Issues, projects and cycles. Connected." in said
    assert "Sentry (server_key sentry): Errors, issues and releases of your projects. Connected." in said
    assert "Notion (server_key notion): Pages and databases of your workspace. Not connected." in said
    assert "Stripe (server_key stripe): Customers, payments and invoices of your account. Not connected." in said
    assert "offer its card with propose_setup (kind connection, its server_key)" in said
    assert "GitHub" not in said
    assert "Linear (server_key linear): Issues, projects and cycles. Not connected." in _instructions(
        org, builder, surface="web")
    from capabilities.mcp.services import catalog_connected

    with django_assert_max_num_queries(1):
        assert catalog_connected(org.pk, member.pk) == {"linear", "sentry"}


@pytest.mark.django_db
@pytest.mark.parametrize("surface", ["api", "slack", "embed", "schedule"])
def test_where_no_card_is_drawn_the_services_are_not_listed(org, member, surface):
    assert "Services the person can connect" not in _instructions(org, member, surface=surface)
