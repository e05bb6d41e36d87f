"""The audit stream as syslog: an owner points it at `syslog+tls://host:port` (through the outbound guard); each event
goes as one RFC 5424 message, octet-counted over TLS, with its id and an HMAC signature in its structured data, in
id order, only this organization's; while the collector is down the backlog waits and then goes; a collector whose
certificate is not trusted gets nothing; plain TCP only to a host the operator allowed; hostile hosts refused."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos import audit
from agenticos.models import AuditEvent
from identity import audit_stream, syslog
from identity.models import AuditStream
from tests import factories
from tests.fakes.syslog_receiver import SyslogReceiver
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
PAGE = "/settings/audit/stream/"


@pytest.fixture(scope="module")
def tls_server():
    server = SyslogReceiver(tls=True).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tcp_server():
    server = SyslogReceiver(tls=False).start()
    yield server
    server.stop()


def _reset(server: SyslogReceiver, settings) -> SyslogReceiver:
    settings.AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.AUDIT_STREAM_CA_BUNDLE = server.ca_file
    server.secret = ""
    server.messages.clear()
    server.events.clear()
    return server


@pytest.fixture
def collector(tls_server, settings):
    return _reset(tls_server, settings)


@pytest.fixture
def tcp_collector(tcp_server, settings):
    return _reset(tcp_server, settings)


def _configured(org, owner, server: SyslogReceiver) -> AuditStream:
    stream, secret = audit_stream.configure(actor=owner_actor(org, owner), url=server.url)
    server.secret = secret
    return stream


def _event(org, action: str, **details) -> AuditEvent:
    return audit.record(actor=None, organization=org, action=action, target_type="test", target_name=action,
                        details=details)


def _delivered(server: SyslogReceiver, *events: AuditEvent) -> bool:
    return server.wait_for(lambda s: {e.pk for e in events} <= set(s.events))


def test_an_owner_sets_a_syslog_stream_in_the_console(org, owner, collector):
    client = Client()
    client.force_login(owner)
    response = client.post(PAGE, {"url": collector.url, "enabled": "on"})
    assert response.status_code == 200
    stream = AuditStream.objects.get(organization=org)
    assert stream.url == collector.url and syslog.is_syslog(stream.url)
    secret = audit_stream.vault.open_sealed(org.pk, stream.key_version, bytes(stream.wrapped_key),
                                            bytes(stream.ciphertext))
    assert secret.encode() in response.content  # shown once
    assert secret.encode() not in client.get(PAGE).content


def test_events_go_as_signed_rfc5424_messages_in_order_and_only_this_organizations(org, owner, collector,
                                                                                   outsider_org):
    stream = _configured(org, owner, collector)
    mine = [_event(org, "test.first"), _event(org, "signin.failed", reason='a "quoted" ] name \\'),
            _event(org, "test.third", name="Ådå")]
    _event(outsider_org, "test.elsewhere")

    assert audit_stream.drain(stream.pk, settle_seconds=0) >= 3

    assert _delivered(collector, *mine)
    assert collector.messages and all(m["valid"] for m in collector.messages)
    delivered = [e["action"] for _, e in sorted(collector.events.items())]
    assert [e.action for e in mine] == [a for a in delivered if a in {e.action for e in mine}]
    assert "test.elsewhere" not in delivered
    failed = next(m for m in collector.messages if m["msgid"] == "signin.failed")
    assert (failed["facility"], failed["severity"]) == (13, 5)  # log audit, notice
    assert failed["sd_id"] == "agenticos@32473" and failed["sd"]["org"] == str(org.pk)
    assert failed["event"]["details"] == {"reason": 'a "quoted" ] name \\'}
    assert failed["app"] == "agenticos" and failed["timestamp"].endswith("Z")
    assert collector.events[mine[2].pk]["details"] == {"name": "Ådå"}
    stream.refresh_from_db()
    assert stream.delivered_up_to == max(collector.events) and stream.last_error == ""
    sent = len(collector.messages)
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0 and len(collector.messages) == sent


def test_while_the_collector_is_down_the_backlog_waits_and_then_goes(org, owner, collector):
    stream = _configured(org, owner, collector)
    collector.down()
    try:
        first = _event(org, "test.during-outage")
        assert audit_stream.drain(stream.pk, settle_seconds=0) == 0
        stream.refresh_from_db()
        assert stream.delivered_up_to < first.pk and stream.last_error.startswith("unreachable")
        second = _event(org, "test.still-down")
    finally:
        collector.up()
    assert audit_stream.drain(stream.pk, settle_seconds=0) >= 2
    assert _delivered(collector, first, second)
    stream.refresh_from_db()
    assert stream.delivered_up_to >= second.pk and stream.last_error == ""


def test_a_collector_whose_certificate_is_not_trusted_gets_nothing(org, owner, collector, settings):
    stream = _configured(org, owner, collector)
    settings.AUDIT_STREAM_CA_BUNDLE = ""  # the public CAs: the collector's self-signed certificate is not one
    event = _event(org, "test.untrusted")
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0
    assert collector.wait_for(lambda s: s.handshakes_failed >= 1)
    assert event.pk not in collector.events
    stream.refresh_from_db()
    assert stream.delivered_up_to < event.pk and "certificate" in stream.last_error


def test_plain_tcp_goes_only_to_a_host_the_operator_allowed(org, owner, tcp_collector, settings):
    stream = _configured(org, owner, tcp_collector)
    event = _event(org, "test.plain")
    assert audit_stream.drain(stream.pk, settle_seconds=0) >= 1
    assert _delivered(tcp_collector, event)
    settings.AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = []
    later = _event(org, "test.after-the-allowance-went")
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0  # the guard checks again at each delivery
    stream.refresh_from_db()
    assert stream.delivered_up_to < later.pk and stream.last_error.startswith("refused")


@pytest.mark.parametrize("url", [
    "syslog+tls://169.254.169.254:6514", "syslog+tls://10.0.0.5", "syslog+tls://[::1]:6514",
    "syslog+tcp://siem.example.com:514", "syslog+tls://siem.example.com:6514/path", "syslog+tls://u@siem.example.com",
    "syslog+tls://siem.example.com:99999", "syslog+udp://siem.example.com:514"])
def test_a_hostile_plain_or_malformed_syslog_receiver_is_refused(org, owner, url, settings):
    settings.AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = []
    client = Client()
    client.force_login(owner)
    assert client.post(PAGE, {"url": url, "enabled": "on"}).status_code == 422
    assert not AuditStream.objects.exists()


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer"])
def test_weaker_roles_cannot_point_the_stream_at_a_syslog_host(org, owner, collector, role):
    client = Client()
    client.force_login(factories.member(org, role))
    assert client.post(PAGE, {"url": collector.url, "enabled": "on"}).status_code == 403
    assert not AuditStream.objects.exists()


def test_an_outsiders_syslog_stream_never_carries_this_organizations_events(org, owner, outsider_org, outsider,
                                                                             collector):
    theirs = _configured(outsider_org, outsider, collector)
    mine = _event(org, "test.ours")
    own = _event(outsider_org, "test.theirs")
    audit_stream.drain(theirs.pk, settle_seconds=0)
    assert _delivered(collector, own)
    assert mine.pk not in collector.events
    assert {m["sd"]["org"] for m in collector.messages} == {str(outsider_org.pk)}
