"""The schema tells the truth: real responses of the runs, conversations, approvals and export endpoints
validate against what /api/schema/ documents for them (a page of items that each carry agent_id, the run
result with its error, the export as the YAML mapping it is) — and an outsider's page is empty."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from agents.models import Conversation, Environment
from agents.runs import start_run
from governance.models import Approval

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema_doc(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


def _json_schema(node):
    """OpenAPI 3.0 → JSON Schema: `nullable: true` becomes "or null" (jsonschema ignores the keyword)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def documented(doc: dict, path: str, method: str, status: str, media: str = "application/json") -> dict:
    operation = (doc["paths"].get(path) or doc["paths"][path + "/"])[method]
    schema = copy.deepcopy(operation["responses"][status]["content"][media]["schema"])
    return {**_json_schema(schema), "components": _json_schema(doc["components"])}


def assert_matches(doc, path, method, status, body, media="application/json"):
    jsonschema.validate(body, documented(doc, path, method, status, media))


@pytest.fixture
def activity(org, owner, published_agent):
    """One run in a conversation of the owner's, parked on one approval."""
    conversation = Conversation.objects.create(organization=org, agent=published_agent, owner=owner, surface="web")
    version = Environment.objects.get(agent=published_agent, name="production").version
    run = start_run(agent=published_agent, version=version, surface="web", prompt="Send it", user=owner,
                    acting_role="owner", conversation=conversation, enqueue=False)
    approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="t",
                                       tool_name="send_email", args={"to": "ceo@example.com"})
    return {"run": run, "conversation": conversation, "approval": approval, "agent": published_agent}


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/conversations", "/api/v1/approvals"])
def test_each_list_is_the_documented_page_and_its_items_carry_agent_id(schema_doc, api_as, owner, org, activity,
                                                                       path):
    body = api_as(owner, org).get(path).json()
    assert body["count"] == 1 and body["results"][0]["agent_id"] == str(activity["agent"].pk)
    assert_matches(schema_doc, path, "get", "200", body)
    item = documented(schema_doc, path, "get", "200")
    page = item["components"]["schemas"][item["$ref"].rsplit("/", 1)[1]]
    ref = page["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[1]
    assert "agent_id" in schema_doc["components"]["schemas"][ref]["required"]


def test_a_schema_that_documents_a_single_object_would_fail_this_check(schema_doc, api_as, owner, org, activity):
    # The check has teeth: the runs page does not validate as one Run, which is what the schema used to say.
    body = api_as(owner, org).get("/api/v1/runs").json()
    single = {"$ref": "#/components/schemas/Run", "components": _json_schema(schema_doc["components"])}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, single)


def test_one_run_one_approval_and_a_conversations_messages_match_their_schemas(schema_doc, api_as, owner, org,
                                                                               activity):
    client = api_as(owner, org)
    run, approval, conversation = activity["run"], activity["approval"], activity["conversation"]
    assert_matches(schema_doc, "/api/v1/runs/{run_id}", "get", "200", client.get(f"/api/v1/runs/{run.pk}").json())
    assert_matches(schema_doc, "/api/v1/approvals/{approval_id}", "get", "200",
                   client.get(f"/api/v1/approvals/{approval.pk}").json())
    messages = client.get(f"/api/v1/conversations/{conversation.pk}/messages").json()
    assert messages["count"] >= 1
    assert_matches(schema_doc, "/api/v1/conversations/{conversation_id}/messages", "get", "200", messages)
    questions = client.get(f"/api/v1/runs/{run.pk}/questions").json()
    assert_matches(schema_doc, "/api/v1/runs/{run_id}/questions", "get", "200", questions)


def test_stopping_a_run_answers_the_documented_run_result(schema_doc, api_as, owner, org, activity):
    response = api_as(owner, org).post(f"/api/v1/runs/{activity['run'].pk}/stop")
    assert response.status_code == 200
    assert_matches(schema_doc, "/api/v1/runs/{run_id}/stop", "post", "200", response.json())


def test_the_export_is_documented_as_the_yaml_mapping_it_returns(schema_doc, api_as, owner, org, published_agent):
    response = api_as(owner, org).get(f"/api/v1/agents/{published_agent.pk}/export")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/yaml")
    document = yaml.safe_load(response.content)
    assert isinstance(document, dict) and document["slug"] == published_agent.slug
    assert_matches(schema_doc, "/api/v1/agents/{id}/export", "get", "200", document, media="application/yaml")
    version = yaml.safe_load(api_as(owner, org).get(f"/api/v1/agents/{published_agent.pk}/export",
                                                    {"version": 1}).content)
    assert version["version"] == 1
    assert_matches(schema_doc, "/api/v1/agents/{id}/export", "get", "200", version, media="application/yaml")


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/conversations", "/api/v1/approvals"])
def test_an_outsider_gets_an_empty_page_of_the_same_shape(schema_doc, api_as, outsider, outsider_org, activity,
                                                          path):
    body = api_as(outsider, outsider_org).get(path).json()
    assert body["count"] == 0 and body["results"] == []
    assert_matches(schema_doc, path, "get", "200", body)
