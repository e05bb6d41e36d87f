"""Builder → Triggers in the web console: list with next firing and last run, create (an event's secret and a
signed curl shown once), pause / fire / delete; a viewer sees no controls; another organization gets a 404."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from agenticos.tenancy import SESSION_KEY
from agents.models import Run
from tests.triggers.conftest import make_trigger
from triggers.models import Trigger

pytestmark = pytest.mark.django_db


def signed_in(user, org) -> Client:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


def test_the_builder_links_to_the_triggers_tab_which_lists_next_firing_and_last_run(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron="30 8 * * 1-5", timezone="Europe/Madrid")
    client = signed_in(owner, org)
    assert f"/agents/{agent.pk}/triggers/" in client.get(f"/agents/{agent.pk}/").content.decode()
    client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/fire")
    page = client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    run = Run.objects.get()
    assert "Nightly" in page and "08:30" in page and "Europe/Madrid" in page
    assert "write {{payload}} where" in page and "data-cron-preview" in page
    assert f"/activity/runs/{run.pk}/" in page


def test_creating_an_event_trigger_shows_the_secret_and_a_signed_curl_once(org, owner, agent):
    client = signed_in(owner, org)
    response = client.post(f"/agents/{agent.pk}/triggers/", {"name": "Orders", "kind": "event",
                                                            "prompt": "Handle {{payload}}", "timezone": "UTC"})
    assert response.status_code == 201
    page = response.content.decode()
    trigger = Trigger.objects.get()
    secret = page.split('id="t-secret" readonly value="')[1].split('"')[0]
    assert secret.startswith("whsec_") and f"/api/v1/hooks/{trigger.key}" in page
    assert "openssl dgst -sha256 -hmac" in page and "X-AgenticOS-Signature: sha256=$SIG" in page
    assert secret not in client.get(f"/agents/{agent.pk}/triggers/").content.decode()


def test_a_bad_cron_is_shown_at_the_form_and_creates_nothing(org, owner, agent):
    response = signed_in(owner, org).post(f"/agents/{agent.pk}/triggers/", {
        "name": "Bad", "kind": "schedule", "prompt": "x", "cron": "99 * * * *", "timezone": "UTC"})
    assert response.status_code == 422 and "data-trigger-error" in response.content.decode()
    assert not Trigger.objects.exists()


def test_pause_and_delete_from_the_console(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent)
    client = signed_in(owner, org)
    client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/pause")
    assert Trigger.objects.get().enabled is False
    client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/delete")
    assert not Trigger.objects.exists()


def test_a_viewer_sees_no_controls_and_cannot_change_anything(org, owner, viewer, agent):
    trigger, _ = make_trigger(owner, org, agent)
    client = signed_in(viewer, org)
    page = client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert "Nightly" in page and "data-fire" not in page and "data-trigger-form" not in page
    assert client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/delete").status_code == 403
    assert client.post(f"/agents/{agent.pk}/triggers/", {"name": "x", "kind": "schedule", "prompt": "x",
                                                        "cron": "0 9 * * *"}).status_code == 403
    assert Trigger.objects.count() == 1 and not Run.objects.exists()


def test_another_organization_gets_404_pages(org, owner, agent, outsider, outsider_org):
    trigger, _ = make_trigger(owner, org, agent)
    client = signed_in(outsider, outsider_org)
    assert client.get(f"/agents/{agent.pk}/triggers/").status_code == 404
    assert client.get(f"/agents/{agent.pk}/triggers/{trigger.pk}/").status_code == 404
    for action in ("fire", "pause", "delete", "rotate-secret"):
        assert client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/{action}").status_code == 404
    assert Trigger.objects.get().enabled is True and not Run.objects.exists()


def test_the_cron_preview_reads_an_expression_and_names_a_bad_one(org, owner, agent, outsider, outsider_org):
    client = signed_in(owner, org)
    good = client.get(f"/agents/{agent.pk}/triggers/describe", {"cron": "30 8 * * 1-5"}).json()
    assert good["valid"] is True and "08:30" in good["text"]
    bad = client.get(f"/agents/{agent.pk}/triggers/describe", {"cron": "99 * * * *"}).json()
    assert bad["valid"] is False and "invalid" in bad["text"]
    assert signed_in(outsider, outsider_org).get(f"/agents/{agent.pk}/triggers/describe",
                                                 {"cron": "* * * * *"}).status_code == 404


def test_activity_filters_by_trigger_and_shows_only_its_runs(org, owner, agent, outsider, outsider_org):
    nightly, _ = make_trigger(owner, org, agent, name="Nightly")
    other, _ = make_trigger(owner, org, agent, name="Hourly")
    client = signed_in(owner, org)
    client.post(f"/agents/{agent.pk}/triggers/{nightly.pk}/fire")
    client.post(f"/agents/{agent.pk}/triggers/{other.pk}/fire")
    nightly_run = Run.objects.get(pk__in=nightly.firings.values("run_id"))
    other_run = Run.objects.get(pk__in=other.firings.values("run_id"))
    assert f"/activity/?trigger={nightly.pk}" in client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    page = client.get(f"/activity/?trigger={nightly.pk}").content.decode()
    assert f"/activity/runs/{nightly_run.pk}/" in page
    assert f"/activity/runs/{other_run.pk}/" not in page
    assert client.get("/activity/?trigger=not-a-uuid").status_code == 404
    # Another organization naming our trigger sees none of its runs.
    page = signed_in(outsider, outsider_org).get(f"/activity/?trigger={nightly.pk}").content.decode()
    assert f"/activity/runs/{nightly_run.pk}/" not in page


def test_the_next_firing_carries_the_utc_instant_for_the_viewers_zone_and_the_triggers_zone_as_fallback(
    org, owner, viewer, agent
):
    trigger, _ = make_trigger(owner, org, agent, cron="30 8 * * 1-5", timezone="Europe/Madrid")
    due = Trigger.objects.get().next_run_at
    instant = due.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    madrid = due.astimezone(ZoneInfo("Europe/Madrid")).strftime("%Y-%m-%d %H:%M")
    assert madrid.endswith("08:30") and not instant.endswith("08:30:00Z")  # Madrid is never UTC
    for person in (owner, viewer):
        page = signed_in(person, org).get(f"/agents/{agent.pk}/triggers/").content.decode()
        cell = page.split(f'data-trigger-row="{trigger.pk}"')[1].split("</tr>")[0]
        assert f'<time datetime="{instant}" data-local-time' in cell
        # The trigger's own timezone: the title, and the text a browser without scripts shows.
        assert f"{madrid} in the trigger's timezone (Europe/Madrid)" in cell
        assert f'>{madrid} <span class="muted">Europe/Madrid</span></time>' in cell
        assert "/static/console/local-time.js" in page
    script = (Path(__file__).resolve().parents[2] / "console" / "static" / "console" / "local-time.js").read_text()
    assert "Intl.DateTimeFormat" in script and "time[data-local-time]" in script


def test_an_editor_changes_the_schedule_and_a_viewer_or_an_outsider_cannot(
    org, owner, viewer, agent, outsider, outsider_org
):
    trigger, _ = make_trigger(owner, org, agent, cron="30 8 * * 1-5", timezone="Europe/Madrid")
    url = f"/agents/{agent.pk}/triggers/{trigger.pk}/"
    edited = {"name": "Morning digest", "prompt": "Write the morning digest.", "cron": "15 6 * * *",
              "timezone": "Asia/Tokyo", "overlap": "queue", "delivery": "none"}
    owner_client = signed_in(owner, org)
    form = owner_client.get(url).content.decode()
    assert "Edit “Nightly”" in form and 'value="30 8 * * 1-5"' in form and 'value="Europe/Madrid"' in form

    # A viewer sees the list without the form and cannot save; another organization does not see it at all.
    viewer_client = signed_in(viewer, org)
    assert "data-trigger-form" not in viewer_client.get(url).content.decode()
    assert viewer_client.post(url, edited).status_code == 403
    outsider_client = signed_in(outsider, outsider_org)
    assert outsider_client.get(url).status_code == 404
    assert outsider_client.post(url, edited).status_code == 404
    unchanged = Trigger.objects.get()
    assert (unchanged.name, unchanged.cron, unchanged.timezone, unchanged.overlap) == (
        "Nightly", "30 8 * * 1-5", "Europe/Madrid", "skip")

    # A bad timezone is shown at the form and saves nothing.
    response = owner_client.post(url, {**edited, "timezone": "Mars/Olympus"})
    assert response.status_code == 422 and "data-trigger-error" in response.content.decode()
    assert Trigger.objects.get().timezone == "Europe/Madrid"

    response = owner_client.post(url, edited)
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/triggers/"
    saved = Trigger.objects.get()
    assert (saved.name, saved.prompt, saved.cron, saved.timezone, saved.overlap) == (
        "Morning digest", "Write the morning digest.", "15 6 * * *", "Asia/Tokyo", "queue")
    # The next firing follows the new schedule, in its new timezone.
    assert saved.next_run_at.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%H:%M") == "06:15"
    page = owner_client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert "Morning digest" in page and "Asia/Tokyo" in page and "Trigger saved." in page
