"""The operator console: every model has a fast changelist, ledgers are read-only, secrets never show."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from guardian.models import UserObjectPermission

from agenticos import vault
from agenticos.admin import month_start
from agenticos.models import ApiKey, AuditEvent, Membership, Secret, User
from agents.models import AgentVersion, Message, ModelProfile, Run, Surface, ToolCall
from governance.models import Approval, Question, SpendEntry
from tests.ops import world

OUR_APPS = ("agenticos", "agents", "governance")
REGISTERED = sorted(admin.site._registry, key=lambda m: m._meta.label)
LEDGERS = [AuditEvent, AgentVersion, SpendEntry, Message, ToolCall, Run, Approval, Question, UserObjectPermission]


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def add(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")


def delete(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_delete", args=[obj.pk])


def test_every_model_of_the_kernel_agents_and_governance_is_in_the_console():
    missing = [
        m._meta.label
        for app in OUR_APPS
        for m in apps.get_app_config(app).get_models()
        if m not in admin.site._registry
    ]
    assert missing == []


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label)
def test_each_changelist_answers_with_a_bounded_number_of_queries_whatever_the_row_count(
    model, console, make_world, django_assert_max_num_queries
):
    make_world()
    make_world()
    with django_assert_max_num_queries(14):
        response = console.get(changelist(model))
    assert response.status_code == 200
    with CaptureQueriesContext(connection) as before:
        console.get(changelist(model))
    make_world()
    make_world()
    with CaptureQueriesContext(connection) as after:
        console.get(changelist(model))
    # More rows on the page must not mean more queries (no N+1 through a link column).
    assert len(after) == len(before), [q["sql"] for q in after.captured_queries]


@pytest.mark.parametrize("model", [m for m in REGISTERED if m._meta.app_label in OUR_APPS], ids=lambda m: m._meta.label)
def test_each_change_form_of_our_models_opens(model, console, make_world):
    make_world()
    obj = model._default_manager.first()
    assert obj is not None
    assert console.get(change(obj)).status_code == 200
    assert console.get(changelist(model), {"q": "no-such-thing"}).status_code == 200
    assert console.get(changelist(model), {"q": "7a0c9f9e-7d4a-4c2a-9d55-3b1f1e0f0a01"}).status_code == 200
    can_add = admin.site._registry[model].has_add_permission(console.get(changelist(model)).wsgi_request)
    assert console.get(add(model)).status_code == (200 if can_add else 403)


@pytest.mark.parametrize("model", LEDGERS, ids=lambda m: m._meta.label)
def test_ledger_rows_cannot_be_added_changed_or_deleted_through_the_console(model, console, make_world):
    make_world()
    obj = model._default_manager.first()
    before = {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}

    assert console.post(change(obj), {"note": "edited", "action": "x"}).status_code == 403
    assert console.post(add(model), {}).status_code == 403
    assert console.post(delete(obj), {"post": "yes"}).status_code == 403
    page = console.get(change(obj))
    assert page.status_code == 200
    assert b'name="_save"' not in page.content

    obj.refresh_from_db()
    assert {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields} == before


def test_a_grant_links_to_the_agent_it_shares(console, make_world):
    w = make_world()
    html = console.get(changelist(UserObjectPermission)).content.decode()
    assert change(w.agent) in html
    assert "use_agent" in html


def test_the_version_list_offers_no_bulk_delete(console, make_world):
    make_world()
    response = console.get(changelist(AgentVersion))
    assert b"delete_selected" not in response.content


# ------------------------------------------------------------------ secrets


def test_a_secret_created_in_the_console_is_sealed_and_its_value_never_shown_or_logged(
    console, make_world, caplog
):
    caplog.set_level(logging.DEBUG)
    w = make_world()
    plaintext = "sk-console-typed-Zq9XwV81sEcReT"

    form = console.get(add(Secret))
    assert b'type="password"' in form.content
    response = console.post(
        add(Secret),
        {"organization": str(w.org.pk), "name": "openai-prod", "kind": "api_key", "description": "", "value": plaintext},
    )
    assert response.status_code == 302, response.content.decode()[:2000]

    secret = Secret.objects.get(organization=w.org, name="openai-prod")
    assert secret.hint == "cReT"
    assert secret.created_by.email == "operator@example.com"
    assert plaintext.encode() not in bytes(secret.ciphertext)
    assert vault.reveal(secret) == plaintext
    ModelProfile.objects.create(organization=w.org, label="Prod", provider="openai", model="gpt-4o", secret=secret)

    pages = [
        console.get(changelist(Secret)),
        console.get(change(secret)),
        console.get(changelist(ModelProfile)),
        console.get(change(ModelProfile.objects.get(label="Prod"))),
        console.get(changelist(AuditEvent)),
        console.get(change(AuditEvent.objects.filter(target_id=str(secret.pk)).latest("created_at"))),
        console.get(change(w.org)),
    ]
    for page in pages:
        assert page.status_code == 200
        assert plaintext not in page.content.decode()
    assert "…cReT" in pages[0].content.decode()
    # The change form has no value field at all, not even an empty one.
    assert 'name="value"' not in pages[1].content.decode()
    assert plaintext not in caplog.text


def test_a_rejected_secret_form_does_not_echo_the_typed_value(console, make_world):
    w = make_world()
    plaintext = "sk-rejected-form-Vv7777777777"
    response = console.post(
        add(Secret), {"organization": str(w.org.pk), "name": "", "kind": "api_key", "value": plaintext}
    )
    assert response.status_code == 200
    assert b"This field is required" in response.content
    assert plaintext not in response.content.decode()


def test_an_admin_change_to_a_secret_keeps_it_in_its_organization_and_is_audited(console, make_world):
    w, other = make_world(), make_world()
    response = console.post(
        change(w.secret),
        {"organization": str(other.org.pk), "name": "renamed", "kind": "custom", "description": "moved?"},
    )
    assert response.status_code == 302
    w.secret.refresh_from_db()
    assert w.secret.organization_id == w.org.pk
    assert w.secret.name == "renamed"
    assert vault.reveal(w.secret) == w.secret_value
    event = AuditEvent.objects.get(action="admin.secret.change")
    assert event.organization_id == w.org.pk
    assert event.details["fields"] == ["description", "kind", "name"]
    assert w.secret_value not in str(event.details)


def test_a_model_profile_cannot_use_another_organizations_secret(console, make_world):
    w, other = make_world(), make_world()
    response = console.post(
        add(ModelProfile),
        {
            "organization": str(w.org.pk),
            "label": "Borrowed",
            "kind": "chat",
            "provider": "openai",
            "model": "gpt-4o",
            "secret": str(other.secret.pk),
            "settings": "{}",
        },
    )
    assert response.status_code == 200
    assert b"This secret belongs to another organization." in response.content
    assert not ModelProfile.objects.filter(label="Borrowed").exists()


# ------------------------------------------------------------------ actions


def test_revoking_api_keys_in_bulk_stamps_them_and_writes_audit_events(console, make_world):
    w = make_world()
    key = ApiKey.objects.get(organization=w.org)
    untouched = ApiKey.objects.exclude(pk=key.pk).count()
    response = console.post(changelist(ApiKey), {"action": "revoke", "_selected_action": [key.pk]})
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None and not key.is_active
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == untouched
    event = AuditEvent.objects.get(action="admin.apikey.revoke")
    assert (event.organization_id, event.target_id, event.actor.email) == (w.org.pk, str(key.pk), "operator@example.com")


def test_suspending_and_unsuspending_members(console, make_world):
    w = make_world()
    member = Membership.objects.get(organization=w.org, role="member")
    console.post(changelist(Membership), {"action": "suspend", "_selected_action": [member.pk]})
    member.refresh_from_db()
    assert member.is_suspended
    console.post(changelist(Membership), {"action": "unsuspend", "_selected_action": [member.pk]})
    member.refresh_from_db()
    assert not member.is_suspended
    assert list(AuditEvent.objects.filter(target_id=str(member.pk)).values_list("action", flat=True).order_by("id")) == [
        "admin.membership.suspend",
        "admin.membership.unsuspend",
    ]


def test_the_only_active_owner_cannot_be_suspended(console, make_world):
    w = make_world()
    owner = Membership.objects.get(organization=w.org, role="owner")
    response = console.post(
        changelist(Membership), {"action": "suspend", "_selected_action": [owner.pk]}, follow=True
    )
    owner.refresh_from_db()
    assert not owner.is_suspended
    assert b"must keep one active owner" in response.content


def test_a_member_without_console_rights_is_sent_to_the_login_page(client, make_world):
    w = make_world()
    client.force_login(w.owner)  # an organization owner is not a platform operator
    response = client.get(changelist(Secret))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


# ------------------------------------------------------------------ spend


def test_organizations_show_this_months_spend_and_budget(console, make_world):
    w, other = make_world(), make_world()
    w.org.monthly_budget_usd = Decimal("10")
    w.org.save()
    world.spend(w.org, cost="1.50")
    world.spend(w.org, cost="100", when=month_start() - timedelta(seconds=1))  # last month
    world.spend(other.org, cost="7")

    response = console.get(changelist(type(w.org)))
    rows = {row.pk: row for row in response.context["cl"].result_list}
    assert rows[w.org.pk]._spend == Decimal("1.75")  # 0.25 from the world's run + 1.50
    assert rows[other.org.pk]._spend == Decimal("7.25")
    html = response.content.decode()
    assert "1.7500" in html and "18%" in html and "10.00" in html


def test_the_run_ledger_sums_this_months_spend_per_surface(console, make_world):
    w = make_world()
    slack_run = world.run(w.org, w.agent, w.version, surface=Surface.SLACK, cost="2")
    world.spend(w.org, cost="2", surface=Surface.SLACK, run_row=slack_run)
    world.spend(w.org, cost="0.5", surface=Surface.API, when=timezone.now())
    world.spend(w.org, cost="9", surface=Surface.SLACK, when=month_start() - timedelta(days=3))

    response = console.get(changelist(Run))
    summary = response.context["surface_summary"]
    by_surface = {row["surface"]: (row["runs"], row["cost_usd"]) for row in summary["rows"]}
    assert by_surface == {
        "Slack": (1, Decimal("2")),
        "REST API": (0, Decimal("0.5")),
        "Web chat": (1, Decimal("0.25")),
    }
    assert summary["total_cost_usd"] == Decimal("2.75")
    assert b"runs and spend per surface" in response.content

    other = make_world()
    filtered = console.get(changelist(Run), {"organization__id__exact": str(other.org.pk)})
    assert filtered.context["surface_summary"]["total_cost_usd"] == Decimal("0.25")


def test_the_run_ledger_filters_by_surface_status_and_date(console, make_world):
    w = make_world()
    world.run(w.org, w.agent, w.version, surface=Surface.TELEGRAM, status="failed")
    response = console.get(changelist(Run), {"surface__exact": "telegram", "status__exact": "failed"})
    assert [r.surface for r in response.context["cl"].result_list] == ["telegram"]
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    response = console.get(
        changelist(Run), {"created_at__gte": today.isoformat(), "created_at__lt": (today + timedelta(days=1)).isoformat()}
    )
    assert response.context["cl"].result_count == 2


def test_a_run_links_to_its_agent_version_and_conversation(console, make_world):
    w = make_world()
    html = console.get(changelist(Run)).content.decode()
    assert change(w.agent) in html
    assert change(w.version) in html
    assert change(w.run.conversation) in html
    assert change(w.org) in html


def test_a_user_can_be_created_in_the_console_with_an_email_and_password(console, db):
    response = console.post(
        add(User),
        {"email": "new-operator@example.com", "usable_password": "true", "password1": "a-long-pass-9!", "password2": "a-long-pass-9!"},
    )
    assert response.status_code == 302, [str(e) for e in response.context["adminform"].form.errors.items()]
    assert User.objects.get(email="new-operator@example.com").check_password("a-long-pass-9!")


def test_the_last_active_owner_keeps_the_owner_role_and_cannot_be_deleted(console, make_world):
    w = make_world()
    owner = Membership.objects.get(organization=w.org, role="owner")
    response = console.post(
        change(owner),
        {"organization": str(w.org.pk), "user": str(owner.user_id), "role": "member"},
    )
    assert response.status_code == 200
    assert b"last active owner" in response.content
    owner.refresh_from_db()
    assert owner.role == "owner"
    assert console.post(delete(owner), {"post": "yes"}).status_code == 403

    member = Membership.objects.get(organization=w.org, role="member")
    bulk = {"action": "delete_selected", "_selected_action": [owner.pk, member.pk], "post": "yes"}
    console.post(changelist(Membership), bulk)  # refused as a whole: it would remove the last owner
    assert sorted(Membership.objects.filter(organization=w.org).values_list("role", flat=True)) == ["member", "owner"]
    console.post(changelist(Membership), {**bulk, "_selected_action": [member.pk]})
    assert list(Membership.objects.filter(organization=w.org).values_list("role", flat=True)) == ["owner"]
    assert AuditEvent.objects.filter(action="admin.membership.delete", target_id=str(member.pk)).exists()
