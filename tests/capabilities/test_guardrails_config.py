"""Guardrails' settings: phone_regions refused at publish (unknown code, more than 16), nothing attached without
an edge, the phone detector's numbering-plan reading and size limits, the Builder's Advanced group, and a
blocked run as its own outcome in Activity."""

from __future__ import annotations

import pytest

from agents.models import AgentVersion, Run, RunStatus
from agents.spec import AgentSpec
from capabilities import registry
from capabilities.guardrails import GuardrailBlocked, GuardrailsConfig, Screen
from capabilities.guardrails.capability import RequestGuardrails, StreamGuardrails, ToolResultGuardrail
from capabilities.guardrails.phones import PhoneDetector
from tests import factories
from tests.capabilities.helpers import deps
from tests.console.conftest import client_as  # noqa: F401  (the console's signed-in client fixture)

pytestmark = pytest.mark.django_db
PUBLISH_API = "/api/v1/agents/{}/publish"


def _draft(org, owner, config: dict):
    from agents import services
    from tests.runner.conftest import actor_of, demo_profile

    return services.create_agent(actor=actor_of(owner, org), name="Guarded", spec={
        "name": "Guarded", "model_profile_id": str(demo_profile(org).pk),
        "capabilities": [{"id": "guardrails", "config": config}]})


@pytest.mark.parametrize(("regions", "message"), [
    ("US, UK", "Unknown country code(s): UK (the United Kingdom is GB)."),
    ("US\nXX", "Unknown country code(s): XX."),
    (", ".join(["US", "GB", "DE", "PL", "FR", "ES", "IT", "NL", "BE", "AT", "CH", "SE", "NO", "DK", "FI", "IE", "PT"]),
     "At most 16 country codes."),
])
def test_publish_refuses_bad_phone_regions_at_their_field_and_publishes_nothing(api_as, org, owner, regions,
                                                                                 message):
    agent = _draft(org, owner, {"redact_pii_out": True, "phone_regions": regions})
    response = api_as(owner, org).post(PUBLISH_API.format(agent.pk), {}, format="json")
    assert response.status_code == 422
    problems = response.json()["error"]["details"]["problems"]
    assert {"field": "capabilities[guardrails].config.phone_regions", "message": f"Value error, {message}"} in problems
    assert not AgentVersion.objects.filter(agent=agent, number__gt=0).exists()


def test_sixteen_known_regions_publish(api_as, org, owner):
    sixteen = "US, GB, DE, PL, FR, ES, IT, NL, BE, AT, CH, SE, NO, DK, FI, IE"
    agent = _draft(org, owner, {"redact_pii_out": True, "phone_regions": sixteen})
    assert api_as(owner, org).post(PUBLISH_API.format(agent.pk), {}, format="json").status_code == 201


def test_an_outsider_cannot_publish_anothers_guarded_agent(api_as, org, owner, outsider, outsider_org):
    agent = _draft(org, owner, {"redact_pii_out": True, "phone_regions": "UK"})
    response = api_as(outsider, outsider_org).post(PUBLISH_API.format(agent.pk), {}, format="json")
    assert response.status_code == 404 and "phone_regions" not in response.content.decode()


def _built(org, config):
    spec = AgentSpec(name="G", capabilities=[{"id": "guardrails", "config": config}])
    return registry.build_for_run(spec, deps(organization_id=str(org.pk)), str(org.pk))


def test_nothing_is_attached_when_no_edge_is_configured(org):
    built = _built(org, {"phone_regions": "US, PL"})
    assert built.capabilities == [] and built.toolsets == []
    assert "guardrails" in built.skipped and "guardrails" not in built.active


def test_each_edge_attaches_only_what_it_needs(org):
    only_tool = _built(org, {"redact_secrets_tool": True})
    assert [type(c) for c in only_tool.capabilities] == [ToolResultGuardrail]
    all_edges = _built(org, {"redact_secrets_in": True, "blocked_keywords_out": "x", "redact_pii_args": True,
                             "blocked_keywords_tool": "y"})
    assert {type(c) for c in all_edges.capabilities} == {StreamGuardrails, ToolResultGuardrail}
    request = next(c for c in all_edges.capabilities if isinstance(c, RequestGuardrails))
    assert request.inp is not None and request.out is not None and request.args is not None
    # Only the input edge: no stream hook, so the run's requests are not forced onto the streaming path.
    assert [type(c) for c in _built(org, {"redact_pii_in": True}).capabilities] == [RequestGuardrails]


