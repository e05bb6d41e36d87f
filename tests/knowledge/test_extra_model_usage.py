"""The model calls knowledge makes besides the agent's own (query embeddings, self-query, multi-query, HyDE)
are checked against every cap before they are sent and recorded against the run like the agent's requests:
a ledger row with the run, agent, embed and surface, and the run's own totals moved by the same amounts."""

from __future__ import annotations

from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

from agents.models import Run
from governance.models import SpendEntry
from knowledge import services, usage
from tests import factories
from tests.knowledge.helpers import arun, deps_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


def _counting_model(answer: str = "refund policy\nreturn window"):
    calls: list[int] = []

    def respond(messages, info):
        calls.append(1)
        return ModelResponse(parts=[TextPart(answer)], usage=RequestUsage(input_tokens=120, output_tokens=30))

    return FunctionModel(respond), calls


async def test_an_extra_call_is_recorded_against_the_run_like_the_agents_own(org, owner, agent):
    deps = await sync_to_async(deps_for)(agent, user=owner)
    model, calls = _counting_model()
    text = await usage.ask_model(deps, model, instructions="Reword.", prompt="refunds", agent_budget=None)
    assert text == "refund policy\nreturn window" and calls == [1]

    entry = await SpendEntry.objects.aget(run_id=deps.run_id)
    assert (entry.kind, entry.input_tokens, entry.output_tokens) == ("model_request", 120, 30)
    assert (str(entry.agent_id), entry.surface, entry.organization_id) == (str(agent.pk), "web", org.pk)
    run = await Run.objects.aget(pk=deps.run_id)
    assert (run.input_tokens, run.output_tokens, run.requests) == (120, 30, 1)
    # FunctionModel has no price: recorded at zero and the run's cost marked partial, never hidden
    assert entry.cost_usd == 0 and entry.is_partial and run.cost_is_partial


def test_a_priced_response_moves_the_runs_cost_by_the_ledgers_amount(org, owner, agent):
    deps = deps_for(agent, user=owner)
    meter = usage.meter_for(deps)
    response = ModelResponse(parts=[TextPart("x")], usage=RequestUsage(input_tokens=1_000_000, output_tokens=0),
                             model_name="gpt-4o", provider_name="openai")
    usage.record_model_response(meter, object(), response)
    usage.record_model_response(meter, object(), response)
    entries = list(SpendEntry.objects.filter(run_id=deps.run_id))
    run = Run.objects.get(pk=deps.run_id)
    assert len(entries) == 2 and all(e.cost_usd > 0 and not e.is_partial for e in entries)
    assert run.cost_usd == sum(e.cost_usd for e in entries) and run.requests == 2
    assert run.input_tokens == 2_000_000 and not run.cost_is_partial


async def test_a_used_up_agent_budget_stops_the_call_before_it_is_sent(org, owner, agent):
    deps = await sync_to_async(deps_for)(agent, user=owner)
    await SpendEntry.objects.acreate(organization=org, agent=agent, cost_usd=Decimal("5"), kind="model_request")
    model, calls = _counting_model()
    text = await usage.ask_model(deps, model, instructions="Reword.", prompt="refunds", agent_budget=Decimal("5"))
    assert text is None and calls == []
    assert not await SpendEntry.objects.filter(run_id=deps.run_id).aexists()


async def test_a_used_up_organization_budget_stops_the_call(org, owner, agent):
    org.monthly_budget_usd = Decimal("1")
    await org.asave()
    await SpendEntry.objects.acreate(organization=org, cost_usd=Decimal("1"), kind="model_request")
    deps = await sync_to_async(deps_for)(agent, user=owner)
    model, calls = _counting_model()
    assert await usage.ask_model(deps, model, instructions="x", prompt="y", agent_budget=None) is None
    assert calls == []


