"""The audit trail leaves the building: an owner points the organization's audit stream at a SIEM webhook (through
the outbound guard); events go there signed (HMAC-SHA256, a receiver checks it), at-least-once with their ids, and
while the receiver is down they wait — nothing is lost, nothing skipped. The signing secret is sealed and shown
once; weaker roles and outsiders cannot see or change the stream; another organization's events never go."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos import audit
from agenticos.models import AuditEvent
from config.celery import app
from identity import audit_stream, tasks
from identity.models import AuditStream
from tests import factories
from tests.fakes.siem_receiver import SiemReceiver
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
PAGE = "/settings/audit/stream/"


@pytest.fixture(scope="module")
def receiver_server():
    server = SiemReceiver().start()
    yield server
    server.stop()


@pytest.fixture
def receiver(receiver_server, settings):
    settings.AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    receiver_server.secret, receiver_server.down = "", False
    receiver_server.posts.clear()
    receiver_server.events.clear()
    return receiver_server


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _configured(org, owner, receiver) -> AuditStream:
    stream, secret = audit_stream.configure(actor=owner_actor(org, owner), url=receiver.url)
    receiver.secret = secret
    return stream


def _event(org, action: str) -> AuditEvent:
    return audit.record(actor=None, organization=org, action=action, target_type="test", target_name=action)


def test_an_owner_sets_the_stream_and_sees_the_secret_once(org, owner, receiver):
    client = _signed_in(owner)
    assert client.get(PAGE).status_code == 200
    response = client.post(PAGE, {"url": receiver.url, "enabled": "on"})
    assert response.status_code == 200
    stream = AuditStream.objects.get(organization=org)
    secret = audit_stream.vault.open_sealed(org.pk, stream.key_version, bytes(stream.wrapped_key),
                                            bytes(stream.ciphertext))
    assert secret.encode() in response.content and secret.encode() not in bytes(stream.ciphertext)
    page = client.get(PAGE)
    assert secret.encode() not in page.content and receiver.url.encode() in page.content
    event = AuditEvent.objects.get(organization=org, action="audit.stream_configured")
    assert secret not in str(event.details)


def test_events_go_signed_in_order_with_their_ids_and_only_this_organizations(org, owner, receiver,
                                                                               outsider_org):
    stream = _configured(org, owner, receiver)
    mine = [_event(org, f"test.{n}") for n in range(3)]
    _event(outsider_org, "test.elsewhere")
    assert audit_stream.drain(stream.pk, settle_seconds=0) >= 3
    assert receiver.posts and all(p["valid"] for p in receiver.posts)
    delivered = [e["action"] for _, e in sorted(receiver.events.items())]
    assert [e.action for e in mine] == [a for a in delivered if a.startswith("test.")]
    assert "test.elsewhere" not in delivered
    stream.refresh_from_db()
    assert stream.delivered_up_to == max(receiver.events) and stream.last_error == ""
    # Nothing new: nothing sent.
    posts = len(receiver.posts)
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0 and len(receiver.posts) == posts


def test_while_the_receiver_is_down_the_backlog_waits_and_then_goes(org, owner, receiver):
    stream = _configured(org, owner, receiver)
    receiver.down = True
    first = _event(org, "test.during-outage")
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0
    stream.refresh_from_db()
    assert stream.delivered_up_to < first.pk and stream.last_error == "HTTP 503"
    second = _event(org, "test.still-down")
    receiver.down = False
    audit_stream.drain(stream.pk, settle_seconds=0)
    assert {first.pk, second.pk} <= set(receiver.events)
    stream.refresh_from_db()
    assert stream.delivered_up_to >= second.pk and stream.last_error == ""


def test_a_receiver_that_rejects_the_signature_keeps_the_backlog(org, owner, receiver):
    stream = _configured(org, owner, receiver)
    receiver.secret = "another-secret"  # the collector holds the wrong secret: it refuses every post
    event = _event(org, "test.unverified")
    assert audit_stream.drain(stream.pk, settle_seconds=0) == 0
    assert receiver.posts and not receiver.posts[-1]["valid"] and event.pk not in receiver.events
    stream.refresh_from_db()
    assert stream.delivered_up_to < event.pk and stream.last_error == "HTTP 401"


def test_events_younger_than_the_settling_time_wait(org, owner, receiver):
    stream = _configured(org, owner, receiver)
    _event(org, "test.fresh")
    assert audit_stream.drain(stream.pk, settle_seconds=3600) == 0 and not receiver.posts


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "https://10.0.0.5/hook",
                                 "https://[::1]/hook", "http://siem.example.com/hook", "ftp://siem.example.com/x"])
def test_a_hostile_or_plain_http_receiver_is_refused(org, owner, receiver, url, settings):
    settings.AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS = []
    response = _signed_in(owner).post(PAGE, {"url": url, "enabled": "on"})
    assert response.status_code == 422
    assert not AuditStream.objects.exists()


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer"])
def test_weaker_roles_cannot_see_or_change_the_stream(org, owner, receiver, role):
    stream = _configured(org, owner, receiver)
    client = _signed_in(factories.member(org, role))
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, {"url": "https://evil.example/hook", "enabled": "on"}).status_code == 403
    assert client.post(PAGE, {"action": "remove"}).status_code == 403
    stream.refresh_from_db()
    assert stream.url == receiver.url


def test_an_outsider_owner_changes_only_their_own_stream(org, owner, receiver, outsider, outsider_org):
    stream = _configured(org, owner, receiver)
    client = _signed_in(outsider)
    assert receiver.url.encode() not in client.get(PAGE).content
    assert client.post(PAGE, {"action": "remove"}).status_code == 404  # they have none; Acme's stays
    assert AuditStream.objects.filter(pk=stream.pk).exists()


def test_the_beat_task_drains_every_enabled_stream(org, owner, receiver, monkeypatch):
    # Eager on Celery's own configuration: CELERY_TASK_ALWAYS_EAGER set in Django's settings did nothing once an
    # earlier test had read Celery's configuration, and the delivery went to a broker no worker of this test
    # reads (failed with another test order).
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    stream = _configured(org, owner, receiver)
    AuditEvent.objects.filter(organization=org).update(created_at=AuditEvent.objects.get(
        action="audit.stream_configured").created_at.replace(year=2020))
    event = _event(org, "test.by-beat")
    AuditEvent.objects.filter(pk=event.pk).update(created_at=event.created_at.replace(year=2020))
    tasks.flush_audit_streams.delay()
    assert event.pk in receiver.events
    stream.refresh_from_db()
    assert stream.delivered_up_to >= event.pk
