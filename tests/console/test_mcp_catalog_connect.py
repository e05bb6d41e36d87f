"""One-click service connections (capabilities.mcp.catalog, capabilities.mcp.oauth, console/connections.py) against
a local MCP server protected by a local OAuth authorization server (tests.fakes.mcp_oauth): Connect discovers the
server's metadata, registers a client, sends the browser to /authorize with PKCE, the callback exchanges the code;
a run calls the server's tools with the bearer token, refreshes it when it has expired, and Disconnect revokes it.
A service each person connects serves only that person's runs; an organization-wide one only an editor connects.
The fixed catalog URLs are swapped for the fakes' (the entries' own fields are kept)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.utils import timezone

from agenticos.models import AuditEvent
from capabilities import registry
from capabilities.mcp import catalog
from capabilities.mcp.capability import CAPABILITY as MCP
from capabilities.models import McpConnection, McpCredential
from tests.capabilities.helpers import spec
from tests.fakes.mcp_oauth import FakeAuthorizationServer
from tests.fakes.mcp_server import FakeMCPServer
from tests.tools.helpers import run_sync

PAGE = "/connections/"
CALLBACK = "/connections/catalog/callback"


@pytest.fixture
def world(settings, monkeypatch):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.FRONTEND_URL = "http://testserver"  # the Django test client's host: the callback comes back here
    auth = FakeAuthorizationServer().start()
    server = FakeMCPServer(authorization_server=auth).start()
    # linear: each person connects; sentry: the organization does.
    monkeypatch.setitem(catalog.CATALOG, "linear", dataclasses.replace(catalog.CATALOG["linear"], url=server.url))
    monkeypatch.setitem(catalog.CATALOG, "sentry", dataclasses.replace(catalog.CATALOG["sentry"], url=server.url))
    if registry.find("mcp") is None:
        registry.register(MCP)
    yield auth, server
    server.stop()
    auth.stop()
    # A run's token writes (sync_to_async) opened a connection on asgiref's shared thread: close it there, or
    # the test database cannot be dropped at the end.
    asyncio.run(sync_to_async(connections.close_all)())


def connect(client, key: str, auth: FakeAuthorizationServer, *, next_url: str = "/chat/"):
    """Click Connect, then be the browser: follow the redirect to the provider, and its redirect back."""
    started = client.post(f"{PAGE}catalog/{key}/connect", {"next": next_url})
    assert started.status_code == 302, started.content[:400]
    location = started["Location"]
    assert location.startswith(f"{auth.issuer}/authorize?"), location
    with httpx2.Client(trust_env=False) as browser:
        at_provider = browser.get(location)
    assert at_provider.status_code == 302
    back = urlparse(at_provider.headers["location"])
    assert back.path == CALLBACK
    return client.get(f"{back.path}?{back.query}"), parse_qs(urlparse(location).query)


def mcp_binding(connection):
    return {"id": "mcp", "config": {"connections": [{"connection_id": str(connection.pk)}]}}


@pytest.mark.django_db(transaction=True)
def test_a_person_connects_and_their_runs_use_refresh_and_then_lose_the_token(world, client_as, org, member,
                                                                              builder):
    auth, server = world
    client = client_as(member, org)
    done, query = connect(client, "linear", auth, next_url="/chat/c/123")
    assert done.status_code == 302 and done["Location"] == "/chat/c/123"

    # Discovery (RFC 9728 from the 401's challenge, then RFC 8414), registration, PKCE S256, the resource.
    assert ("GET", "/.well-known/oauth-authorization-server") in auth.requests
    assert ("POST", "/register") in auth.requests
    assert auth.registrations[0]["redirect_uris"] == ["http://testserver" + CALLBACK]
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert auth.resources == [server.url]
    assert auth.grants == ["authorization_code"]

    conn = McpConnection.objects.get(organization=org, catalog_key="linear")
    assert conn.name == "linear" and {"add", "echo", "weather"} <= {t["name"] for t in conn.tools}
    cred = McpCredential.objects.get(connection=conn)
    assert cred.user_id == member.pk and cred.connected_at is not None and cred.expires_at is not None
    issued = next(iter(auth.access))
    assert issued.encode() not in bytes(cred.ciphertext)  # sealed, not stored
    assert AuditEvent.objects.filter(organization=org, action="mcp_connection.connected", actor=member).count() == 1

    mine = run_sync(spec(mcp_binding(conn)), [("linear_add", {"a": 2, "b": 3})], org_id=str(org.pk),
                    user_id=member.pk)
    assert mine.returns == [5]
    assert server.seen_auth[-1] == f"Bearer {issued}"
    assert issued not in json.dumps(mine.messages, default=str)

    # Another person has not connected: Check now says so, and the server is left out of their run.
    unchecked = client_as(builder, org).post(f"{PAGE}mcp/{conn.pk}/check")
    assert unchecked.status_code == 422 and "Connect Linear first" in unchecked.content.decode()
    calls_before = len(server.calls)
    theirs = run_sync(spec(mcp_binding(conn)), [], org_id=str(org.pk), user_id=builder.pk)
    assert not any(n.startswith("linear_") for n in theirs.script.offered)
    assert len(server.calls) == calls_before

    # The token's lifetime passes (at the server and on the row): the run refreshes before calling.
    auth.expire_access_tokens()
    McpCredential.objects.filter(pk=cred.pk).update(expires_at=timezone.now() - timedelta(minutes=5))
    sealed_before = bytes(cred.ciphertext)
    again = run_sync(spec(mcp_binding(conn)), [("linear_echo", {"text": "hi"})], org_id=str(org.pk),
                     user_id=member.pk)
    assert again.returns == ["echo: hi"]
    assert auth.grants[-1] == "refresh_token"
    cred.refresh_from_db()
    assert cred.refreshed_at is not None and cred.expires_at > timezone.now()
    fresh = next(iter(auth.access))
    assert fresh != issued and server.seen_auth[-1] == f"Bearer {fresh}"
    # The refreshed tokens are sealed again in the row, never stored in the clear.
    assert bytes(cred.ciphertext) != sealed_before and fresh.encode() not in bytes(cred.ciphertext)
    from agenticos import vault

    assert fresh in vault.open_sealed(org.pk, cred.key_version, bytes(cred.wrapped_key), bytes(cred.ciphertext))

    # Disconnect: the tokens are revoked at the provider and the credential is gone.
    gone = client.post(f"{PAGE}catalog/linear/disconnect")
    assert gone.status_code == 302
    assert ("POST", "/revoke") in auth.requests
    assert not auth.access and auth.live_refresh_tokens == 0
    assert not McpCredential.objects.filter(connection=conn).exists()
    assert AuditEvent.objects.filter(organization=org, action="mcp_connection.disconnected").count() == 1
    after = run_sync(spec(mcp_binding(conn)), [], org_id=str(org.pk), user_id=member.pk)
    assert not any(n.startswith("linear_") for n in after.script.offered)


@pytest.mark.django_db(transaction=True)
def test_an_organization_wide_service_is_connected_by_an_editor_and_serves_everyone(world, client_as, org,
                                                                                     member, builder):
    auth, server = world
    refused = client_as(member, org).post(f"{PAGE}catalog/sentry/connect", {"next": "/chat/"})
    assert refused.status_code == 403
    assert not McpConnection.objects.filter(organization=org).exists() and auth.requests == []

    done, _ = connect(client_as(builder, org), "sentry", auth)
    assert done.status_code == 302
    cred = McpCredential.objects.get(connection__catalog_key="sentry")
    assert cred.user_id is None
    conn = cred.connection
    outcome = run_sync(spec(mcp_binding(conn)), [("sentry_add", {"a": 1, "b": 1})], org_id=str(org.pk),
                       user_id=member.pk)
    assert outcome.returns == [2]

    # Check now lists the tools again with the organization's sign-in.
    checked = client_as(builder, org).post(f"{PAGE}mcp/{conn.pk}/check")
    assert checked.status_code == 302
    conn.refresh_from_db()
    assert conn.checked_at is not None and server.seen_auth[-1].startswith("Bearer at-")

    # A member may not disconnect it either.
    assert client_as(member, org).post(f"{PAGE}catalog/sentry/disconnect").status_code == 403
    assert McpCredential.objects.filter(pk=cred.pk).exists() and ("POST", "/revoke") not in auth.requests


@pytest.mark.django_db(transaction=True)
def test_a_callback_not_started_in_this_browser_exchanges_nothing(world, client_as, org, member, outsider,
                                                                  outsider_org):
    auth, _ = world
    client = client_as(member, org)
    started = client.post(f"{PAGE}catalog/linear/connect", {"next": "/chat/"})
    with httpx2.Client(trust_env=False) as browser:
        back = urlparse(browser.get(started["Location"]).headers["location"])
    # The same person in another browser, and an outsider, bring the provider's code back: neither may use it.
    for stranger in (client_as(member, org), client_as(outsider, outsider_org)):
        refused = stranger.get(f"{back.path}?{back.query}")
        assert refused.status_code == 400
    assert "authorization_code" not in auth.grants
    assert not McpCredential.objects.filter(connected_at__isnull=False).exists()
    # A forged state in the right browser: refused, and the real one still works once.
    assert client.get(f"{CALLBACK}?code=x&state=forged").status_code == 400
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    assert client.get(f"{back.path}?{back.query}").status_code == 400  # a state is used once
    assert auth.grants == ["authorization_code"]


@pytest.mark.django_db(transaction=True)
def test_an_outside_next_address_is_not_followed(world, client_as, org, member):
    auth, _ = world
    done, _ = connect(client_as(member, org), "linear", auth, next_url="https://evil.example/steal")
    assert done.status_code == 302 and done["Location"] == PAGE + "#catalog"


@pytest.mark.django_db
def test_viewers_cannot_connect_and_an_unknown_service_is_404(world, client_as, org, viewer):
    auth, _ = world
    client = client_as(viewer, org)
    assert client.post(f"{PAGE}catalog/linear/connect", {"next": "/chat/"}).status_code == 403
    assert client.post(f"{PAGE}catalog/nosuch/connect", {"next": "/chat/"}).status_code == 404
    assert client.get(f"{PAGE}catalog/linear/connect").status_code == 405
    assert not McpConnection.objects.filter(organization=org).exists() and auth.requests == []


@pytest.mark.django_db
def test_the_catalog_is_listed_with_logos_and_whom_each_service_is_connected_for(client_as, org, member,
                                                                                viewer, settings):
    settings.MCP_OAUTH_CLIENTS = {}
    page = client_as(member, org).get(PAGE)
    body = page.content.decode()
    assert page.status_code == 200
    for key in ("github", "linear", "notion", "atlassian", "sentry", "stripe"):
        assert f'data-service="{key}"' in body and f"mcp/logos/{key}.svg" in body
    assert body.count("data-service-connect") == 3  # the three per-person ones with dynamic registration
    assert "data-service-unavailable" in body  # GitHub wants an OAuth app from the operator
    assert "data-service-connect" not in client_as(viewer, org).get(PAGE).content.decode()
    settings.MCP_OAUTH_CLIENTS = {"github": {"client_id": "gh-app", "client_secret": "gh-secret-123456"}}
    again = client_as(member, org).get(PAGE).content.decode()
    assert again.count("data-service-connect") == 4 and "gh-secret" not in again


@pytest.mark.django_db
def test_a_refused_address_leaves_nothing_behind(world, client_as, org, member, monkeypatch):
    auth, _ = world
    monkeypatch.setitem(catalog.CATALOG, "linear",
                        dataclasses.replace(catalog.CATALOG["linear"], url="http://169.254.169.254/mcp"))
    refused = client_as(member, org).post(f"{PAGE}catalog/linear/connect", {"next": "/chat/"})
    assert refused.status_code == 302 and refused["Location"] == "/chat/"
    assert not McpConnection.objects.filter(organization=org).exists()
    assert not McpCredential.objects.exists() and not AuditEvent.objects.filter(
        action__startswith="mcp_connection").exists()
    assert auth.requests == []


@pytest.mark.django_db(transaction=True)
def test_a_preregistered_oauth_app_is_used_without_registering(world, client_as, org, member, settings,
                                                               monkeypatch):
    auth, server = world
    monkeypatch.setitem(catalog.CATALOG, "github", dataclasses.replace(catalog.CATALOG["github"], url=server.url))
    secret = "gh-app-secret-0a1b2c3d"  # noqa: S105 (a test credential)
    settings.MCP_OAUTH_CLIENTS = {"github": {"client_id": "gh-app", "client_secret": secret}}
    auth.clients["gh-app"] = {"client_id": "gh-app", "client_secret": secret, "token_endpoint_auth_method":
                              "client_secret_post", "redirect_uris": ["http://testserver" + CALLBACK]}
    done, query = connect(client_as(member, org), "github", auth)
    assert done.status_code == 302
    assert query["client_id"] == ["gh-app"] and ("POST", "/register") not in auth.requests
    assert auth.grants == ["authorization_code"]
    cred = McpCredential.objects.get(connection__catalog_key="github", user=member)
    assert secret.encode() not in bytes(cred.ciphertext)