async def test_an_embed_runs_cap_is_checked_and_its_spend_carries_the_embed(org, owner, agent):
    embed = await sync_to_async(factories.embed)(agent, monthly_budget_usd=Decimal("2"))
    run = await sync_to_async(deps_for)(agent, surface="embed")
    await Run.objects.filter(pk=run.run_id).aupdate(embed_id=embed.pk)
    model, calls = _counting_model()
    assert await usage.ask_model(run, model, instructions="x", prompt="y", agent_budget=None)
    entry = await SpendEntry.objects.aget(run_id=run.run_id)
    assert entry.embed_id == embed.pk and entry.surface == "embed"

    await SpendEntry.objects.acreate(organization=org, embed_id=embed.pk, cost_usd=Decimal("2"), kind="model_request")
    assert await usage.ask_model(run, model, instructions="x", prompt="y", agent_budget=None) is None
    assert calls == [1]


async def test_a_provider_failure_records_nothing_and_returns_none(org, owner, agent):
    def broken(messages, info):
        raise RuntimeError("provider down")

    deps = await sync_to_async(deps_for)(agent, user=owner)
    assert await usage.ask_model(deps, FunctionModel(broken), instructions="x", prompt="y", agent_budget=None) is None
    assert not await SpendEntry.objects.filter(run_id=deps.run_id).aexists()


async def test_a_run_id_from_another_organization_is_not_charged(org, owner, agent, outsider_org, outsider):
    """The meter reads the run within the caller's organization: a foreign run id moves nobody's run."""
    theirs = await sync_to_async(factories.published_agent)(outsider_org, outsider)
    foreign = await sync_to_async(deps_for)(theirs, user=outsider)
    deps = await sync_to_async(deps_for)(agent, user=owner)
    deps.run_id = foreign.run_id
    model, _ = _counting_model()
    await usage.ask_model(deps, model, instructions="x", prompt="y", agent_budget=None)
    foreign_run = await Run.objects.aget(pk=foreign.run_id)
    assert (foreign_run.requests, foreign_run.input_tokens) == (0, 0)
    entry = await SpendEntry.objects.aget(organization=org)
    assert entry.run_id is None


async def test_a_query_embedding_during_a_search_is_charged_to_the_run(org, owner, fake_openai):
    profile = await sync_to_async(factories.model_profile)(
        org, "openai_compatible", "text-embedding-3-small", kind="embedding", base_url=fake_openai.base_url,
        settings={"input_usd_per_million_tokens": 20000})
    collection = await sync_to_async(factories.collection)(org, "Handbook", embedding_profile=profile)
    document = await sync_to_async(factories.document)(collection, "a.txt", b"Refunds take ten days.")
    await sync_to_async(services.ingest)(str(document.pk))
    agent = await sync_to_async(factories.published_agent)(org, owner, capabilities=[{"id": "knowledge"}],
                                                           collection_ids=[str(collection.pk)])
    outcome, _ = await arun(agent, [("search_documents", {"query": "refunds"})], user=owner)
    assert "a.txt" in outcome.returns[0]
    run = await Run.objects.filter(agent=agent).alatest("created_at")
    entries = [e async for e in SpendEntry.objects.filter(run=run)]
    assert [e.kind for e in entries] == ["embedding"] and entries[0].input_tokens > 0
    assert str(entries[0].agent_id) == str(agent.pk) and entries[0].surface == "web"
    assert entries[0].cost_usd > 0 and not entries[0].is_partial  # priced by the profile
    assert run.cost_usd == entries[0].cost_usd
    # the run's token counts describe the chat model; embedding tokens stay on their ledger row
    assert (run.input_tokens, run.requests) == (0, 0)


def test_ingestion_spend_belongs_to_the_organization_only(org, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "text-embedding-3-small", kind="embedding",
                                      base_url=fake_openai.base_url)
    collection = factories.collection(org, "Handbook", embedding_profile=profile)
    services.ingest(str(factories.document(collection, "a.txt", b"Refunds take ten days.").pk))
    entry = SpendEntry.objects.get(organization=org)
    assert entry.kind == "embedding" and entry.run_id is None and entry.agent_id is None
