"""Connections → Remote agents: `/api/v1/remote-agents` (capabilities/remote_agents), against a local A2A agent.

Registration reads the agent card then and there, through netguard (TOOL_ALLOWED_PRIVATE_HOSTS); a key lives in
the vault and is sent as a bearer token, only over https (or to a host the operator lists); the key's value is
in no response, audit row or log line. Outsiders get 404, viewers cannot write.
"""

from __future__ import annotations

import json
import logging

import pytest

from agenticos.models import AuditEvent
from capabilities.remote_agents.models import RemoteAgent
from tests import factories
from tests.capabilities.test_remote_agents_a2a_fake import CARD_PATH, FakeA2AAgent, fake_a2a  # noqa: F401

pytestmark = pytest.mark.django_db

URL = "/api/v1/remote-agents"
KEY = "a2a-partner-key-7f3a9c"


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    # The fake agent listens on 127.0.0.1: the operator's allowance for tools' private hosts lets it be reached.
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def _register(api_as, user, org, **body):
    return api_as(user, org).post(URL, body, format="json")


def _refused_with_nothing_sent(response, fake, org, *, field: str = "card_url") -> None:
    assert response.status_code == 422, response.content
    assert response.json()["error"]["details"]["problems"][0]["field"] == field
    assert fake.seen == []
    assert not RemoteAgent.objects.filter(organization=org).exists()


# ------------------------------------------------------------------ registering


def test_a_builder_registers_a_remote_agent_by_its_card(api_as, org, builder, fake_a2a):
    response = _register(api_as, builder, org, card_url=fake_a2a.card_url)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "Weather Desk" and body["description"] == "Answers questions about the weather."
    assert body["card_url"] == fake_a2a.card_url and body["endpoint_url"] == fake_a2a.rpc_url
    assert body["secret_id"] is None
    # The card was read then (one GET, nothing else), and is kept as it was read.
    assert [(s.method, s.path) for s in fake_a2a.seen] == [("GET", CARD_PATH)]
    row = RemoteAgent.objects.get(pk=body["id"], organization=org)
    assert row.card["name"] == "Weather Desk" and row.created_by == builder
    event = AuditEvent.objects.get(organization=org, action="remote_agent.created")
    assert event.details == {"host": "127.0.0.1", "keyed": False}
    listed = api_as(builder, org).get(URL).json()["results"]
    assert [r["id"] for r in listed] == [body["id"]]


def test_a_chosen_name_wins_over_the_cards_and_a_taken_name_is_a_conflict(api_as, org, builder, fake_a2a):
    assert _register(api_as, builder, org, card_url=fake_a2a.card_url, name="Forecasts").json()["name"] == "Forecasts"
    again = _register(api_as, builder, org, card_url=fake_a2a.card_url, name="Forecasts")
    assert again.status_code == 409
    assert RemoteAgent.objects.filter(organization=org).count() == 1


def test_a_keyed_registration_sends_the_key_and_never_shows_it(api_as, org, builder, settings, caplog):
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]  # the fake has no TLS; the operator lists it
    fake = FakeA2AAgent(key=KEY).start()
    try:
        secret = factories.secret(org, name="partner key", value=KEY)
        with caplog.at_level(logging.DEBUG):
            response = _register(api_as, builder, org, card_url=fake.card_url, secret_id=str(secret.pk))
            listed = api_as(builder, org).get(URL)
            detail = api_as(builder, org).get(f"{URL}/{response.json()['id']}")
    finally:
        fake.stop()
    assert response.status_code == 201, response.content
    assert response.json()["secret_id"] == str(secret.pk)
    assert fake.seen[0].headers["authorization"] == f"Bearer {KEY}"
    for text in (response.content.decode(), listed.content.decode(), detail.content.decode(), caplog.text,
                 json.dumps(list(AuditEvent.objects.filter(organization=org).values_list("details", flat=True)))):
        assert KEY not in text
    row = RemoteAgent.objects.get(organization=org)
    assert KEY not in json.dumps(row.card) and row.secret_id == secret.pk


def test_a_key_is_never_sent_over_plain_http(api_as, org, builder):
    fake = FakeA2AAgent(key=KEY).start()
    try:
        secret = factories.secret(org, value=KEY)
        response = _register(api_as, builder, org, card_url=fake.card_url, secret_id=str(secret.pk))
    finally:
        fake.stop()
    _refused_with_nothing_sent(response, fake, org)
    assert "https" in response.json()["error"]["message"]


def test_a_card_url_carrying_a_user_name_or_password_is_refused_before_anything_is_sent(api_as, org, builder,
                                                                                    fake_a2a):
    card_url = f"http://alice:hunter2-pass@127.0.0.1:{fake_a2a.port}{CARD_PATH}"
    response = _register(api_as, builder, org, card_url=card_url)
    _refused_with_nothing_sent(response, fake_a2a, org)
    assert "hunter2-pass" not in response.content.decode()


