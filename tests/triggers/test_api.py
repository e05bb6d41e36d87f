"""The trigger REST API: create answers the secret once, edit needs edit on the agent, run_as_creator is the
creator's own choice, a viewer changes nothing, and another organization gets 404 on every endpoint."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from agents.models import Run
from tests import factories
from tests.triggers.conftest import make_trigger
from triggers.models import Trigger, TriggerFiring, TriggerSecret

pytestmark = pytest.mark.django_db

SCHEDULE = {"name": "Morning digest", "kind": "schedule", "prompt": "Summarize yesterday.", "cron": "30 8 * * 1-5",
            "timezone": "Europe/Madrid"}


def test_creating_a_schedule_answers_its_next_firing_and_a_readable_schedule(api_as, org, owner, agent):
    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/triggers", SCHEDULE, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "schedule" and body["next_run_at"] and body["webhook_url"] is None
    assert body["signing_secret"] is None and "08:30" in body["schedule_description"]
    assert body["creator"] == owner.email and body["run_as_creator"] is False
    assert AuditEvent.objects.filter(action="trigger.created", target_id=body["id"]).exists()


def test_an_event_trigger_shows_its_signing_secret_once(api_as, org, owner, agent):
    client = api_as(owner, org)
    created = client.post(f"/api/v1/agents/{agent.pk}/triggers",
                          {"name": "Orders", "kind": "event", "prompt": "Handle {{payload}}"}, format="json").json()
    secret = created["signing_secret"]
    assert secret.startswith("whsec_") and created["webhook_url"].endswith(f"/api/v1/hooks/{Trigger.objects.get().key}")
    assert len(Trigger.objects.get().key) == 32  # 24 random bytes, urlsafe
    assert secret.encode() not in bytes(TriggerSecret.objects.get().ciphertext)
    shown = client.get(f"/api/v1/triggers/{created['id']}").content.decode()
    listed = client.get(f"/api/v1/agents/{agent.pk}/triggers").content.decode()
    audit = str(list(AuditEvent.objects.values_list("details", flat=True)))
    assert secret not in shown and secret not in listed and secret not in audit
    rotated = client.post(f"/api/v1/triggers/{created['id']}/rotate-secret").json()["signing_secret"]
    assert rotated != secret and rotated not in client.get(f"/api/v1/triggers/{created['id']}").content.decode()


@pytest.mark.parametrize(("data", "field"), [
    ({"cron": "61 * * * *"}, "cron"),
    ({"cron": "* * *"}, "cron"),
    ({"cron": "", "every_seconds": 30}, "every_seconds"),
    ({"cron": "0 9 * * *", "every_seconds": 120}, "cron"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"delivery": "channel", "delivery_chat_id": "C1"}, "delivery_binding_id"),
])
def test_a_bad_schedule_is_422_naming_the_field_and_creates_nothing(api_as, org, owner, agent, data, field):
    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/triggers", {**SCHEDULE, **data}, format="json")
    assert response.status_code == 422 and response.json()["error"]["details"]["field"] == field
    assert not Trigger.objects.exists()


def test_a_viewer_and_a_member_without_edit_change_nothing(api_as, org, owner, viewer, member, agent):
    trigger, _ = make_trigger(owner, org, agent)
    for user in (viewer, member):
        client = api_as(user, org)
        assert client.get(f"/api/v1/triggers/{trigger.pk}").status_code == 200
        assert client.post(f"/api/v1/agents/{agent.pk}/triggers", SCHEDULE, format="json").status_code == 403
        assert client.patch(f"/api/v1/triggers/{trigger.pk}", {"name": "x"}, format="json").status_code == 403
        for action in ("pause", "resume", "fire", "rotate-secret"):
            assert client.post(f"/api/v1/triggers/{trigger.pk}/{action}").status_code == 403
        assert client.delete(f"/api/v1/triggers/{trigger.pk}").status_code == 403
    assert Trigger.objects.get().name == "Nightly" and Trigger.objects.count() == 1
    assert not Run.objects.exists()


def test_only_the_creator_can_make_a_trigger_run_as_them(api_as, org, owner, admin_user, agent):
    trigger, _ = make_trigger(owner, org, agent)
    refused = api_as(admin_user, org).patch(f"/api/v1/triggers/{trigger.pk}", {"run_as_creator": True}, format="json")
    assert refused.status_code == 403
    assert Trigger.objects.get().run_as_creator is False
    allowed = api_as(owner, org).patch(f"/api/v1/triggers/{trigger.pk}", {"run_as_creator": True}, format="json")
    assert allowed.status_code == 200 and allowed.json()["run_as_creator"] is True
    # Anyone with edit may switch it off again.
    off = api_as(admin_user, org).patch(f"/api/v1/triggers/{trigger.pk}", {"run_as_creator": False}, format="json")
    assert off.status_code == 200 and Trigger.objects.get().run_as_creator is False


def test_pause_resume_fire_runs_and_delete(api_as, org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent)
    client = api_as(owner, org)
    paused = client.post(f"/api/v1/triggers/{trigger.pk}/pause").json()
    assert paused["enabled"] is False and paused["next_run_at"] is None
    assert client.post(f"/api/v1/triggers/{trigger.pk}/resume").json()["next_run_at"]
    fired = client.post(f"/api/v1/triggers/{trigger.pk}/fire")
    assert fired.status_code == 202
    run = Run.objects.get(pk=fired.json()["run_id"])
    assert run.surface == "schedule" and run.user_id == owner.pk
    runs = client.get(f"/api/v1/triggers/{trigger.pk}/runs").json()["results"]
    assert [(r["source"], r["status"], r["run_id"]) for r in runs] == [("manual", "started", str(run.pk))]
    assert client.delete(f"/api/v1/triggers/{trigger.pk}").status_code == 204
    assert not Trigger.objects.exists() and not TriggerFiring.objects.exists()
    assert Run.objects.filter(pk=run.pk).exists()  # the ledger keeps its runs


def test_firing_an_unpublished_environment_is_refused_and_runs_nothing(api_as, org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, environment="staging")
    response = api_as(owner, org).post(f"/api/v1/triggers/{trigger.pk}/fire")
    assert response.status_code == 409 and "staging" in response.json()["error"]["message"]
    assert not Run.objects.exists()


def test_a_private_agent_the_caller_cannot_see_hides_its_triggers(api_as, org, owner, builder):
    private = factories.published_agent(org, owner, name="Private")
    private.visibility = "private"
    private.save(update_fields=["visibility"])
    trigger, _ = make_trigger(owner, org, private)
    client = api_as(builder, org)
    assert client.get(f"/api/v1/agents/{private.pk}/triggers").status_code == 404
    assert client.get(f"/api/v1/triggers/{trigger.pk}").status_code == 404


def test_another_organization_gets_404_on_every_endpoint_and_changes_nothing(api_as, org, owner, agent, outsider,
                                                                             outsider_org):
    trigger, _ = make_trigger(owner, org, agent, kind="event", name="Orders")
    client = api_as(outsider, outsider_org)
    base = f"/api/v1/triggers/{trigger.pk}"
    calls = [
        ("get", f"/api/v1/agents/{agent.pk}/triggers"), ("post", f"/api/v1/agents/{agent.pk}/triggers"),
        ("get", base), ("patch", base), ("delete", base), ("get", f"{base}/runs"),
        ("post", f"{base}/pause"), ("post", f"{base}/resume"), ("post", f"{base}/rotate-secret"),
        ("post", f"{base}/fire"),
    ]
    for method, url in calls:
        response = getattr(client, method)(url, {**SCHEDULE, "name": "hijack"}, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
        assert response.json()["error"]["code"] == "not_found"
    # Their own agent id in the path does not reach this organization's trigger either.
    foreign_agent = factories.published_agent(outsider_org, outsider)
    assert client.get(f"/api/v1/agents/{foreign_agent.pk}/triggers").json()["results"] == []
    trigger.refresh_from_db()
    assert (trigger.name, trigger.enabled, Trigger.objects.count()) == ("Orders", True, 1)
    assert not Run.objects.exists()


def test_a_delivery_binding_of_another_agent_is_refused(api_as, org, owner, agent, outsider, outsider_org):
    from channelbots.models import Binding, ChannelBot

    other = factories.published_agent(outsider_org, outsider, name="Theirs")
    bot = ChannelBot.objects.create(organization=outsider_org, platform="slack", name="their bot")
    binding = Binding.objects.create(organization=outsider_org, agent=other, bot=bot)
    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/triggers", {
        **SCHEDULE, "delivery": "channel", "delivery_binding_id": str(binding.pk), "delivery_chat_id": "C1"},
        format="json")
    assert response.status_code == 422 and not Trigger.objects.exists()


def test_the_list_reads_a_fixed_number_of_queries(api_as, org, owner, agent, django_assert_max_num_queries):
    client = api_as(owner, org)
    make_trigger(owner, org, agent, name="a")
    with django_assert_max_num_queries(12) as first:
        assert client.get(f"/api/v1/agents/{agent.pk}/triggers").status_code == 200
    for name in ("b", "c", "d"):
        make_trigger(owner, org, agent, name=name)
    with django_assert_max_num_queries(len(first.captured_queries)):
        assert len(client.get(f"/api/v1/agents/{agent.pk}/triggers").json()["results"]) == 4
