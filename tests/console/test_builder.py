"""The Builder through the console: New agent from the starter template, the Toolbox drawn from the catalog,
config forms from JSON Schema, publish errors at their field, versions, YAML, and permissions."""

from __future__ import annotations

import pytest

from agents.models import Agent, AgentVersion, Environment
from capabilities import registry
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(org):
    return factories.model_profile(org, label="Demo")


def test_new_agent_starts_with_exactly_the_recommended_capabilities(client_as, org, builder, demo):
    response = client_as(builder, org).post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
    recommended = {c["id"] for c in registry.catalog_json()["capabilities"] if c["recommended"] and c["available"]}
    assert {b["id"] for b in agent.draft_spec["capabilities"]} == recommended
    assert all(b["enabled"] for b in agent.draft_spec["capabilities"])
    assert agent.draft_spec["model_profile_id"] == str(demo.pk)
    assert agent.draft_spec["instructions"].startswith("You are Support, an assistant on AgenticOS.")


def test_the_toolbox_shows_every_capability_with_badges_and_advanced_folded(client_as, org, builder, demo):
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    for entry in registry.catalog_json()["capabilities"]:
        if entry["selectable"]:
            assert f'data-capability="{entry["id"]}"' in page
    assert page.count("data-recommended") == sum(1 for c in registry.catalog_json()["capabilities"]
                                                 if c["recommended"] and c["selectable"])
    # Enum labels and ranges from the JSON Schema.
    assert ">Extra high</option>" in page
    assert 'name="config.timeout_secs"' in page and 'max="120"' in page


def test_a_config_value_is_saved_and_a_bad_one_is_shown_at_its_field(client_as, org, builder, demo):
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    client.post(f"/agents/{agent.pk}/toolbox/code_execution", {"enabled": "on", "config.timeout_secs": "30"})
    agent.refresh_from_db()
    binding = next(b for b in agent.draft_spec["capabilities"] if b["id"] == "code_execution")
    assert binding["config"] == {"timeout_secs": 30}

    client.post(f"/agents/{agent.pk}/toolbox/code_execution", {"enabled": "on", "config.timeout_secs": "999"})
    response = client.post(f"/agents/{agent.pk}/publish", {"note": "first"})
    assert response.status_code == 422
    assert not AgentVersion.objects.filter(agent=agent).exists()
    page = response.content.decode()
    field = page.split('data-config-field="timeout_secs"')[1].split("</div>")[0]
    assert "data-field-error" in field


def test_publish_promote_and_rollback_from_the_builder(client_as, org, builder, demo):
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    assert client.post(f"/agents/{agent.pk}/publish", {"note": "one"}).status_code == 302
    client.post(f"/agents/{agent.pk}/basics", {"name": "Support", "instructions": "Be brief.",
                                               "model_profile_id": str(demo.pk), "budget": "5"})
    client.post(f"/agents/{agent.pk}/publish", {"note": "two"})
    assert Environment.objects.get(agent=agent, name="production").version.number == 1
    client.post(f"/agents/{agent.pk}/promote", {"environment": "production", "version": "2"})
    assert Environment.objects.get(agent=agent, name="production").version.number == 2
    client.post(f"/agents/{agent.pk}/promote", {"environment": "production", "version": "1"})
    assert Environment.objects.get(agent=agent, name="production").version.number == 1
    diff = client.get(f"/agents/{agent.pk}/diff", {"from": "1", "to": "2"}).content.decode()
    assert "instructions" in diff and "budget.monthly_usd" in diff


def test_yaml_export_and_import_round_trip(client_as, org, builder, demo):
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    agent = Agent.objects.get(organization=org, name="Support")
    text = client.get(f"/agents/{agent.pk}/export.yaml").content.decode()
    assert "instructions" in text
    response = client.post("/agents/import", {"yaml": text.replace("slug: support", "slug: support-copy")})
    assert response.status_code == 302
    assert Agent.objects.filter(organization=org, slug="support-copy").exists()
    bad = client.post("/agents/import", {"yaml": "spec:\n  name: X\n  nonsense: 1\n"})
    assert bad.status_code == 422 and b"nonsense" in bad.content


