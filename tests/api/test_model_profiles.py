"""Model profiles: provider rules, secrets from the same organization only, in-use protection."""

from __future__ import annotations

from agenticos import services as kernel
from tests.api.conftest import actor_of, make_agent


def _fields(response) -> set[str]:
    return {p["field"] for p in response.json()["error"]["details"]["problems"]}


def test_a_provider_that_needs_a_key_refuses_a_profile_without_one(org, owner, api_as):
    response = api_as(owner, org).post("/api/v1/model-profiles", {"label": "oa", "provider": "openai",
                                                                   "model": "gpt-4o-mini"}, format="json")
    assert response.status_code == 422 and _fields(response) == {"secret_id"}


def test_an_openai_compatible_profile_needs_a_base_url(org, owner, api_as, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # a local server the operator lists
    client = api_as(owner, org)
    response = client.post("/api/v1/model-profiles", {"label": "local", "provider": "openai_compatible",
                                                       "model": "llama"}, format="json")
    assert response.status_code == 422 and _fields(response) == {"base_url"}
    ok = client.post("/api/v1/model-profiles", {"label": "local", "provider": "openai_compatible", "model": "llama",
                                                 "base_url": "http://127.0.0.1:9999/v1"}, format="json")
    assert ok.status_code == 201 and ok.json()["secret"] is None


def test_a_secret_of_another_organization_cannot_be_used(org, owner, outsider, outsider_org, api_as):
    theirs = kernel.create_secret(actor=actor_of(outsider, outsider_org), name="k", value="v-123456789012")
    response = api_as(owner, org).post("/api/v1/model-profiles", {"label": "oa", "provider": "openai", "model": "m",
                                                                   "secret_id": str(theirs.pk)}, format="json")
    assert response.status_code == 422 and _fields(response) == {"secret_id"}


def test_a_duplicate_label_is_a_409_naming_label(org, owner, demo_profile, api_as):
    response = api_as(owner, org).post("/api/v1/model-profiles", {"label": "demo", "provider": "demo",
                                                                   "model": "demo"}, format="json")
    assert response.status_code == 409 and response.json()["error"]["details"] == {"field": "label"}


def test_a_profile_can_be_changed_and_shows_its_secret_by_name_and_hint_only(org, owner, demo_profile, api_as):
    secret = kernel.create_secret(actor=actor_of(owner, org), name="openai", value="sk-abcdefghijkl-WXYZ")
    response = api_as(owner, org).patch(f"/api/v1/model-profiles/{demo_profile.pk}", {
        "provider": "openai", "model": "gpt-4o", "secret_id": str(secret.pk), "fallback_ids": [],
    }, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["secret"] == {"id": str(secret.pk), "name": "openai", "hint": "WXYZ"}


def test_a_profile_used_by_an_agent_cannot_be_deleted(org, owner, demo_profile, api_as):
    make_agent(owner, org, profile=demo_profile)
    client = api_as(owner, org)
    assert client.delete(f"/api/v1/model-profiles/{demo_profile.pk}").status_code == 409
    other = client.post("/api/v1/model-profiles", {"label": "spare", "provider": "demo", "model": "demo"},
                        format="json").json()
    assert client.delete(f"/api/v1/model-profiles/{other['id']}").status_code == 204


def test_a_member_can_read_profiles_but_not_manage_them(org, member, demo_profile, api_as):
    client = api_as(member, org)
    assert [p["label"] for p in client.get("/api/v1/model-profiles").json()["results"]] == ["demo"]
    assert client.patch(f"/api/v1/model-profiles/{demo_profile.pk}", {"model": "x"}, format="json").status_code == 403