def test_a_card_on_the_platforms_own_network_needs_the_operators_allowance(api_as, org, builder, fake_a2a,
                                                                           settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    response = _register(api_as, builder, org, card_url=fake_a2a.card_url)
    _refused_with_nothing_sent(response, fake_a2a, org)
    assert "TOOL_ALLOWED_PRIVATE_HOSTS" in response.json()["error"]["message"]


@pytest.mark.parametrize("card_url", [
    "http://169.254.169.254/.well-known/agent-card.json",
    "http://[::ffff:169.254.169.254]/.well-known/agent-card.json",
    "http://[fd00:ec2::254]/.well-known/agent-card.json",
    "http://10.0.0.7/.well-known/agent-card.json",
    "http://metadata.partner.test/.well-known/agent-card.json",
    "http://intranet.partner.test/.well-known/agent-card.json",
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/",
])
def test_a_hostile_card_address_is_refused(api_as, org, builder, card_url, dns, fake_a2a):
    dns["metadata.partner.test"] = ["169.254.169.254"]
    dns["intranet.partner.test"] = ["192.168.1.20"]
    response = _register(api_as, builder, org, card_url=card_url)
    _refused_with_nothing_sent(response, fake_a2a, org)


def test_a_card_whose_endpoint_points_at_the_metadata_address_is_refused(api_as, org, builder):
    fake = FakeA2AAgent(endpoint_url="http://169.254.169.254/latest/meta-data").start()
    try:
        response = _register(api_as, builder, org, card_url=fake.card_url)
    finally:
        fake.stop()
    assert response.status_code == 422
    assert "endpoint" in response.json()["error"]["message"]
    assert [s.path for s in fake.seen] == [CARD_PATH]  # the card was read; nothing was sent to the endpoint
    assert not RemoteAgent.objects.filter(organization=org).exists()


def test_an_address_that_serves_no_agent_card_is_refused(api_as, org, builder, fake_a2a):
    response = _register(api_as, builder, org, card_url=f"{fake_a2a.base}/no-card-here")
    assert response.status_code == 422 and "404" in response.json()["error"]["message"]
    assert not RemoteAgent.objects.filter(organization=org).exists()


def test_the_list_shows_addresses_without_their_query(api_as, org, builder, fake_a2a):
    signed = f"{fake_a2a.card_url}?sig=signed-credential-123"
    body = _register(api_as, builder, org, card_url=signed).json()
    assert body["card_url"] == fake_a2a.card_url
    listed = api_as(builder, org).get(URL).content.decode()
    assert "signed-credential-123" not in listed
    assert RemoteAgent.objects.get(pk=body["id"]).card_url == signed  # kept whole: it is how the card is read


def test_the_list_answers_with_the_same_queries_whatever_the_row_count(api_as, org, builder):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    secret = factories.secret(org, value=KEY)

    def add(n: int) -> None:
        for i in range(n):
            RemoteAgent.objects.create(organization=org, name=f"Desk {RemoteAgent.objects.count()}-{i}",
                                       card_url="https://desk.partner.test/card", endpoint_url="https://desk.partner.test/rpc",
                                       card={}, secret=secret, created_by=builder)

    client = api_as(builder, org)
    add(1)
    with CaptureQueriesContext(connection) as one:
        assert len(client.get(URL).json()["results"]) == 1
    add(5)
    with CaptureQueriesContext(connection) as six:
        assert len(client.get(URL).json()["results"]) == 6
    assert len(six) == len(one)


# ------------------------------------------------------------------ who may do what


def test_an_outsider_cannot_see_change_or_delete_a_registration(api_as, org, builder, outsider, outsider_org,
                                                                fake_a2a):
    body = _register(api_as, builder, org, card_url=fake_a2a.card_url).json()
    theirs = api_as(outsider, outsider_org)
    assert theirs.get(URL).json()["results"] == []
    assert theirs.get(f"{URL}/{body['id']}").status_code == 404
    assert theirs.patch(f"{URL}/{body['id']}", {"name": "Mine now"}, format="json").status_code == 404
    assert theirs.delete(f"{URL}/{body['id']}").status_code == 404
    # Naming our organization is no way in either.
    assert api_as(outsider, org).get(URL).status_code == 404
    assert RemoteAgent.objects.get(pk=body["id"]).name == "Weather Desk"
    assert len(fake_a2a.seen) == 1  # only our registration's read


def test_an_outsider_cannot_register_with_our_secret(api_as, org, outsider, outsider_org, fake_a2a, settings):
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]
    ours = factories.secret(org, value=KEY)
    response = _register(api_as, outsider, outsider_org, card_url=fake_a2a.card_url, secret_id=str(ours.pk))
    assert response.status_code == 422
    assert response.json()["error"]["details"]["problems"][0]["field"] == "secret_id"
    assert fake_a2a.seen == [] and not RemoteAgent.objects.exists()


