"""Nobody misses an approval, by e-mail too (issue 44 §7): a decider who asked for it on the Notifications page gets
one e-mail when a run parks (the bell's words, the console's absolute link) through Django's mail backend; a
decider who did not ask, a member who may not decide, and a decider who asked only in another organization get
none. A notification read before the e-mail leaves is not sent."""

from __future__ import annotations

import pytest
from django.core import mail

from notifications import services as notifications
from notifications.models import Notification
from tests import factories
from tests.runner.conftest import actor_of
from tests.runner.test_approvals import gated_agent, two_charts_model  # noqa: F401  (a fixture)
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _eager_tasks(settings):
    """The e-mail task runs where it is queued (after the parking commits), through the locmem outbox."""
    from config.celery import app

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.FRONTEND_URL = "https://console.example.com"
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


def test_a_decider_who_asked_gets_one_email_and_nobody_else_does(org, owner, member, gated_agent,  # noqa: F811
                                                                 scripted_model, outsider_org):
    admin = factories.member(org, "admin")
    elsewhere = factories.member(org, "admin")
    from agenticos.models import Membership

    Membership.objects.create(organization=outsider_org, user=elsewhere, role="owner")
    notifications.set_email_kinds(actor=actor_of(owner, org), kinds=[Notification.Kind.APPROVAL_REQUESTED])
    notifications.set_email_kinds(actor=actor_of(member, org), kinds=[Notification.Kind.APPROVAL_REQUESTED])
    notifications.set_email_kinds(actor=actor_of(elsewhere, outsider_org), kinds=[Notification.Kind.APPROVAL_REQUESTED])
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    mail.outbox.clear()

    run_now(start(org, member, agent, version))

    assert [m.to for m in mail.outbox] == [[owner.email]]
    sent = mail.outbox[0]
    note = Notification.objects.get(recipient=owner, kind=Notification.Kind.APPROVAL_REQUESTED)
    assert note.text in sent.body and "https://console.example.com/approvals/" in sent.body
    assert agent.name in sent.subject and "create_chart" in sent.body
    assert "Sales" not in sent.body  # the call's arguments stay on the Approvals page
    # The others were told in the bell only.
    assert Notification.objects.filter(recipient=admin, kind=Notification.Kind.APPROVAL_REQUESTED).count() == 1
    assert Notification.objects.filter(recipient=elsewhere, kind=Notification.Kind.APPROVAL_REQUESTED).count() == 1


def test_a_notification_read_before_its_email_leaves_is_not_sent(org, owner):
    notifications.set_email_kinds(actor=actor_of(owner, org), kinds=[Notification.Kind.APPROVAL_REQUESTED])
    note = notifications.notify(organization=org, recipient=owner, kind=Notification.Kind.APPROVAL_REQUESTED,
                                text="Shop waits for a decision.", link="/approvals/")
    notifications.mark_read(actor=actor_of(owner, org), notification_id=note.pk)
    assert notifications.send_emails([str(note.pk)]) == 0
    assert notifications.send_emails([str(Notification.objects.create(
        organization=org, recipient=owner, kind=Notification.Kind.APPROVAL_REQUESTED, text="Again.").pk)]) == 1


def test_unknown_kinds_are_refused_and_change_nothing(org, owner):
    from agenticos.errors import Invalid

    actor = actor_of(owner, org)
    notifications.set_email_kinds(actor=actor, kinds=[Notification.Kind.ROLLOUT_ROLLED_BACK])
    with pytest.raises(Invalid):
        notifications.set_email_kinds(actor=actor, kinds=["approval_requested", "everything"])
    assert notifications.email_kinds(actor) == [Notification.Kind.ROLLOUT_ROLLED_BACK]
