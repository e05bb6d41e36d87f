"""YAML export → import round trip, refusal of unknown fields and dangling references; readable diffs."""

from __future__ import annotations

import yaml

from agenticos import services as kernel
from agents.models import Agent
from tests.api.conftest import actor_of, make_agent


def _import(client, text, **extra):
    return client.post("/api/v1/agents/import", {"yaml": text, **extra}, format="json")


def test_export_then_import_round_trips_the_spec(org, owner, demo_profile, api_as):
    secret = kernel.create_secret(actor=actor_of(owner, org), name="tz-key", value="secret-value-1234567")
    agent = make_agent(
        owner, org, name="Round Trip", slug="round-trip", profile=demo_profile,
        instructions="Line one.\nLine two: with a colon.\n",
        capabilities=[{"id": "clock", "config": {"timezone": "Europe/Madrid"}, "approval": "never",
                       "secret_id": str(secret.pk)}],
        model_settings={"temperature": 0.3},
    )
    client = api_as(owner, org)
    exported = client.get(f"/api/v1/agents/{agent.pk}/export")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("application/yaml")
    text = exported.content.decode()
    assert "secret-value" not in text
    assert "instructions: |" in text  # long text reads as a block

    copy = text.replace("slug: round-trip", "slug: round-trip-copy")
    response = _import(client, copy)
    assert response.status_code == 201, response.content
    imported = Agent.objects.get(pk=response.json()["id"])
    assert imported.draft_spec == agent.draft_spec
    assert imported.slug == "round-trip-copy" and imported.owner == owner


def test_a_raw_yaml_body_is_accepted_too(org, owner, api_as):
    agent = make_agent(owner, org, slug="raw")
    client = api_as(owner, org)
    text = client.get(f"/api/v1/agents/{agent.pk}/export").content.decode().replace("slug: raw", "slug: raw-2")
    response = client.post("/api/v1/agents/import", text.encode(), content_type="application/yaml")
    assert response.status_code == 201, response.content


def test_importing_the_same_slug_again_is_a_409_naming_slug(org, owner, api_as):
    agent = make_agent(owner, org, slug="once")
    client = api_as(owner, org)
    text = client.get(f"/api/v1/agents/{agent.pk}/export").content.decode()
    response = _import(client, text)
    assert response.status_code == 409 and response.json()["error"]["details"] == {"field": "slug"}


def test_import_into_an_existing_agent_replaces_its_draft(org, owner, api_as):
    agent = make_agent(owner, org, slug="target")
    client = api_as(owner, org)
    doc = yaml.safe_load(client.get(f"/api/v1/agents/{agent.pk}/export").content)
    doc["spec"]["instructions"] = "Replaced."
    response = _import(client, yaml.safe_dump(doc), agent_id=str(agent.pk))
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.draft_spec["instructions"] == "Replaced."


def test_import_refuses_unknown_fields_naming_each(org, owner, api_as):
    text = yaml.safe_dump({
        "kind": "agent", "slug": "typo", "colour": "blue",
        "spec": {"name": "Typo", "instructoins": "oops", "capabilities": [{"id": "clock", "confg": {}}]},
    })
    response = _import(api_as(owner, org), text)
    assert response.status_code == 422
    fields = {p["field"] for p in response.json()["error"]["details"]["problems"]}
    assert fields == {"colour"}
    text = yaml.safe_dump({
        "kind": "agent", "slug": "typo",
        "spec": {"name": "Typo", "instructoins": "oops", "capabilities": [{"id": "clock", "confg": {}}]},
    })
    response = _import(api_as(owner, org), text)
    problems = response.json()["error"]["details"]["problems"]
    assert {(p["field"], p["message"]) for p in problems} == {
        ("spec.instructoins", "Unknown field."),
        ("spec.capabilities[clock].confg", "Unknown field."),
    }
    assert not Agent.objects.filter(slug="typo").exists()


def test_import_refuses_dangling_references_naming_them(org, owner, outsider, outsider_org, api_as):
    from agents import services

    their_profile = services.create_model_profile(actor=actor_of(outsider, outsider_org), label="theirs",
                                                  provider="demo", model="demo")
    their_secret = kernel.create_secret(actor=actor_of(outsider, outsider_org), name="s", value="v-123456789012")
    text = yaml.safe_dump({"kind": "agent", "slug": "dangling", "spec": {
        "name": "Dangling",
        "model_profile_id": str(their_profile.pk),
        "capabilities": [{"id": "clock", "secret_id": str(their_secret.pk)}],
        "collection_ids": ["33333333-3333-3333-3333-333333333333"],
    }})
    response = _import(api_as(owner, org), text)
    assert response.status_code == 422
    problems = {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}
    assert set(problems) == {"spec.model_profile_id", "spec.capabilities[clock].secret_id", "spec.collection_ids[0]"}
    assert str(their_profile.pk) in problems["spec.model_profile_id"]
    assert "33333333-3333-3333-3333-333333333333" in problems["spec.collection_ids[0]"]


def test_malformed_yaml_is_a_422_with_the_line(org, owner, api_as):
    response = _import(api_as(owner, org), "kind: agent\nspec: [unclosed\n")
    assert response.status_code == 422 and "line" in response.json()["error"]["message"]


def test_the_diff_names_the_changed_fields(org, owner, published_agent, api_as):
    client = api_as(owner, org)
    spec = {
        **published_agent.draft_spec,
        "instructions": "Be helpful.\nAnswer in Spanish.",
        "capabilities": [{"id": "clock", "config": {"timezone": "Europe/Madrid"}}],
        "model_settings": {"temperature": 0.2},
    }
    client.patch(f"/api/v1/agents/{published_agent.pk}", {"spec": spec}, format="json")
    client.post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json")
    spec["capabilities"] = [{"id": "clock", "config": {"timezone": "UTC"}}]
    client.patch(f"/api/v1/agents/{published_agent.pk}", {"spec": spec}, format="json")
    client.post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json")

    first = client.get(f"/api/v1/agents/{published_agent.pk}/diff?from=1&to=2").json()
    assert first["from"] == "v1" and first["to"] == "v2"
    assert set(first["changed_paths"]) == {"instructions", "capabilities[clock]", "model_settings.temperature"}
    assert first["text_diffs"][0]["path"] == "instructions"
    assert "+Answer in Spanish." in first["text_diffs"][0]["diff"]

    second = client.get(f"/api/v1/agents/{published_agent.pk}/diff?from=2&to=3").json()
    assert second["changes"] == [
        {"path": "capabilities[clock].config.timezone", "before": "Europe/Madrid", "after": "UTC"}
    ]
    # Environment names and "draft" work as ends too: production is still on v1.
    against_draft = client.get(f"/api/v1/agents/{published_agent.pk}/diff?from=production&to=draft").json()
    assert against_draft["from"] == "v1" and against_draft["to"] == "draft"
    assert set(against_draft["changed_paths"]) == {"instructions", "capabilities[clock]", "model_settings.temperature"}
    assert client.get(f"/api/v1/agents/{published_agent.pk}/diff?from=1&to=7").status_code == 404
