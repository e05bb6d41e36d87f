"""Numbers past what a column (or a budget) can hold are refused in the envelope — never a database error
(500) and never silently accepted."""

from __future__ import annotations

import json

import pytest

from agents.models import Agent, AgentVersion, ModelProfile
from tests.api.conftest import make_agent

INT32_MAX = 2**31 - 1


def _post_json(client, url: str, raw: str):
    """A raw JSON body: 1E+400 must reach the parser as written, not as Python's float('inf')."""
    return client.generic("POST", url, raw, content_type="application/json")


def _patch_json(client, url: str, raw: str):
    return client.generic("PATCH", url, raw, content_type="application/json")


# ------------------------------------------------------------------ model profile context_window


@pytest.mark.parametrize("window", [2**31, 2**63, -1, 0])
def test_a_context_window_the_column_cannot_hold_is_a_400_naming_the_field(org, owner, api_as, window):
    response = api_as(owner, org).post("/api/v1/model-profiles", {"label": "big", "provider": "demo", "model": "demo",
                                                                   "context_window": window}, format="json")
    assert response.status_code == 400
    assert "context_window" in response.json()["error"]["details"]
    assert not ModelProfile.objects.filter(label="big").exists()


def test_the_largest_context_window_the_column_holds_is_accepted(org, owner, api_as):
    response = api_as(owner, org).post("/api/v1/model-profiles", {"label": "max", "provider": "demo", "model": "demo",
                                                                   "context_window": INT32_MAX}, format="json")
    assert response.status_code == 201 and response.json()["context_window"] == INT32_MAX


def test_changing_a_context_window_past_the_column_is_refused_and_keeps_the_old_value(org, owner, api_as,
                                                                                        demo_profile):
    response = api_as(owner, org).patch(f"/api/v1/model-profiles/{demo_profile.pk}", {"context_window": 2**31},
                                        format="json")
    assert response.status_code == 400 and "context_window" in response.json()["error"]["details"]
    demo_profile.refresh_from_db()
    assert demo_profile.context_window is None


# ------------------------------------------------------------------ the spec's budget.monthly_usd


def _problems(response) -> set[str]:
    # create_agent names the field from the spec's root, update_agent from the request's: both end the same way.
    return {p["field"].removeprefix("spec.") for p in response.json()["error"]["details"]["problems"]}


@pytest.mark.parametrize("raw", ['"1E+400"', '"1e12"', "1e12", '"NaN"', '"Infinity"', '"-Infinity"', '"-1"',
                                 '"100000000"'])
def test_an_agent_budget_that_is_not_a_sane_amount_is_a_422_at_budget_monthly_usd(org, owner, api_as, raw):
    body = '{"name": "Budgeted", "spec": {"name": "Budgeted", "budget": {"monthly_usd": ' + raw + "}}}"
    response = _post_json(api_as(owner, org), "/api/v1/agents", body)
    assert response.status_code == 422, response.content
    assert _problems(response) == {"budget.monthly_usd"}
    assert not Agent.objects.filter(name="Budgeted").exists()


def test_a_json_number_too_large_for_a_float_is_a_400_naming_the_spec(org, owner, api_as):
    # 1E+400 parses to float('inf'): the spec field refuses it before the spec is read.
    body = '{"name": "Budgeted", "spec": {"name": "Budgeted", "budget": {"monthly_usd": 1E+400}}}'
    response = _post_json(api_as(owner, org), "/api/v1/agents", body)
    assert response.status_code == 400 and "spec" in response.json()["error"]["details"]
    assert not Agent.objects.filter(name="Budgeted").exists()


def test_a_bare_nan_literal_in_json_is_a_parse_error_not_an_accepted_budget(org, owner, api_as):
    body = '{"name": "Budgeted", "spec": {"name": "Budgeted", "budget": {"monthly_usd": NaN}}}'
    response = _post_json(api_as(owner, org), "/api/v1/agents", body)
    assert response.status_code == 400 and response.json()["error"]["code"] == "parse_error"
    assert not Agent.objects.filter(name="Budgeted").exists()


def test_editing_a_draft_to_an_unbounded_budget_is_refused_and_the_draft_is_unchanged(org, owner, api_as):
    agent = make_agent(owner, org, name="Capped", budget={"monthly_usd": "5"})
    body = json.dumps({"spec": {"name": "Capped", "budget": {"monthly_usd": "1E+400"}}})
    response = _patch_json(api_as(owner, org), f"/api/v1/agents/{agent.pk}", body)
    assert response.status_code == 422 and _problems(response) == {"budget.monthly_usd"}
    agent.refresh_from_db()
    assert agent.draft_spec["budget"]["monthly_usd"] == "5"
    assert not AgentVersion.objects.filter(agent=agent).exists()


@pytest.mark.parametrize("amount", ["0", "0.0001", "250.50", "99999999.9999"])
def test_an_ordinary_budget_is_kept(org, owner, api_as, amount):
    body = json.dumps({"name": "Fine", "spec": {"name": "Fine", "budget": {"monthly_usd": amount}}})
    response = _post_json(api_as(owner, org), "/api/v1/agents", body)
    assert response.status_code == 201, response.content
    assert response.json()["draft_spec"]["budget"]["monthly_usd"] == amount


# ------------------------------------------------------------------ ids that are integers


@pytest.mark.parametrize("user_id", [2**63, -(2**63) - 1, 2**100])
def test_an_agent_grant_for_a_user_id_past_the_column_is_a_400(org, owner, api_as, user_id):
    agent = make_agent(owner, org, name="Shared")
    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/grants", {"user_id": user_id, "level": "view"},
                                       format="json")
    assert response.status_code == 400 and "user_id" in response.json()["error"]["details"]


@pytest.mark.parametrize("version", [2**31, 2**63, 0])
def test_promoting_a_version_number_past_the_column_is_a_400(org, owner, api_as, published_agent, version):
    response = api_as(owner, org).post(f"/api/v1/agents/{published_agent.pk}/environments/production/promote",
                                       {"version": version}, format="json")
    assert response.status_code == 400 and "version" in response.json()["error"]["details"]
    assert published_agent.environments.get(name="production").version.number == 1
