"""Secrets through the API: sealed, listed, rotated, deleted — never a value in any response."""

from __future__ import annotations

from agenticos import vault
from agenticos.models import AuditEvent, Secret

PLAINTEXT = "sk-live-THIS-MUST-NEVER-LEAK-9876"
ROTATED = "sk-live-ROTATED-NEVER-LEAK-5555"


def test_secrets_never_appear_in_any_response(org, owner, api_as, demo_profile):
    client = api_as(owner, org)
    bodies = []
    created = client.post("/api/v1/secrets", {"name": "openai", "value": PLAINTEXT, "kind": "api_key"}, format="json")
    assert created.status_code == 201
    sid = created.json()["id"]
    assert created.json()["hint"] == "9876"
    bodies.append(created)
    bodies.append(client.get("/api/v1/secrets"))
    bodies.append(client.get(f"/api/v1/secrets/{sid}"))
    profile = client.post("/api/v1/model-profiles", {"label": "oa", "provider": "openai", "model": "gpt-4o-mini",
                                                      "secret_id": sid}, format="json")
    assert profile.status_code == 201
    bodies += [profile, client.get("/api/v1/model-profiles")]
    rotated = client.post(f"/api/v1/secrets/{sid}/rotate", {"value": ROTATED}, format="json")
    assert rotated.status_code == 200 and rotated.json()["hint"] == "5555"
    bodies.append(rotated)
    for response in bodies:
        text = response.content.decode()
        assert PLAINTEXT not in text and ROTATED not in text
        assert "ciphertext" not in text and "wrapped_key" not in text
    assert vault.reveal(Secret.objects.get(pk=sid)) == ROTATED
    audit_text = str(list(AuditEvent.objects.values()))
    assert PLAINTEXT not in audit_text and ROTATED not in audit_text


def test_a_duplicate_secret_name_is_a_409_naming_the_field(org, owner, api_as):
    client = api_as(owner, org)
    client.post("/api/v1/secrets", {"name": "dup", "value": "value-one-12345"}, format="json")
    response = client.post("/api/v1/secrets", {"name": "dup", "value": "value-two-12345"}, format="json")
    assert response.status_code == 409 and response.json()["error"]["details"] == {"field": "name"}


def test_a_secret_used_by_a_model_profile_cannot_be_deleted(org, owner, api_as):
    client = api_as(owner, org)
    sid = client.post("/api/v1/secrets", {"name": "k", "value": "value-12345678"}, format="json").json()["id"]
    client.post("/api/v1/model-profiles", {"label": "oa", "provider": "openai", "model": "m", "secret_id": sid},
                format="json")
    assert client.delete(f"/api/v1/secrets/{sid}").status_code == 409
    assert Secret.objects.filter(pk=sid).exists()


def test_deleting_a_secret_keeps_its_name_in_the_audit_log(org, owner, api_as):
    client = api_as(owner, org)
    sid = client.post("/api/v1/secrets", {"name": "gone", "value": "value-12345678"}, format="json").json()["id"]
    assert client.delete(f"/api/v1/secrets/{sid}").status_code == 204
    assert AuditEvent.objects.get(action="secret.deleted").target_name.startswith("gone")


def test_a_builder_can_list_secrets_but_not_create_them(org, builder, api_as):
    client = api_as(builder, org)
    assert client.get("/api/v1/secrets").status_code == 200
    assert client.post("/api/v1/secrets", {"name": "x", "value": "v-1234567890"}, format="json").status_code == 403
