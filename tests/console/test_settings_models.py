"""Settings → Model profiles: editing an existing profile through `update_model_profile` (the service behind
PATCH /api/v1/model-profiles/<id>), with the API's permission (`models:manage`) and the service's refusals
shown at their field."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from agents.models import ModelProfile
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile(org):
    return factories.model_profile(org, label="Local")


def form_of(profile, **changes):
    data = {"label": profile.label, "provider": profile.provider, "model": profile.model, "secret_id": "",
            "base_url": profile.base_url, "context_window": ""}
    return {**data, **changes}


def test_the_list_links_each_profile_to_its_edit_form_prefilled(client_as, org, builder, profile):
    client = client_as(builder, org)
    listing = client.get("/settings/models/").content.decode()
    assert f'href="/settings/models/{profile.pk}/"' in listing and "Edit Local" in listing
    page = client.get(f"/settings/models/{profile.pk}/").content.decode()
    form = page.split("data-model-profile-form", 1)[1]
    assert 'name="label" value="Local"' in form and f'name="model" value="{profile.model}"' in form
    assert f'<option value="{profile.provider}" selected>' in form


def test_a_builder_changes_label_model_and_context_window(client_as, org, builder, profile):
    response = client_as(builder, org).post(f"/settings/models/{profile.pk}/", form_of(
        profile, label="Local large", model="demo-large", context_window="32000"))
    assert response.status_code == 302 and response["Location"] == "/settings/models/"
    profile.refresh_from_db()
    assert (profile.label, profile.model, profile.context_window) == ("Local large", "demo-large", 32000)
    assert AuditEvent.objects.filter(organization=org, action="model_profile.updated", actor=builder).count() == 1


def test_switching_to_a_provider_with_a_key_uses_a_vault_secret_and_keeps_the_fallbacks(client_as, org, builder,
                                                                                      profile):
    secret = factories.secret(org, name="openai-key")
    fallback = factories.model_profile(org, label="Backup")
    profile.fallbacks.add(fallback)
    response = client_as(builder, org).post(f"/settings/models/{profile.pk}/", form_of(
        profile, provider="openai", model="gpt-4o-mini", secret_id=str(secret.pk)))
    assert response.status_code == 302
    profile.refresh_from_db()
    assert (profile.provider, profile.model, profile.secret_id) == ("openai", "gpt-4o-mini", secret.pk)
    assert list(profile.fallbacks.all()) == [fallback]


@pytest.mark.parametrize("changes,field,words", [
    ({"model": ""}, "model", "This field is required."),
    ({"provider": "openai", "model": "gpt-4o"}, "secret", "needs an API key secret"),
    ({"provider": "openai_compatible"}, "base-url", "needs a base URL"),
    ({"context_window": "lots"}, "context-window", "Must be a positive integer (at most 2147483647)."),
    ({"label": "Taken"}, "label", "A model profile with this label already exists."),
])
def test_a_refused_change_is_shown_at_its_field_and_changes_nothing(client_as, org, builder, profile, changes,
                                                                      field, words):
    factories.model_profile(org, label="Taken")
    before = ModelProfile.objects.values().get(pk=profile.pk)
    response = client_as(builder, org).post(f"/settings/models/{profile.pk}/", form_of(profile, **changes))
    assert response.status_code == 422
    block = response.content.decode().split(f'id="m-{field}"', 1)[1].split("</div>", 1)[0]
    assert "data-form-error" in block and words in block
    assert ModelProfile.objects.values().get(pk=profile.pk) == before


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_a_role_without_models_manage_sees_no_edit_link_and_is_refused(client_as, org, profile, role):
    person = factories.member(org, role)
    client = client_as(person, org)
    listing = client.get("/settings/models/").content.decode()
    assert f"/settings/models/{profile.pk}/" not in listing and "Edit Local" not in listing
    assert client.get(f"/settings/models/{profile.pk}/").status_code == 403
    assert client.post(f"/settings/models/{profile.pk}/", form_of(profile, label="Mine now")).status_code == 403
    profile.refresh_from_db()
    assert profile.label == "Local"


def test_another_organizations_profile_is_404(client_as, org, owner, outsider_org):
    theirs = factories.model_profile(outsider_org, label="Theirs")
    client = client_as(owner, org)
    assert client.get(f"/settings/models/{theirs.pk}/").status_code == 404
    assert client.post(f"/settings/models/{theirs.pk}/", form_of(theirs, label="Ours")).status_code == 404
    assert client.get("/settings/models/not-a-uuid/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.label == "Theirs"


def test_the_add_form_offers_the_realtime_kind_and_creates_a_voice_profile(client_as, org, builder):
    secret = factories.secret(org, name="openai-key")
    client = client_as(builder, org)
    assert '<option value="realtime">Realtime voice</option>' in client.get("/settings/models/").content.decode()
    response = client.post("/settings/models/", {"label": "Voice", "kind": "realtime", "provider": "openai",
                                                 "model": "gpt-realtime", "secret_id": str(secret.pk)})
    assert response.status_code == 302
    profile = ModelProfile.objects.get(organization=org, label="Voice")
    assert (profile.kind, profile.model) == (ModelProfile.Kind.REALTIME, "gpt-realtime")
    assert 'data-model-kind="realtime"' in client.get("/settings/models/").content.decode()


def test_a_realtime_profile_of_another_provider_is_refused_at_its_field(client_as, org, builder):
    response = client_as(builder, org).post("/settings/models/", {
        "label": "Voice", "kind": "realtime", "provider": "demo", "model": "demo"})
    assert response.status_code == 422 and "Realtime API" in response.content.decode()
    assert not ModelProfile.objects.filter(organization=org, label="Voice").exists()
