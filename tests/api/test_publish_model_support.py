"""Publish refuses a binding that can never run on the draft's model, naming the field: native web search or a
named tool-search algorithm on a provider without them, Reasoning on a model that does not reason. What the
model can do is pydantic-ai's answer for that provider and model name (no request is sent)."""

from __future__ import annotations

import pytest

from agents.models import AgentVersion
from tests import factories
from tests.api.conftest import make_agent

pytestmark = pytest.mark.django_db


def _publish(client, agent):
    return client.post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")


def _problems(response) -> dict[str, str]:
    assert response.status_code == 422, response.content
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


@pytest.fixture
def gpt4o(org):
    return factories.model_profile(org, "openai", "gpt-4o", label="Everyday", api_key="sk-test-000000000000")


@pytest.fixture
def sonnet(org):
    return factories.model_profile(org, "anthropic", "claude-sonnet-4-5", label="Deep",
                                   api_key="sk-ant-test-000000000000")


def test_native_search_tool_search_and_reasoning_on_a_model_without_them_are_refused_by_field(
        org, builder, gpt4o, api_as):
    agent = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "web_research", "config": {"method": "native"}},
        {"id": "tool_search", "config": {"strategy": "bm25"}},
        {"id": "thinking", "config": {"effort": "high"}},
    ])

    problems = _problems(_publish(api_as(builder, org), agent))

    assert "cannot search the web itself" in problems["capabilities[web_research].config.method"]
    assert "no native tool search" in problems["capabilities[tool_search].config.strategy"]
    assert "not a reasoning model" in problems["capabilities[thinking].id"]
    assert "Everyday" in problems["capabilities[thinking].id"]
    assert not AgentVersion.objects.filter(agent=agent).exists()


def test_native_web_fetch_on_a_model_that_does_not_fetch_is_refused_and_auto_is_not(org, builder, gpt4o, sonnet,
                                                                                    api_as):
    """The same promise for reading pages (spec: native "solo en modelos que lo admiten; Pydantic AI lanza un error
    en el resto"); auto falls back to this deployment's fetch by itself."""
    client = api_as(builder, org)
    native = make_agent(builder, org, profile=gpt4o, capabilities=[{"id": "web_fetch", "config": {"method": "native"}}])
    message = _problems(_publish(client, native))["capabilities[web_fetch].config.method"]
    assert "“Everyday” (gpt-4o) cannot fetch web pages itself" in message
    assert not AgentVersion.objects.filter(agent=native).exists()
    auto = make_agent(builder, org, profile=gpt4o, capabilities=[{"id": "web_fetch", "config": {"method": "auto"}}])
    assert _publish(client, auto).status_code == 201
    fetching = make_agent(builder, org, profile=sonnet,
                          capabilities=[{"id": "web_fetch", "config": {"method": "native"}}])
    assert _publish(client, fetching).status_code == 201


def test_the_same_bindings_publish_on_a_model_that_has_them(org, builder, sonnet, api_as):
    agent = make_agent(builder, org, profile=sonnet, capabilities=[
        {"id": "web_research", "config": {"method": "native"}},
        {"id": "tool_search", "config": {"strategy": "regex"}},
        {"id": "thinking", "config": {"effort": "high"}},
    ])
    response = _publish(api_as(builder, org), agent)
    assert response.status_code == 201, response.content


def test_what_works_everywhere_is_not_refused(org, builder, gpt4o, api_as):
    """`auto` search, a search method run here, and a switched-off Reasoning never fail a run."""
    agent = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "web_research", "config": {"method": "duckduckgo"}},
        {"id": "tool_search", "config": {"strategy": "auto"}},
        {"id": "thinking", "enabled": False},
    ])
    assert _publish(api_as(builder, org), agent).status_code == 201


def test_a_reasoning_model_of_the_same_provider_takes_reasoning(org, builder, api_as):
    o3 = factories.model_profile(org, "openai", "o3-mini", api_key="sk-test-000000000000")
    agent = make_agent(builder, org, profile=o3, capabilities=[{"id": "thinking"}])
    assert _publish(api_as(builder, org), agent).status_code == 201


