"""platform_bootstrap: idempotent, and --json prints credentials that work against the API."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from agenticos.models import ApiKey, Organization, Secret, User
from agents.models import Agent, AgentVersion, ModelProfile
from agents.services import environment_version


def _bootstrap(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("platform_bootstrap", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_bootstrap_creates_everything_once_and_prints_the_password_only_the_first_time(db, capsys):
    out, _ = _bootstrap()
    assert "password:" in out
    again, _ = _bootstrap()
    assert "password:" not in again and "already exists" in again
    org = Organization.objects.get(slug="acme")
    assert org.name == "Acme"
    assert org.memberships.get().user.email == "admin@example.com"
    agent = Agent.objects.get(organization=org, slug="getting-started")
    assert AgentVersion.objects.filter(agent=agent).count() == 1
    assert ModelProfile.objects.filter(organization=org).count() == 1
    version = environment_version(agent, "production")
    assert [c["id"] for c in version.spec["capabilities"]] == [
        "clock", "charts", "code_execution", "planning", "ask_user", "sandbox", "follow_ups"
    ]
    assert ModelProfile.objects.get(pk=version.spec["model_profile_id"]).provider == "demo"
    # Follow-ups are on with the demo model, so `make run` shows the buttons.
    assert version.spec["capabilities"][-1]["config"] == {"model_profile_id": version.spec["model_profile_id"]}


def test_the_printed_password_signs_in(db, client):
    out, _ = _bootstrap()
    password = out.split("password: ", 1)[1].split()[0]
    assert User.objects.get(email="admin@example.com").check_password(password)


def test_json_prints_working_credentials_and_mints_a_fresh_key_each_call(db):
    first_out, first_err = _bootstrap("--json")
    first = json.loads(first_out)
    assert set(first) == {"organization_id", "owner_email", "api_key", "agent_id", "agent_slug", "model_profile_id"}
    assert "password:" in first_err  # human notes go to stderr so stdout stays JSON
    second = json.loads(_bootstrap("--json")[0])
    assert second["api_key"] != first["api_key"]
    assert {k: v for k, v in second.items() if k != "api_key"} == {k: v for k, v in first.items() if k != "api_key"}
    assert ApiKey.objects.filter(revoked_at__isnull=True).count() == 2

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {second['api_key']}",
                       HTTP_X_ORGANIZATION_ID=second["organization_id"])
    agent = client.get(f"/api/v1/agents/{second['agent_id']}")
    assert agent.status_code == 200
    assert agent.json()["slug"] == "getting-started" and agent.json()["access"] == "publish"
    assert client.get(f"/api/v1/model-profiles/{second['model_profile_id']}").json()["provider"] == "demo"


def test_a_real_key_creates_a_sealed_profile_and_points_the_agent_at_it(db):
    _bootstrap()
    out, err = _bootstrap("--json", "--openai-api-key", "sk-bootstrap-PLAINTEXT-0001", "--model", "gpt-4o-mini")
    assert "sk-bootstrap-PLAINTEXT-0001" not in out + err
    creds = json.loads(out)
    profile = ModelProfile.objects.get(pk=creds["model_profile_id"])
    assert (profile.provider, profile.model) == ("openai", "gpt-4o-mini")
    assert Secret.objects.get(pk=profile.secret_id).hint == "0001"
    agent = Agent.objects.get(pk=creds["agent_id"])
    production = environment_version(agent, "production")
    assert production.number == 2 and production.spec["model_profile_id"] == str(profile.pk)
    # Running it again with the same options changes nothing.
    _bootstrap("--openai-api-key", "sk-bootstrap-PLAINTEXT-0001", "--model", "gpt-4o-mini")
    assert AgentVersion.objects.filter(agent=agent).count() == 2


def test_a_base_url_creates_an_openai_compatible_profile(db, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # a local server the operator lists
    out, _ = _bootstrap("--json", "--base-url", "http://127.0.0.1:8111/v1", "--model", "local-llm")
    profile = ModelProfile.objects.get(pk=json.loads(out)["model_profile_id"])
    assert (profile.provider, profile.base_url, profile.secret_id) == (
        "openai_compatible", "http://127.0.0.1:8111/v1", None
    )


def test_a_loopback_base_url_the_operator_has_not_listed_is_a_command_error_naming_the_setting(db, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = []
    _bootstrap()
    with pytest.raises(CommandError, match="MODEL_ALLOWED_PRIVATE_HOSTS") as caught:
        _bootstrap("--openai-api-key", "sk-bootstrap-PLAINTEXT-0002", "--base-url", "http://127.0.0.1:8111/v1")
    assert "--base-url" in str(caught.value) and "sk-bootstrap-PLAINTEXT-0002" not in str(caught.value)
    # Nothing of the refused run was kept: no profile, no sealed key, the agent still on the demo model.
    org = Organization.objects.get(slug="acme")
    assert list(ModelProfile.objects.filter(organization=org).values_list("provider", flat=True)) == ["demo"]
    assert not Secret.objects.filter(organization=org).exists()
    assert AgentVersion.objects.filter(agent__organization=org).count() == 1