def test_a_viewer_reads_but_cannot_register_change_or_delete(api_as, org, builder, viewer, fake_a2a):
    body = _register(api_as, builder, org, card_url=fake_a2a.card_url).json()
    reads = len(fake_a2a.seen)
    theirs = api_as(viewer, org)
    assert [r["id"] for r in theirs.get(URL).json()["results"]] == [body["id"]]
    assert theirs.post(URL, {"card_url": fake_a2a.card_url, "name": "Other"}, format="json").status_code == 403
    assert theirs.patch(f"{URL}/{body['id']}", {"name": "Renamed"}, format="json").status_code == 403
    assert theirs.delete(f"{URL}/{body['id']}").status_code == 403
    assert len(fake_a2a.seen) == reads
    assert list(RemoteAgent.objects.filter(organization=org).values_list("name", flat=True)) == ["Weather Desk"]


def test_only_whoever_registered_it_or_an_editor_of_every_agent_changes_it(api_as, org, builder, admin_user,
                                                                         fake_a2a):
    body = _register(api_as, builder, org, card_url=fake_a2a.card_url).json()
    other_builder = factories.member(org, "builder")
    assert api_as(other_builder, org).patch(f"{URL}/{body['id']}", {"name": "Mine"}, format="json").status_code == 403
    assert api_as(other_builder, org).delete(f"{URL}/{body['id']}").status_code == 403
    renamed = api_as(admin_user, org).patch(f"{URL}/{body['id']}", {"name": "Forecasts"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Forecasts"
    assert api_as(builder, org).delete(f"{URL}/{body['id']}").status_code == 204
    assert not RemoteAgent.objects.filter(organization=org).exists()
    assert AuditEvent.objects.filter(organization=org, action="remote_agent.deleted").count() == 1


def test_an_update_that_moves_the_agent_to_another_host_is_audited(api_as, org, builder, dns):
    dns["desk-one.partner.test"] = ["127.0.0.1"]
    dns["desk-two.partner.test"] = ["127.0.0.1"]
    first = FakeA2AAgent(endpoint_host="desk-one.partner.test").start()
    second = FakeA2AAgent(endpoint_host="desk-two.partner.test", name="Weather Desk II").start()
    try:
        body = _register(api_as, builder, org, card_url=first.card_url).json()
        same = api_as(builder, org).patch(f"{URL}/{body['id']}", {"card_url": first.card_url}, format="json")
        assert same.status_code == 200
        assert not AuditEvent.objects.filter(action="remote_agent.host_changed").exists()
        moved = api_as(builder, org).patch(f"{URL}/{body['id']}", {"card_url": second.card_url}, format="json")
    finally:
        first.stop()
        second.stop()
    assert moved.status_code == 200, moved.content
    assert moved.json()["endpoint_url"] == second.rpc_url
    # The pinned request still names the host it was given (the card's, not the address it resolved to).
    assert second.seen[0].headers["host"] == f"desk-two.partner.test:{second.port}"
    event = AuditEvent.objects.get(organization=org, action="remote_agent.host_changed")
    assert event.details["from"] == "desk-one.partner.test" and event.details["to"] == "desk-two.partner.test"
    assert event.actor == builder


def test_deleting_the_key_deletes_the_registration_that_sends_it(api_as, org, builder, admin_user, settings):
    settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS = ["127.0.0.1"]
    fake = FakeA2AAgent(key=KEY).start()
    try:
        secret = factories.secret(org, value=KEY)
        keyed = _register(api_as, builder, org, card_url=fake.card_url, secret_id=str(secret.pk)).json()
        plain = _register(api_as, builder, org, card_url=fake.card_url, name="Unkeyed", secret_id=None)
    finally:
        fake.stop()
    assert plain.status_code == 422  # the keyed fake refuses the card without its key
    assert api_as(admin_user, org).delete(f"/api/v1/secrets/{secret.pk}").status_code == 204
    assert not RemoteAgent.objects.filter(pk=keyed["id"]).exists()


# ------------------------------------------------------------------ the operator console


def test_the_operator_console_shows_a_registration_without_its_query_or_key(client, org, builder, fake_a2a):
    from django.urls import reverse

    secret = factories.secret(org, name="partner key", value=KEY)
    row = RemoteAgent.objects.create(organization=org, name="Weather Desk", endpoint_url=fake_a2a.rpc_url,
                                     card_url=f"{fake_a2a.card_url}?sig=s3cr3t-sig", card={}, secret=secret,
                                     created_by=builder)
    client.force_login(factories.user(is_staff=True, is_superuser=True))
    listing = client.get(reverse("admin:remote_agents_remoteagent_changelist")).content.decode()
    page = client.get(reverse("admin:remote_agents_remoteagent_change", args=[row.pk])).content.decode()
    assert "Weather Desk" in listing and "partner key" in page and fake_a2a.card_url in page
    for html in (listing, page):
        assert "s3cr3t-sig" not in html and KEY not in html
    assert b'name="_save"' not in client.get(reverse("admin:remote_agents_remoteagent_change", args=[row.pk])).content
