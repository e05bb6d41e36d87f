"""Custom REST tools at runtime: request shape, credential injection per family, failures, big responses."""

from __future__ import annotations

import json

import pytest

from tests import factories
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync

pytestmark = pytest.mark.usefixtures("tool_capabilities", "local_allowed")

FAMILIES = {
    "bearer": {"family": "header", "header_name": "Authorization", "prefix": "Bearer "},
    "apikey": {"family": "header", "header_name": "X-API-Key", "prefix": ""},
    "query": {"family": "query", "query_name": "api_key"},
    "hmac": {"family": "hmac"},
    "jwt": {"family": "jwt", "jwt_claims": {"sub": "agenticos"}},
}


def _binding(*tools, **config):
    return {"id": "custom_tools", "config": {"tool_ids": [str(t.pk) for t in tools], **config}}


def _text(outcome) -> str:
    return json.dumps([m for m in outcome.messages], default=str)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_auth_family_authenticates_against_the_provider_and_the_secret_never_reaches_the_model(
    db, org, rest_api, family
):
    secret = factories.secret(org, value=rest_api.secret)
    tool = factories.custom_tool(org, alias=f"call_{family}", url=f"{rest_api.base}/auth/{family}",
                                 method="POST" if family == "hmac" else "GET", auth=FAMILIES[family],
                                 credential=secret,
                                 parameters=[{"name": "note", "location": "body" if family == "hmac" else "query",
                                              "type": "string"}])
    outcome = run_sync(spec(_binding(tool)), [(tool.alias, {"note": "hello"})], org_id=str(org.pk))
    (result,) = outcome.returns
    assert result["status"] == 200 and result["body"]["ok"] is True, result
    assert rest_api.secret not in _text(outcome)
    # The provider echoed its headers/query back: the credential in them is hidden, not passed on.
    if family in ("bearer", "apikey", "query"):
        assert "[credential hidden]" in json.dumps(result)


def test_a_wrong_credential_is_a_refusal_not_a_retry(db, org, rest_api):
    secret = factories.secret(org, value="sk-wrong-value-000000000")
    tool = factories.custom_tool(org, alias="bearer_call", url=f"{rest_api.base}/auth/bearer",
                                 auth=FAMILIES["bearer"], credential=secret)
    outcome = run_sync(spec(_binding(tool)), [("bearer_call", {})], org_id=str(org.pk))
    assert outcome.returns[0].startswith("Refused: The service refused the credential (HTTP 401)")
    assert outcome.retries == []


def test_ai_visible_and_fixed_parameters_build_path_query_header_and_named_body_fields(db, org, rest_api):
    tool = factories.custom_tool(
        org, alias="update_contact", method="PATCH", url=f"{rest_api.base}/echo/{{contact_id}}",
        parameters=[
            {"name": "contact_id", "location": "path", "type": "string", "required": True},
            {"name": "verbose", "location": "query", "type": "boolean", "mode": "fixed", "value": True},
            {"name": "X-Source", "location": "header", "type": "string", "mode": "fixed", "value": "agent"},
            {"name": "properties.email", "location": "body", "type": "string", "required": True},
            {"name": "properties.age", "location": "body", "type": "integer"},
        ],
    )
    outcome = run_sync(spec(_binding(tool)),
                       [("update_contact", {"contact_id": "a/b", "properties__email": "x@y.z", "properties__age": 4})],
                       org_id=str(org.pk))
    offered = outcome.script.requests[0].function_tools
    schema = next(t for t in offered if t.name == "update_contact").parameters_json_schema
    assert set(schema["properties"]) == {"contact_id", "properties__email", "properties__age"}  # fixed ones hidden
    body = outcome.returns[0]["body"]
    assert body["method"] == "PATCH"
    assert body["path"] == "/echo/a%2Fb"
    assert body["query"] == {"verbose": ["true"]}
    assert body["headers"]["X-Source"] == "agent"
    assert body["json"] == {"properties": {"email": "x@y.z", "age": 4}}


def test_a_missing_required_argument_asks_the_model_to_call_again(db, org, rest_api):
    tool = factories.custom_tool(org, alias="get_contact", url=f"{rest_api.base}/contacts/{{contact_id}}",
                                 parameters=[{"name": "contact_id", "location": "path", "required": True}])
    outcome = run_sync(spec(_binding(tool)), [("get_contact", {}), ("get_contact", {"contact_id": "999"})],
                       org_id=str(org.pk))
    assert "Missing required argument(s): contact_id" in outcome.retries[0]
    assert "HTTP 404" in outcome.retries[1]  # a 404 is the model's argument: retry, naming the status


