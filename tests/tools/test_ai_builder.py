"""The AI builder driven by a scripted model through a whole 3-tool kit, through the one runner:
research (web_fetch of the docs), configure all, test all for real, notes, finalize — phased, ~7 steps."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from capabilities.models import CustomTool, ToolBuilderSession, ToolDraft
from tests import factories

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("tool_capabilities")]


@pytest.fixture(autouse=True)
def _deployment(settings):
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def _returns(messages, tool_name):
    return [p.content for m in messages for p in getattr(m, "parts", [])
            if isinstance(p, ToolReturnPart) and p.tool_name == tool_name and getattr(p, "outcome", None) != "retried"]


def scripted_builder(base: str, credential_id: str) -> tuple[FunctionModel, list[str]]:
    docs = f"{base}/page.html"
    steps: list[str] = []

    def definitions(drafts):
        ids = {d["name"]: d["draft_id"] for d in drafts}
        return [
            {"draft_id": ids["Create contact"], "docs_url": docs, "definition": {
                "name": "Create contact", "alias": "fake_create_contact", "method": "POST", "url": f"{base}/contacts",
                "description": "Creates a contact.", "auth": {"family": "header"},
                "parameters": [{"name": "properties.email", "location": "body", "required": True},
                               {"name": "properties.firstname", "location": "body"}]}},
            {"draft_id": ids["Get contact"], "docs_url": docs, "definition": {
                "name": "Get contact", "alias": "fake_get_contact", "method": "GET",
                "url": f"{base}/contacts/{{contact_id}}", "auth": {"family": "header"},
                "parameters": [{"name": "contact_id", "location": "path", "required": True}]}},
            {"draft_id": ids["List contacts"], "docs_url": docs, "definition": {
                "name": "List contacts", "alias": "fake_list_contacts", "method": "GET", "url": f"{base}/contacts",
                "auth": {"family": "header"},
                "parameters": [{"name": "page", "location": "query", "type": "integer"}]}},
        ]

    def decide(messages):
        started = _returns(messages, "start_kit")
        if not started:
            return "start_kit", {"name": "Fake Contacts", "provider": "FakeCRM", "credential_id": credential_id,
                                 "tools": ["Create contact", "Get contact", "List contacts"]}
        kit = started[0]
        drafts = kit["drafts"]
        ids = {d["name"]: d["draft_id"] for d in drafts}
        if not _returns(messages, "web_fetch"):
            if not any("Read the documentation first" in str(p) for m in messages for p in getattr(m, "parts", [])):
                return "configure_drafts", {"drafts": definitions(drafts)}  # too early: refused
            return "web_fetch", {"url": docs}
        if not _returns(messages, "configure_drafts"):
            return "configure_drafts", {"drafts": definitions(drafts)}
        if not _returns(messages, "test_drafts"):
            return "test_drafts", {"tests": [
                {"draft_id": ids["Create contact"], "args": {"properties__email": "ada@example.com"}},
                {"draft_id": ids["Get contact"], "args": {"contact_id": "1"}},
                {"draft_id": ids["List contacts"], "args": {"page": 1}}]}
        if not _returns(messages, "attach_notes"):
            return "attach_notes", {"notes": [
                {"draft_id": ids["List contacts"], "kind": "warning", "level": "info",
                 "text": "Paginated: pass page=N while paging.next is set."},
                {"draft_id": ids["Create contact"], "kind": "sample", "text": "A created contact"}]}
        if not _returns(messages, "finalize_kit"):
            return "finalize_kit", {"kit_id": kit["kit_id"]}
        return None

    def respond(messages, info: AgentInfo):
        step = decide(messages)
        if step is None:
            return ModelResponse(parts=[TextPart("Your kit is ready.")])
        steps.append(step[0])
        return ModelResponse(parts=[ToolCallPart(step[0], step[1], tool_call_id=f"c{len(steps)}")])

    async def stream(messages, info: AgentInfo):
        step = decide(messages)
        if step is None:
            yield "Your kit is ready."
            return
        steps.append(step[0])
        yield {0: DeltaToolCall(name=step[0], json_args=json.dumps(step[1]), tool_call_id=f"c{len(steps)}")}

    return FunctionModel(respond, stream_function=stream, model_name="scripted-builder"), steps


@pytest.mark.urls("tests.tools.urls")
def test_the_builder_builds_a_three_tool_kit_in_phases_through_the_runner(
    org, builder, api_as, rest_api, monkeypatch
):
    factories.model_profile(org)  # the builder agent runs on the organization's model
    secret = factories.secret(org, value=rest_api.secret)
    model, steps = scripted_builder(rest_api.base, str(secret.pk))
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
    client = api_as(builder, org)
    session = client.post("/api/v1/tool-kits/sessions", {"title": "CRM tools"}, format="json").json()
    started = client.post(f"/api/v1/tool-kits/sessions/{session['id']}/messages/",
                          {"prompt": "Build create/get/list contact tools for FakeCRM"}, format="json")
    assert started.status_code == 202, started.json()
    run_id = started.json()["run_id"]
    sink = CollectingSink()
    execute(run_id, sink)
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed", run.error
    assert steps == ["start_kit", "configure_drafts", "web_fetch", "configure_drafts", "test_drafts",
                     "attach_notes", "finalize_kit"]
    assert run.surface == "web"
    created = {t.alias: t for t in CustomTool.objects.filter(organization=org)}
    assert set(created) == {"fake_create_contact", "fake_get_contact", "fake_list_contacts"}
    assert created["fake_list_contacts"].warnings[0]["text"].startswith("Paginated")
    assert created["fake_create_contact"].sample_outputs[0]["label"] == "A created contact"
    assert all(t.credential_id == secret.pk for t in created.values())
    assert set(ToolDraft.objects.filter(kit__session_id=session["id"]).values_list("state", flat=True)) == {"created"}
    # Real test calls reached the provider: one create, one get, one list.
    calls = [(r.method, r.path) for r in rest_api.requests if r.path.startswith("/contacts")]
    assert calls == [("POST", "/contacts"), ("GET", "/contacts/1"), ("GET", "/contacts")]
    assert rest_api.secret not in json.dumps(list(ToolCall.objects.filter(run=run).values("args", "result")),
                                             default=str)
    assert rest_api.secret not in json.dumps(sink.frames, default=str)
    # The session is long-lived: its conversation persists and the builder agent is reused next time.
    session_row = ToolBuilderSession.objects.get(pk=session["id"])
    assert session_row.conversation_id == run.conversation_id
    again = client.post(f"/api/v1/tool-kits/sessions/{session['id']}/messages/", {"prompt": "Add another kit"},
                        format="json").json()
    assert again["conversation_id"] == str(run.conversation_id)


@pytest.mark.urls("tests.tools.urls")
def test_builder_sessions_are_closed_to_outsiders_and_viewers(org, builder, viewer, outsider, outsider_org, api_as):
    session = api_as(builder, org).post("/api/v1/tool-kits/sessions", {}, format="json").json()
    url = f"/api/v1/tool-kits/sessions/{session['id']}/messages/"
    assert api_as(outsider, outsider_org).post(url, {"prompt": "x"}, format="json").status_code == 404
    assert api_as(viewer, org).post(url, {"prompt": "x"}, format="json").status_code == 403
