"""Connections → Remote agents in the console (console/remote_agents.py over the registration services),
against a local A2A agent (the a2a-sdk server under uvicorn): a builder registers one by its card URL, with a
vault secret as its key, reads it again and deletes it; addresses are shown without query or userinfo and a key
only by its secret's name; a refused form gives back no credential; viewers see and never change, a builder who
did not register it sees it read-only, outsiders get 404."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from capabilities.remote_agents.models import RemoteAgent
from tests import factories
from tests.capabilities.test_remote_agents_a2a_fake import CARD_PATH, FakeA2AAgent, fake_a2a  # noqa: F401

pytestmark = pytest.mark.django_db

LIST = "/remote-agents/"
KEY = "a2a-partner-key-console-51c2"


@pytest.fixture(autouse=True)
def _remote_agent_settings(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake agent listens there


def register(client, **data):
    return client.post(LIST, {"name": "", "secret_id": "", **data})


def detail(row) -> str:
    return f"{LIST}{row.pk}/"


def registration(org, builder, fake, **extra) -> RemoteAgent:
    defaults = {"name": "Weather Desk", "card_url": fake.card_url, "endpoint_url": fake.rpc_url, "card": {}}
    return RemoteAgent.objects.create(organization=org, created_by=builder, **{**defaults, **extra})


# ------------------------------------------------------------------ registering


def test_a_builder_registers_a_remote_agent_by_its_card_and_sees_it_listed(client_as, org, builder, fake_a2a):
    client = client_as(builder, org)
    assert b"data-register" in client.get(LIST).content

    response = register(client, card_url=fake_a2a.card_url)

    row = RemoteAgent.objects.get(organization=org)
    assert response.status_code == 302 and response["Location"] == detail(row)
    assert row.name == "Weather Desk" and row.endpoint_url == fake_a2a.rpc_url and row.created_by == builder
    assert [(s.method, s.path) for s in fake_a2a.seen] == [("GET", CARD_PATH)]
    event = AuditEvent.objects.get(organization=org, action="remote_agent.created")
    assert event.actor == builder and event.details == {"host": "127.0.0.1", "keyed": False}
    listed = client.get(LIST).content.decode()
    assert f'data-remote-agent="{row.pk}"' in listed and fake_a2a.rpc_url in listed
    page = client.get(detail(row)).content.decode()
    assert "Answers questions about the weather." in page and "data-delete" in page and "data-update" in page


def test_a_keyed_registration_sends_the_vault_key_and_no_page_shows_it(client_as, org, builder, settings):
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]  # the fake has no TLS; the operator lists it
    secret = factories.secret(org, name="partner key", value=KEY)
    client = client_as(builder, org)
    fake = FakeA2AAgent(key=KEY).start()
    try:
        form = client.get(LIST).content.decode()
        response = register(client, card_url=fake.card_url, name="Forecasts", secret_id=str(secret.pk))
    finally:
        fake.stop()
    assert f'<option value="{secret.pk}"' in form and "partner key" in form
    assert response.status_code == 302, response.content.decode()[:2000]
    row = RemoteAgent.objects.get(organization=org)
    assert row.name == "Forecasts" and row.secret_id == secret.pk
    assert fake.seen[0].headers["authorization"] == f"Bearer {KEY}"
    for page in (client.get(LIST), client.get(detail(row))):
        html = page.content.decode()
        assert "partner key" in html and f'data-key="{secret.pk}"' in html
        assert KEY not in html


def test_a_refused_address_gives_back_no_credential_and_sends_nothing(client_as, org, builder, fake_a2a):
    client = client_as(builder, org)
    card_url = f"http://alice:hunter2-pass@127.0.0.1:{fake_a2a.port}{CARD_PATH}?sig=signed-credential-9"

    response = register(client, card_url=card_url, name="Desk")

    assert response.status_code == 422
    html = response.content.decode()
    assert 'data-error-field="card_url"' in html and "user name or password" in html
    assert "hunter2-pass" not in html and "alice" not in html and "signed-credential-9" not in html
    assert f'value="http://127.0.0.1:{fake_a2a.port}{CARD_PATH}"' in html and 'value="Desk"' in html
    assert fake_a2a.seen == [] and not RemoteAgent.objects.exists()


def test_a_key_is_never_sent_over_plain_http_and_a_taken_name_is_refused(client_as, org, builder, fake_a2a):
    client = client_as(builder, org)
    secret = factories.secret(org, value=KEY)
    keyed = register(client, card_url=fake_a2a.card_url, secret_id=str(secret.pk))
    assert keyed.status_code == 422 and "https" in keyed.content.decode()
    assert fake_a2a.seen == []
    assert register(client, card_url=fake_a2a.card_url).status_code == 302
    taken = register(client, card_url=fake_a2a.card_url)
    assert taken.status_code == 422 and 'data-error-field="name"' in taken.content.decode()
    assert RemoteAgent.objects.filter(organization=org).count() == 1


def test_a_card_on_the_platforms_own_network_is_refused_without_the_operators_allowance(client_as, org, builder,
                                                                                       fake_a2a, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    response = register(client_as(builder, org), card_url=fake_a2a.card_url)
    assert response.status_code == 422 and "TOOL_ALLOWED_PRIVATE_HOSTS" in response.content.decode()
    assert fake_a2a.seen == [] and not RemoteAgent.objects.exists()


def test_addresses_are_listed_without_their_query(client_as, org, builder, fake_a2a):
    row = registration(org, builder, fake_a2a, card_url=f"{fake_a2a.card_url}?sig=s3cr3t-sig",
                       endpoint_url=f"{fake_a2a.rpc_url}?token=endpoint-s3cr3t")
    client = client_as(builder, org)
    for html in (client.get(LIST).content.decode(), client.get(detail(row)).content.decode()):
        assert fake_a2a.card_url in html and fake_a2a.rpc_url in html
        assert "s3cr3t-sig" not in html and "endpoint-s3cr3t" not in html


# ------------------------------------------------------------------ reading again and deleting


def test_reading_the_card_again_at_another_host_is_audited(client_as, org, builder, dns):
    dns["desk-one.partner.test"] = ["127.0.0.1"]
    dns["desk-two.partner.test"] = ["127.0.0.1"]
    first = FakeA2AAgent(endpoint_host="desk-one.partner.test").start()
    second = FakeA2AAgent(endpoint_host="desk-two.partner.test", name="Weather Desk II").start()
    client = client_as(builder, org)
    try:
        assert register(client, card_url=first.card_url).status_code == 302
        row = RemoteAgent.objects.get(organization=org)
        again = client.post(detail(row), {"card_url": "", "name": "", "secret_id": "keep"})
        assert again.status_code == 302
        assert [s.path for s in first.seen] == [CARD_PATH, CARD_PATH]
        assert not AuditEvent.objects.filter(action="remote_agent.host_changed").exists()
        moved = client.post(detail(row), {"card_url": second.card_url, "name": "", "secret_id": "keep"})
    finally:
        first.stop()
        second.stop()
    assert moved.status_code == 302
    row.refresh_from_db()
    assert row.endpoint_url == second.rpc_url and row.name == "Weather Desk"
    event = AuditEvent.objects.get(organization=org, action="remote_agent.host_changed")
    assert (event.details["from"], event.details["to"]) == ("desk-one.partner.test", "desk-two.partner.test")
    assert event.actor == builder


def test_a_builder_deletes_their_registration_and_it_is_audited(client_as, org, builder, fake_a2a):
    row = registration(org, builder, fake_a2a)
    client = client_as(builder, org)
    response = client.post(f"{detail(row)}delete")
    assert response.status_code == 302 and response["Location"] == LIST
    assert not RemoteAgent.objects.filter(pk=row.pk).exists()
    assert AuditEvent.objects.filter(organization=org, action="remote_agent.deleted", actor=builder).count() == 1
    assert client.get(f"{detail(row)}delete").status_code == 405


# ------------------------------------------------------------------ who may do what


def test_a_viewer_sees_the_registrations_and_changes_nothing(client_as, org, builder, viewer, fake_a2a):
    row = registration(org, builder, fake_a2a)
    client = client_as(viewer, org)
    listed = client.get(LIST)
    assert listed.status_code == 200
    html = listed.content.decode()
    assert f'data-remote-agent="{row.pk}"' in html and "data-read-only" in html and "data-register" not in html
    page = client.get(detail(row)).content.decode()
    assert "data-read-only" in page and "data-delete" not in page and "data-update" not in page

    assert register(client, card_url=fake_a2a.card_url, name="Other").status_code == 403
    assert client.post(detail(row), {"name": "Renamed", "secret_id": "keep"}).status_code == 403
    assert client.post(f"{detail(row)}delete").status_code == 403
    assert fake_a2a.seen == []
    assert list(RemoteAgent.objects.values_list("name", flat=True)) == ["Weather Desk"]


def test_a_builder_who_did_not_register_it_reads_it_and_an_admin_changes_it(client_as, org, builder, admin_user,
                                                                            fake_a2a):
    row = registration(org, builder, fake_a2a)
    other = client_as(factories.member(org, "builder"), org)
    page = other.get(detail(row)).content.decode()
    assert "data-read-only" in page and "data-delete" not in page
    assert other.post(detail(row), {"name": "Mine", "secret_id": "keep"}).status_code == 403
    assert other.post(f"{detail(row)}delete").status_code == 403
    assert RemoteAgent.objects.filter(pk=row.pk).exists()

    admin = client_as(admin_user, org)
    assert admin.post(detail(row), {"name": "Forecasts", "secret_id": "keep"}).status_code == 302
    row.refresh_from_db()
    assert row.name == "Forecasts"
    assert admin.post(f"{detail(row)}delete").status_code == 302
    assert not RemoteAgent.objects.filter(pk=row.pk).exists()


def test_an_outsider_gets_404_and_never_sees_our_registrations_or_secrets(client_as, org, builder, outsider,
                                                                          outsider_org, fake_a2a):
    row = registration(org, builder, fake_a2a)
    ours = factories.secret(org, name="our partner key", value=KEY)
    client = client_as(outsider, outsider_org)
    listed = client.get(LIST).content.decode()
    assert str(row.pk) not in listed and "our partner key" not in listed and str(ours.pk) not in listed
    assert client.get(detail(row)).status_code == 404
    assert client.post(detail(row), {"name": "Mine now", "secret_id": "keep"}).status_code == 404
    assert client.post(f"{detail(row)}delete").status_code == 404
    # Our secret is no key of theirs either.
    refused = register(client, card_url=fake_a2a.card_url, secret_id=str(ours.pk))
    assert refused.status_code == 422 and 'data-error-field="secret_id"' in refused.content.decode()
    assert fake_a2a.seen == []
    assert list(RemoteAgent.objects.values_list("organization_id", "name")) == [(org.pk, "Weather Desk")]


def test_signed_out_the_screen_asks_to_sign_in(client):
    response = client.get(LIST)
    assert response.status_code == 302 and "login" in response["Location"]