def test_a_viewer_sees_no_edit_controls_and_every_post_is_refused(client_as, org, owner, viewer, demo):
    agent = factories.published_agent(org, owner, name="Helper")
    client = client_as(viewer, org)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert "read only" in page
    assert 'method="post"' not in page.split('id="main"')[1]
    assert client.get("/agents/").content.decode().count("Create agent") == 0
    before = dict(agent.draft_spec)
    assert client.post(f"/agents/{agent.pk}/basics", {"name": "Hacked"}).status_code == 403
    assert client.post(f"/agents/{agent.pk}/toolbox/clock", {"enabled": "on"}).status_code == 403
    assert client.post(f"/agents/{agent.pk}/publish").status_code == 403
    assert client.post(f"/agents/{agent.pk}/promote", {"environment": "production", "version": "1"}).status_code == 403
    assert client.post("/agents/new", {"name": "X"}).status_code == 403
    agent.refresh_from_db()
    assert agent.draft_spec == before


def test_another_organizations_agent_is_a_404_on_every_builder_route(client_as, org, owner, outsider_agent):
    client = client_as(owner, org)
    base = f"/agents/{outsider_agent.pk}"
    assert client.get(f"{base}/").status_code == 404
    assert client.get(f"{base}/export.yaml").status_code == 404
    assert client.get(f"{base}/diff", {"from": "1", "to": "draft"}).status_code == 404
    for route in ("basics", "toolbox/clock", "publish", "promote", "import"):
        assert client.post(f"{base}/{route}", {"name": "x"}).status_code == 404, route


@pytest.fixture
def extra_capabilities():
    """Two throwaway catalog entries: one needing an API key, one run-tuning (Advanced)."""
    from pydantic import BaseModel, Field

    from capabilities.base import Capability, KeyRequirement

    class TunedConfig(BaseModel):
        max_chars: int | None = Field(default=None, ge=100, le=1000)
        style: str = "plain"

    keyed = Capability(id="test_keyed", name="Keyed service", category="research", description="Calls a paid API.",
                       build=lambda ctx: [], tools=(), key=KeyRequirement(kind="api_key", description="an API key"))
    tuned = Capability(id="test_tuned", name="Tuned runs", category="utility", description="Tunes a run.",
                       build=lambda ctx: [], tools=(), advanced=True, config_model=TunedConfig)
    registry.register(keyed)
    registry.register(tuned)
    yield
    registry.unregister("test_keyed")
    registry.unregister("test_tuned")


def test_the_key_picker_lists_only_fitting_vault_secrets(client_as, org, builder, demo, extra_capabilities):
    fitting = factories.secret(org, name="paid-api", kind="api_key")
    factories.secret(org, name="telegram-bot", kind="bot_token")
    agent = factories.published_agent(org, builder, name="Keyed")
    page = client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    card = page.split('id="cap-test_keyed"')[1].split("</article>")[0]
    assert str(fitting.pk) in card and "paid-api" in card and "telegram-bot" not in card
    assert "sk-test-secret" not in page  # never a value, only the hint


def test_run_tuning_capabilities_stay_folded_under_advanced_until_one_is_enabled(
    client_as, org, builder, demo, extra_capabilities
):
    client = client_as(builder, org)
    agent = factories.published_agent(org, builder, name="Tuned")
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    group = page.split("data-advanced-group")[1].split(">")[0]
    assert "open" not in group and 'id="cap-test_tuned"' in page.split("data-advanced-group")[1]
    client.post(f"/agents/{agent.pk}/toolbox/test_tuned", {"enabled": "on", "config.max_chars": "500"})
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    assert "open" in page.split("data-advanced-group")[1].split(">")[0]
    # A limit that is set opens its "Advanced settings" by itself; the plain setting stays outside it.
    card = page.split('id="cap-test_tuned"')[1].split("</article>")[0]
    advanced = card.split('class="advanced-settings"')[1]
    assert advanced.split(">")[0].strip().endswith("open") and 'name="config.max_chars"' in advanced
    assert 'name="config.style"' not in advanced


def test_per_tool_approval_and_rename_are_saved_by_stable_tool_id(client_as, org, builder, demo):
    client = client_as(builder, org)
    agent = factories.published_agent(org, builder, name="Charts", capabilities=[{"id": "charts"}])
    client.post(f"/agents/{agent.pk}/toolbox/charts", {
        "enabled": "on", "approval": "default", "tool.create_chart.approval": "required",
        "tool.create_chart.name": "draw_graph", "tool.create_chart.description": "Draw a graph.",
    })
    agent.refresh_from_db()
    binding = agent.draft_spec["capabilities"][0]
    assert binding["tool_approval"] == {"create_chart": "required"}
    assert binding["tool_overrides"] == {"create_chart": {"name": "draw_graph", "description": "Draw a graph."}}
    client.post(f"/agents/{agent.pk}/toolbox/charts", {"enabled": "on", "tool.create_chart.name": "bad name!"})
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    tool_row = page.split('data-tool="create_chart"')[1].split("</article>")[0]
    assert "data-field-error" in tool_row