def test_phone_numbers_are_read_by_their_numbering_plan_and_region_list():
    us = PhoneDetector(["US"])
    assert us("call 415-555-0132 today").replacement == "call [redacted:phone] today"
    assert us("paid 1234.56 on 2024-05-01, order 123456789").action == "allow"
    assert us("Warsaw: +48 22 123 45 67").replacement == "Warsaw: [redacted:phone]"  # + names its own country
    assert PhoneDetector(["PL"])("order 123456789").replacement == "order [redacted:phone]"
    assert PhoneDetector(["DE"])("zip 02134-1234").replacement == "zip [redacted:phone]"
    assert PhoneDetector([])("+1 415-555-0132 or 415-555-0132").replacement == "[redacted:phone] or 415-555-0132"


def test_a_text_too_long_for_the_phone_detector_blocks_and_the_limit_shrinks_with_regions():
    four = Screen.for_edge(GuardrailsConfig(redact_pii_out=True, phone_regions="US, GB, DE, PL"), "out")
    sixteen = Screen.for_edge(GuardrailsConfig(
        redact_pii_out=True, phone_regions="US, GB, DE, PL, FR, ES, IT, NL, BE, AT, CH, SE, NO, DK, FI, IE"), "out")
    assert four is not None and sixteen is not None
    assert four.redact("a" * 60_000) == "a" * 60_000  # within 200,000 with four regions
    with pytest.raises(GuardrailBlocked):
        sixteen.redact("a" * 60_000)  # beyond 50,000 with sixteen
    with pytest.raises(GuardrailBlocked):
        four.redact("1 " * 10_001)  # more than 10,000 digits


def test_keywords_are_separated_by_commas_or_line_breaks_and_match_any_case():
    screen = Screen.for_edge(GuardrailsConfig(blocked_keywords_args="launch plan,\n Bluebird \n"), "args")
    assert screen is not None
    assert screen.blocked("the BLUEBIRD file") and screen.blocked("our launch plan") and not screen.blocked("plan")
    with pytest.raises(GuardrailBlocked):
        screen.clean_value({"to": ["a@example.org"], "body": {"text": "bluebird"}})
    assert screen.clean_value({"to": ["a@example.org"]}) == {"to": ["a@example.org"]}


pytestmark_console = pytest.mark.urls("tests.console.urls")


@pytestmark_console
def test_the_builder_shows_guardrails_under_advanced_with_its_four_edges(client_as, org, builder):  # noqa: F811
    factories.model_profile(org, label="Demo")
    client = client_as(builder, org)
    client.post("/agents/new", {"name": "Support"})
    from agents.models import Agent

    agent = Agent.objects.get(organization=org, name="Support")
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    advanced = page.split("data-advanced-group")[1]
    assert 'data-capability="guardrails"' in advanced
    for edge in ("in", "out", "tool", "args"):
        for field in ("redact_secrets", "redact_pii", "blocked_keywords"):
            assert f'name="config.{field}_{edge}"' in advanced
    assert 'name="config.phone_regions"' in advanced


@pytestmark_console
def test_activity_shows_a_blocked_run_as_its_own_outcome(client_as, org, owner, outsider, outsider_org):  # noqa: F811
    from tests.runner.conftest import publish

    agent, version = publish(org, owner)
    blocked = Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner,
                                 prompt="x", status=RunStatus.GUARDRAIL_BLOCKED)
    done = Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner,
                              prompt="y", status=RunStatus.COMPLETED)
    page = client_as(owner, org).get("/activity/?status=guardrail_blocked").content.decode()
    assert str(blocked.pk) in page and str(done.pk) not in page
    assert "Blocked by a guardrail" in page.split(f'data-run-row="{blocked.pk}"')[1].split("</tr>")[0]
    assert str(blocked.pk) not in client_as(outsider, outsider_org).get("/activity/").content.decode()
