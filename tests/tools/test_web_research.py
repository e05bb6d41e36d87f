"""web_search: the paid providers' real request shapes against a local fake; keys never in results.
(duckduckgo runs against a local fake of its HTML endpoint in test_web_research_duckduckgo.py.)"""

from __future__ import annotations

import json

import pytest

from agents.spec import CapabilityBinding
from capabilities import registry
from capabilities.web_research.capability import WebResearchConfig, binding_problems
from tests import factories
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync


@pytest.fixture(autouse=True)
def _endpoints(settings, tool_capabilities, rest_api):
    settings.WEB_SEARCH_ENDPOINTS = {m: f"{rest_api.base}/search/{m}" for m in ("tavily", "brave", "exa")}


@pytest.mark.parametrize("method,auth_header", [("tavily", "Authorization"), ("brave", "X-Subscription-Token"),
                                                ("exa", "x-api-key")])
def test_each_paid_provider_gets_its_own_request_shape_and_the_key_stays_out_of_results(
    db, org, rest_api, method, auth_header
):
    key = factories.secret(org, value=rest_api.secret)
    binding = {"id": "web_research", "config": {"method": method, "max_results": 3}, "secret_id": str(key.pk)}
    outcome = run_sync(spec(binding), [("web_search", {"query": "django 6 release"})], org_id=str(org.pk))
    (results,) = outcome.returns
    assert [r["url"] for r in results] == ["https://example.com/1", "https://example.com/2", "https://example.com/3"]
    assert results[0]["snippet"] == "Snippet 1"
    request = rest_api.requests[-1]
    assert rest_api.secret in request.headers[auth_header]
    if method == "brave":
        assert request.method == "GET" and request.query == {"q": ["django 6 release"], "count": ["3"]}
    else:
        body = json.loads(request.body)
        assert body["query"] == "django 6 release"
        assert body.get("max_results", body.get("numResults")) == 3
    assert rest_api.secret not in json.dumps(outcome.messages, default=str)


def test_a_rejected_key_is_a_refusal(db, org, rest_api):
    key = factories.secret(org, value="tvly-wrong-key-000000")
    binding = {"id": "web_research", "config": {"method": "tavily"}, "secret_id": str(key.pk)}
    outcome = run_sync(spec(binding), [("web_search", {"query": "x"})], org_id=str(org.pk))
    assert outcome.returns[0].startswith("Refused: The Tavily key was rejected (HTTP 401)")


def test_a_paid_method_without_a_key_is_refused_at_publish_and_left_out_of_a_run(db, org):
    the_spec = spec({"id": "web_research", "config": {"method": "exa"}})
    problems = registry.validate_bindings(the_spec, organization=org, can_view_secret=lambda s: True)
    assert any(p["field"] == "capabilities.0.secret_id" for p in problems)
    from tests.capabilities.helpers import deps

    built = registry.build_for_run(the_spec, deps(organization_id=str(org.pk)))
    assert "web_research" in built.skipped


def test_duckduckgo_is_the_default_and_needs_no_key(db, org):
    assert WebResearchConfig().method == "duckduckgo"
    problems = registry.validate_bindings(spec({"id": "web_research"}), organization=org, can_view_secret=lambda s: True)
    assert problems == []
    labels = WebResearchConfig.model_json_schema()["properties"]["method"]["x-enum-labels"]
    assert labels["exa"] == "Exa" and labels["duckduckgo"] == "DuckDuckGo"


def test_approval_with_native_search_is_refused():
    binding = CapabilityBinding(id="web_research", config={"method": "native"}, tool_approval={"web_search": "required"})
    assert binding_problems(binding, WebResearchConfig(method="native"))
    assert not binding_problems(binding, WebResearchConfig(method="brave"))


@pytest.mark.parametrize("value", [0, 11])
def test_max_results_is_between_1_and_10(value):
    with pytest.raises(ValueError):
        WebResearchConfig(max_results=value)
