"""A stored binding that can no longer work is never dropped silently (issue 30).

Approval required + a provider-executed method (web_fetch native/auto, web_search native) refuses the run at
assembly with a readable reason and is refused at publish; a binding `build` could not turn into anything
is named in "Your setup" as skipped, with why, never among the capabilities someone should enable.
"""

from __future__ import annotations

import json

import pytest

from agents.models import AgentVersion, Conversation, RunStatus
from agents.runner import execute
from agents.runner.assembly import AssemblyError
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from capabilities import registry
from capabilities.base import Capability, NotBuilt
from governance.models import SpendEntry
from tests.capabilities.helpers import deps, spec
from tests.runner.conftest import publish

REFUSED = [
    pytest.param({"id": "web_fetch", "config": {"method": "native"}, "approval": "required"}, id="fetch-native"),
    pytest.param({"id": "web_fetch", "config": {"method": "auto"}, "tool_approval": {"web_fetch": "required"}},
                 id="fetch-auto"),
    pytest.param({"id": "web_research", "config": {"method": "native"},
                  "tool_approval": {"web_search": "required"}}, id="search-native"),
]


@pytest.fixture(autouse=True)
def _web_scopes(settings):
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:read", "web:fetch"]


def _setup_lines(text: str) -> tuple[str, str]:
    skipped = text.split("Bound but skipped", 1)[1] if "Bound but skipped" in text else ""
    lacking = text.split("does not have", 1)[1] if "does not have" in text else ""
    return skipped.split("does not have", 1)[0], lacking


@pytest.mark.parametrize("binding", REFUSED)
def test_approval_with_a_provider_executed_method_refuses_the_run_at_assembly_saying_why(binding):
    with pytest.raises(AssemblyError) as refused:
        registry.build_for_run(spec(binding), deps())
    message = str(refused.value)
    assert f"({binding['id']})" in message
    assert "without asking" in message and "publish again" in message


@pytest.mark.parametrize("binding", REFUSED)
def test_the_same_binding_is_refused_at_publish(db, org, binding):
    problems = registry.validate_bindings(spec(binding), organization=org, can_view_secret=lambda s: True)
    assert [p["field"] for p in problems] == ["capabilities.0.approval"]


@pytest.mark.parametrize("binding", [
    {"id": "web_fetch", "config": {"method": "local"}, "approval": "required"},
    {"id": "web_fetch", "config": {"method": "native"}},
    {"id": "web_research", "config": {"method": "native"}, "tool_approval": {"web_search": "never"}},
])
def test_a_gate_that_can_fire_or_no_gate_at_all_still_assembles(binding):
    built = registry.build_for_run(spec(binding), deps())
    assert built.active == [binding["id"]] and binding["id"] not in built.skipped


@pytest.mark.django_db(transaction=True)
def test_a_version_published_before_the_refusal_fails_its_run_readably_and_spends_nothing(org, owner, scripted_model):
    calls: list[int] = []

    def respond(messages, info):
        calls.append(1)
        raise AssertionError("the model must not be asked")

    from pydantic_ai.models.function import FunctionModel

    scripted_model(FunctionModel(respond, model_name="scripted"))
    agent, version = publish(org, owner)
    stale = AgentVersion.objects.create(
        agent=agent, number=version.number + 1, published_by=owner,
        spec={**version.spec, "capabilities": [{"id": "web_fetch", "config": {"method": "native"},
                                                "approval": "required"}]})
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="Read it")
    run = start_run(agent=agent, version=stale, surface="web", prompt="Read https://example.com", user=owner,
                    acting_role="owner", conversation=conversation, enqueue=False)
    sink = CollectingSink()
    execute(run.pk, sink)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "AssemblyError"
    assert "Read web pages (web_fetch)" in run.error["message"] and "publish again" in run.error["message"]
    assert sink.frames[-1]["type"] == "error"
    assert "web_fetch" in json.dumps(sink.frames[-1])
    assert calls == [] and run.requests == 0 and not SpendEntry.objects.filter(run=run).exists()


def test_knowledge_bound_without_collections_is_skipped_with_why_and_never_offered_as_missing():
    built = registry.build_for_run(spec({"id": "knowledge"}), deps())
    assert "knowledge" not in built.active
    assert built.skipped["knowledge"] == registry.NOTHING_TO_OFFER
    skipped, lacking = _setup_lines(built.instructions)
    assert "(knowledge)" in skipped and "(knowledge)" not in lacking


def test_a_build_that_knows_why_it_has_nothing_says_so_in_your_setup():
    def build(ctx):
        raise NotBuilt("no probe server answers in this deployment.")

    cap = registry.register(Capability(id="probe_reason", name="Probe reason", category="utility",
                                       description="test", tools=(), tools_note="test", build=build))
    try:
        built = registry.build_for_run(spec({"id": "probe_reason"}), deps())
    finally:
        registry.unregister(cap.id)
    assert built.skipped == {"probe_reason": "no probe server answers in this deployment"}
    assert "- Probe reason (probe_reason): no probe server answers in this deployment." in built.instructions


def test_channel_lookups_that_cannot_be_built_say_why_they_are_absent():
    built = registry.build_for_run(spec({"id": "channel_tools", "config": {"tools": ["get_channel_info"]}}),
                                   deps(surface="web"))
    assert built.toolsets == [] and built.skipped["channel_tools"] == registry.NOTHING_TO_OFFER
    telegram = registry.build_for_run(
        spec({"id": "channel_tools", "config": {"tools": ["read_channel_history"]}}), deps(surface="telegram"))
    assert "no lookup this chat platform can answer" in telegram.skipped["channel_tools"]
