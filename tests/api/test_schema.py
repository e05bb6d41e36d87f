"""The OpenAPI document describes the platform endpoints, with the API key scheme."""

from __future__ import annotations

import json


def test_the_schema_lists_the_platform_endpoints_and_the_bearer_scheme(client, db):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    doc = response.json()
    for path in [
        "/api/v1/me", "/api/v1/members/{id}", "/api/v1/api-keys", "/api/v1/secrets/{id}/rotate",
        "/api/v1/model-profiles/{id}", "/api/v1/agents", "/api/v1/agents/{id}/publish",
        "/api/v1/agents/{id}/diff", "/api/v1/agents/{id}/environments/{name}/promote",
        "/api/v1/agents/{id}/export", "/api/v1/agents/import", "/api/v1/agents/{id}/grants/{user_id}",
        "/api/v1/conversations/{conversation_id}/workspace", "/api/v1/conversations/{conversation_id}/workspace/raw",
        "/api/v1/agents/{id}/environments/{name}/rollouts",
        "/api/v1/agents/{id}/environments/{name}/rollouts/{rollout_id}",
        "/api/v1/agents/{id}/environments/{name}/rollouts/{rollout_id}/promote",
        "/api/v1/conversations/{conversation_id}", "/api/v1/conversations/{conversation_id}/branch",
        "/api/v1/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "/api/v1/conversations/{conversation_id}/messages/{message_id}/feedback",
    ]:
        assert path in doc["paths"], path
    assert doc["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http", "scheme": "bearer",
        "description": "An API key (aos_…) created at /api/v1/api-keys. It acts in its own organization.",
    }
    metrics = doc["components"]["schemas"]["RolloutMetrics"]["properties"]
    assert set(metrics) == {"base", "candidate", "comparison", "comparisons", "next_step"}
    assert "p_value" in doc["components"]["schemas"]["RolloutComparison"]["properties"]
    assert set(doc["components"]["schemas"]["RolloutComparisons"]["properties"]) == {
        "failed", "guardrail_blocked", "approval_rejected", "thumbs_down"}
    assert "/api/v1/agents/{agent_id}/replay-gate" in doc["paths"]
    secret_props = doc["components"]["schemas"]["Secret"]["properties"]
    assert "value" not in secret_props and "ciphertext" not in secret_props
    # The secret kinds the API takes, a Codex ChatGPT sign-in among them (issue 46 §4).
    kinds = json.dumps(doc["components"]["schemas"])
    assert '"codex_chatgpt"' in kinds


def test_the_trailing_slash_form_answers_too_but_is_not_in_the_schema(org, owner, api_as):
    client = api_as(owner, org)
    assert client.get("/api/v1/agents/").status_code == 200
    assert client.post("/api/v1/agents/", {"name": "Slash"}, format="json").status_code == 201
    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert "/api/v1/agents/" not in doc["paths"] and "/api/v1/agents" in doc["paths"]
