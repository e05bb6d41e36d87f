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


# ------------------------------------------------------------------ a Codex ChatGPT sign-in (issue 46 §4)


def _sign_in(refresh: str = "rt-never-leak-7781") -> str:
    import json

    from tests.fakes.openai_responses_sse import jwt

    return json.dumps({"OPENAI_API_KEY": None, "last_refresh": "2026-11-01T00:00:00Z", "tokens": {
        "id_token": jwt({"email": "me@example.com"}), "access_token": jwt({"exp": 1}), "refresh_token": refresh,
        "account_id": "acct-1"}})


def test_a_chatgpt_sign_in_is_checked_on_save_with_a_readable_reason_and_nothing_saved(org, owner, api_as):
    import json

    client = api_as(owner, org)
    cases = {
        "not json at all": "This is not JSON",
        json.dumps({"OPENAI_API_KEY": "sk-abc"}): "holds an API key, not a ChatGPT sign-in",
        json.dumps({"tokens": {"id_token": "x.y.z", "access_token": "a"}}): "lacks refresh_token",
        json.dumps({"tokens": {"id_token": "nope", "access_token": "a", "refresh_token": "r"}}): "not a JSON Web Token",
        json.dumps([1, 2]): "is a JSON object",
    }
    for value, reason in cases.items():
        response = client.post("/api/v1/secrets", {"name": "chatgpt", "value": value, "kind": "codex_chatgpt"},
                               format="json")
        assert response.status_code == 422, value
        error = response.json()["error"]
        assert reason in json.dumps(error), (value, error)
        assert value not in response.content.decode() or value == "not json at all"
    assert not Secret.objects.filter(name="chatgpt").exists()
    assert not AuditEvent.objects.filter(action="secret.created").exists()


def test_a_chatgpt_sign_in_is_sealed_never_shown_back_and_a_bad_rotation_keeps_it(org, owner, api_as, outsider_org,
                                                                                  outsider, viewer):
    client = api_as(owner, org)
    value = _sign_in()
    created = client.post("/api/v1/secrets", {"name": "chatgpt", "value": value, "kind": "codex_chatgpt"},
                          format="json")
    assert created.status_code == 201 and created.json()["kind"] == "codex_chatgpt"
    assert created.json()["hint"] == ""  # the end of a JSON file tells nothing apart
    sid = created.json()["id"]
    bodies = [created, client.get("/api/v1/secrets"), client.get(f"/api/v1/secrets/{sid}")]
    refused = client.post(f"/api/v1/secrets/{sid}/rotate", {"value": "{}"}, format="json")
    assert refused.status_code == 422 and "tokens" in refused.content.decode()
    assert vault.reveal(Secret.objects.get(pk=sid)) == value
    newer = _sign_in("rt-never-leak-9902")
    rotated = client.post(f"/api/v1/secrets/{sid}/rotate", {"value": newer}, format="json")
    assert rotated.status_code == 200 and rotated.json()["hint"] == ""
    bodies += [refused, rotated]
    for response in bodies:
        text = response.content.decode()
        assert "rt-never-leak" not in text and "acct-1" not in text
    # Another organization cannot see or rotate it; a viewer cannot rotate it.
    assert api_as(outsider, outsider_org).get(f"/api/v1/secrets/{sid}").status_code == 404
    assert api_as(outsider, outsider_org).post(f"/api/v1/secrets/{sid}/rotate", {"value": _sign_in("rt-x")},
                                               format="json").status_code == 404
    assert api_as(viewer, org).post(f"/api/v1/secrets/{sid}/rotate", {"value": _sign_in("rt-y")},
                                    format="json").status_code == 403
    assert vault.reveal(Secret.objects.get(pk=sid)) == newer