def test_server_errors_are_transient_and_invalid_json_is_bad_news(db, org, rest_api):
    broken = factories.custom_tool(org, alias="broken", url=f"{rest_api.base}/status/503")
    badjson = factories.custom_tool(org, alias="badjson", url=f"{rest_api.base}/badjson")
    outcome = run_sync(spec(_binding(broken, badjson)), [("broken", {}), ("badjson", {})], org_id=str(org.pk))
    assert "HTTP 503" in outcome.retries[0] and "temporary" in outcome.retries[0]
    assert any("not valid JSON" in str(r) for r in outcome.returns)


def test_a_slow_provider_times_out_as_a_transient_failure(db, org, rest_api):
    tool = factories.custom_tool(org, alias="slow", url=f"{rest_api.base}/slow?secs=3", timeout_secs=0.5)
    outcome = run_sync(spec(_binding(tool)), [("slow", {})], org_id=str(org.pk))
    assert "did not answer within 0.5 seconds" in outcome.retries[0]


def test_a_big_response_reaches_the_agent_as_a_preview_and_a_handle_it_can_read(db, org, rest_api):
    import re

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from agents.run_handle import RunDeps
    from capabilities import registry
    from tests.capabilities.helpers import deps

    tool = factories.custom_tool(org, alias="big", url=f"{rest_api.base}/big?kb=200")
    seen: list[str] = []

    def model(messages, info):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("big", {}, tool_call_id="c1")])
        seen.append(str(returns[-1].content))
        if len(returns) == 1:
            handle = re.search(r"handle '([^']+)'", seen[0]).group(1)
            return ModelResponse(parts=[ToolCallPart("read_tool_result", {"handle": handle, "pattern": '"i": 1999'},
                                                     tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("done")])

    run_deps = deps(organization_id=str(org.pk))
    built = registry.build_for_run(spec(_binding(tool)), run_deps, str(org.pk))
    agent = Agent(FunctionModel(model), deps_type=RunDeps, toolsets=built.toolsets, capabilities=built.capabilities)
    import asyncio

    asyncio.run(agent.run("go", deps=run_deps))
    preview, slice_ = seen
    assert len(preview) < 25_000 and "read_tool_result" in preview
    assert '"i": 1999' in slice_ and len(slice_) < 2_000


def test_warnings_travel_in_the_description_the_agent_reads(db, org, rest_api):
    tool = factories.custom_tool(org, alias="jobs", url=f"{rest_api.base}/jobs", method="POST",
                                 warnings=[{"level": "critical", "text": "Returns a job id; poll get_job_result."}],
                                 usage_notes="Submit a report job.")
    outcome = run_sync(spec(_binding(tool)), [], org_id=str(org.pk))
    (offered,) = [t for t in outcome.script.requests[0].function_tools if t.name == "jobs"]
    assert "[critical] Returns a job id; poll get_job_result." in offered.description
    assert "Submit a report job." in offered.description


def test_another_organizations_tool_is_never_offered(db, org, outsider_org, rest_api):
    foreign = factories.custom_tool(outsider_org, alias="foreign", url=f"{rest_api.base}/echo")
    outcome = run_sync(spec(_binding(foreign)), [], org_id=str(org.pk))
    assert "foreign" not in outcome.script.offered


def test_a_tool_pointed_at_the_metadata_address_is_refused_without_a_request(db, org):
    tool = factories.custom_tool(org, alias="meta", url="http://169.254.169.254/latest/meta-data/")
    outcome = run_sync(spec(_binding(tool)), [("meta", {})], org_id=str(org.pk))
    assert outcome.returns[0].startswith("Refused:") and "cloud metadata" in outcome.returns[0]


def test_a_redirect_to_another_origin_does_not_carry_the_api_key_header(db, org, rest_api, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1", "localhost"]
    secret = factories.secret(org, value=rest_api.secret)
    target = f"http://localhost:{rest_api.port}/echo"
    tool = factories.custom_tool(org, alias="hop", url=f"{rest_api.base}/redirect?to={target}",
                                 auth=FAMILIES["apikey"], credential=secret)
    outcome = run_sync(spec(_binding(tool)), [("hop", {})], org_id=str(org.pk))
    assert outcome.returns[0]["status"] == 200
    first, second = rest_api.requests
    assert first.headers["X-API-Key"] == rest_api.secret
    assert "X-API-Key" not in second.headers
