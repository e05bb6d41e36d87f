"""Secret access is an audit event: a secret opened to serve a run is one `secret.used` event per (secret, run),
naming the secret and the run's person, never the value, written with the run's own statement; a secret opened
outside a run (a channel's token, a connection's) is written after its transaction commits, and from a worker
thread when it is opened on an event loop. Only the secret's organization sees it in its audit log."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

import pytest
from django.db import transaction

from agenticos import secret_access, vault
from agenticos.models import AuditEvent
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-live-audited-key-1234567890"


def _agent(org, owner, profile):
    from agents import services

    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Keyed", spec={
        "name": "Keyed", "instructions": "Be brief.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "charts"}]})
    return agent, services.publish_agent(actor=actor, agent=agent)


def _uses():
    return list(AuditEvent.objects.filter(action="secret.used").order_by("id"))


def test_a_run_that_opens_a_secret_leaves_one_event_naming_the_secret_and_the_runs_person(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    agent, version = _agent(org, owner, profile)
    # Two model requests (a tool call, then the answer): one event for the run, with the count.
    fake_openai.queue(Reply.tool_call("create_chart", CHART_ARGS), Reply.text("Done."))
    first = start(org, owner, agent, version, prompt="chart it")
    run_now(first)
    fake_openai.queue(Reply.text("Again."))
    second = start(org, owner, agent, version, prompt="once more")
    run_now(second)  # served by the model this process kept: still a use of the key

    events = _uses()
    assert [e.details["run"] for e in events] == [str(first.pk), str(second.pk)]
    for event in events:
        assert (event.organization_id, event.actor_id) == (org.pk, owner.pk)
        assert (event.target_type, event.target_id, event.target_name) == (
            "secret", str(profile.secret_id), profile.secret.name)
        assert event.details["kind"] == "api_key"
        assert KEY not in json.dumps(event.details) and KEY[-4:] not in event.target_name
    assert events[0].details["uses"] >= 1


def test_only_the_secrets_organization_reads_its_use(org, owner, member, outsider, outsider_org, api_as,
                                                     fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    agent, version = _agent(org, owner, profile)
    fake_openai.queue(Reply.text("Done."))
    run_now(start(org, owner, agent, version, prompt="hi"))

    mine = api_as(owner, org).get("/api/v1/audit?action=secret.used").json()["results"]
    assert [e["target_name"] for e in mine] == [profile.secret.name]
    assert KEY not in json.dumps(mine)
    assert api_as(outsider, outsider_org).get("/api/v1/audit?action=secret.used").json()["results"] == []
    assert api_as(outsider, org).get("/api/v1/audit").status_code == 404
    assert api_as(member, org).get("/api/v1/audit").status_code == 403


def test_a_secret_opened_outside_a_run_is_written_after_its_transaction_commits(org):
    token = factories.secret(org, name="bot token", value="xoxb-bot-token-0123456789")
    with transaction.atomic():
        assert vault.reveal(token) == "xoxb-bot-token-0123456789"
        vault.reveal(token)
        assert _uses() == []  # nothing written inside the caller's transaction
    [event] = _uses()
    assert (event.organization_id, event.target_id, event.target_name) == (org.pk, str(token.pk), "bot token")
    assert event.actor_id is None and event.details == {"kind": "api_key", "uses": 2}


def test_a_use_in_a_rolled_back_transaction_is_kept_for_the_next_write(org):
    token = factories.secret(org, name="first")
    other = factories.secret(org, name="second")
    with pytest.raises(RuntimeError), transaction.atomic():
        vault.reveal(token)
        raise RuntimeError("the work failed after the secret was opened")
    assert _uses() == []
    vault.reveal(other)  # outside a transaction: written at once, with what was waiting
    assert sorted(e.target_name for e in _uses()) == ["first", "second"]


def test_a_secret_opened_on_an_event_loop_is_written_off_the_loop(org):
    token = factories.secret(org, name="stream key")
    writers: list[str] = []
    original = secret_access.flush

    def flushing():
        writers.append(threading.current_thread().name)
        return original()

    async def opened_on_the_loop():
        secret_access.flush = flushing  # type: ignore[assignment]
        try:
            vault.reveal(token)
            loop_thread = threading.current_thread().name
            for _ in range(200):  # bounded wait on the row, not on a clock
                if await asyncio.to_thread(lambda: AuditEvent.objects.filter(action="secret.used").exists()):
                    return loop_thread
                await asyncio.sleep(0.05)
            return loop_thread
        finally:
            secret_access.flush = original  # type: ignore[assignment]

    loop_thread = asyncio.run(opened_on_the_loop())
    [event] = _uses()
    assert event.target_name == "stream key"
    assert writers and loop_thread not in writers


def test_a_use_whose_organization_is_gone_is_logged_not_raised(org, caplog):
    token = factories.secret(org, name="orphan")
    secret_access._buffer[("secret", token.pk)] = secret_access._Use(uuid.uuid4(), "secret", str(token.pk), "orphan",
                                                                    "api_key", token.created_at)
    assert secret_access.flush() == 0
    assert "could not record the use" in caplog.text
    assert _uses() == []


def test_values_sealed_in_their_own_rows_are_audited_when_opened_and_never_show(org):
    """Not only Secret rows: a database connection's DSN, an SSO connection's client secret and a person's MCP
    tokens are opened through the vault too, and each opening is a `secret.used` event naming the row (its own
    type), never the value."""
    from capabilities.db_connections.services import dsn_of
    from capabilities.mcp.models import McpConnection, McpCredential
    from capabilities.mcp.oauth import _open
    from capabilities.models import DatabaseConnection
    from identity.models import OidcConnection
    from identity.services import client_secret_of

    dsn, client_secret, access = "postgres://shop:pw-0123456789@db/shop", "oidc-client-secret-0123456789", "at-0123456789"
    sealed = vault.seal(org.pk, dsn)
    database = DatabaseConnection.objects.create(organization=org, name="shop", key_version=sealed.key_version,
                                                 wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext)
    sealed = vault.seal(org.pk, client_secret)
    sso = OidcConnection.objects.create(organization=org, slug="acme", display_name="Acme SSO",
                                        issuer_url="https://idp.example.com", client_id="agenticos",
                                        key_version=sealed.key_version, wrapped_key=sealed.wrapped_key,
                                        ciphertext=sealed.ciphertext)
    mcp = McpConnection.objects.create(organization=org, name="linear", url="https://mcp.linear.app/mcp")
    sealed = vault.seal(org.pk, json.dumps({"client": None, "tokens": {"access_token": access}}))
    tokens = McpCredential.objects.create(organization=org, connection=mcp, key_version=sealed.key_version,
                                          wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext)

    assert dsn_of(database) == dsn
    assert client_secret_of(sso) == client_secret
    assert _open(tokens).tokens == {"access_token": access}

    events = {e.target_type: e for e in _uses()}
    assert set(events) == {"databaseconnection", "oidcconnection", "mcpcredential"}
    assert (events["databaseconnection"].target_id, events["databaseconnection"].target_name) == (str(database.pk),
                                                                                                 "shop")
    assert events["oidcconnection"].target_name == "Acme SSO"
    assert events["mcpcredential"].target_id == str(tokens.pk)
    assert all(e.organization_id == org.pk and e.details["uses"] == 1 for e in events.values())
    written = json.dumps([[e.target_name, e.details] for e in events.values()])
    assert dsn not in written and client_secret not in written and access not in written