def test_another_organizations_profile_is_a_missing_reference_not_judged(org, builder, outsider_org, api_as):
    theirs = factories.model_profile(outsider_org, "openai", "gpt-4o", api_key="sk-test-000000000000")
    agent = make_agent(builder, org, profile=theirs, capabilities=[{"id": "thinking"}])

    problems = _problems(_publish(api_as(builder, org), agent))

    assert "model_profile_id" in problems
    assert "capabilities[thinking].id" not in problems


def test_a_browse_web_whose_step_model_is_the_demo_model_is_refused_naming_the_step_model_field(
        org, builder, gpt4o, api_as, settings):
    """The demo model answers with canned text and never calls the step tool: browse_web would spend every step."""
    settings.BROWSER_CDP_URL = "http://browser:9222"  # a browser service the operator runs and allows
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["browser"]
    demo = factories.model_profile(org, "demo", "demo", label="Demo")
    client = api_as(builder, org)
    on_demo = make_agent(builder, org, profile=demo, capabilities=[{"id": "browser_use", "config": {"max_steps": 30}}])
    problems = _problems(_publish(client, on_demo))
    message = problems["capabilities[browser_use].config.step_model_profile_id"]
    assert "The agent's model" in message and "“Demo” is the demo model" in message and "all 30 steps" in message

    demo_steps = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "browser_use", "config": {"step_model_profile_id": str(demo.pk)}}])
    message = _problems(_publish(client, demo_steps))["capabilities[browser_use].config.step_model_profile_id"]
    assert message.startswith("The step model “Demo” is the demo model")

    # A real step model fixes both; a switched-off browser is not judged.
    real_steps = make_agent(builder, org, profile=demo, capabilities=[
        {"id": "browser_use", "config": {"step_model_profile_id": str(gpt4o.pk)}}])
    assert _publish(client, real_steps).status_code == 201, _publish(client, real_steps).content
    off = make_agent(builder, org, profile=demo, capabilities=[{"id": "browser_use", "enabled": False}])
    assert _publish(client, off).status_code == 201


def test_another_organizations_step_model_is_a_missing_reference_not_judged(org, builder, gpt4o, outsider_org, api_as):
    theirs = factories.model_profile(outsider_org, "demo", "demo", label="Theirs")
    agent = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "browser_use", "config": {"step_model_profile_id": str(theirs.pk)}}])
    problems = _problems(_publish(api_as(builder, org), agent))
    field = "capabilities[browser_use].config.step_model_profile_id"
    assert problems[field] == "No such chat model profile in this organization."  # not "is the demo model"


def test_a_step_model_that_takes_no_tools_is_refused_as_one_that_cannot_choose_a_step(org, builder, gpt4o, api_as,
                                                                                      settings):
    """A step is a tool call: a model pydantic-ai's profile says takes no tools (an image model through OpenRouter)
    would answer every step with something that is not one, as the demo model does."""
    settings.BROWSER_CDP_URL = "http://browser:9222"
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["browser"]
    painter = factories.model_profile(org, "openrouter", "google/gemini-2.5-flash-image", label="Painter",
                                      api_key="sk-or-test-000000000000")
    client = api_as(builder, org)
    agent = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "browser_use", "config": {"step_model_profile_id": str(painter.pk), "max_steps": 12}}])

    message = _problems(_publish(client, agent))["capabilities[browser_use].config.step_model_profile_id"]

    assert message.startswith("The step model “Painter” (google/gemini-2.5-flash-image) is a model that takes no tools")
    assert "all 12 steps" in message
    assert not AgentVersion.objects.filter(agent=agent).exists()
    # The same provider's chat model takes tools: published.
    chat = factories.model_profile(org, "openrouter", "openai/gpt-4o", label="Router chat",
                                   api_key="sk-or-test-000000000000")
    fixed = make_agent(builder, org, profile=gpt4o, capabilities=[
        {"id": "browser_use", "config": {"step_model_profile_id": str(chat.pk)}}])
    assert _publish(client, fixed).status_code == 201
