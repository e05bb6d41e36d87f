"""search_documents: hybrid fusion, citations with and without pages, scope from the spec only, filters that
never widen access, lexical-only said plainly, parent context caps and contiguity, query expansion."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

from knowledge import search as ks
from knowledge import services
from tests import factories
from tests.knowledge import files
from tests.knowledge.helpers import arun

pytestmark = pytest.mark.django_db(transaction=True)


def _ingest(collection, name, data, **extra):
    return services.ingest(str(factories.document(collection, name, data, **extra).pk))


def _agent(org, owner, collections, **config):
    binding = {"id": "knowledge", "config": config} if config else {"id": "knowledge"}
    return factories.published_agent(org, owner, capabilities=[binding],
                                     collection_ids=[str(c.pk) for c in collections])


def _add_version(agent, **changes):
    from agents.models import AgentVersion

    latest = agent.versions.order_by("-number").first()
    AgentVersion.objects.create(agent=agent, number=latest.number + 1, spec={**latest.spec, **changes})


async def _search(agent, owner, args, **kw):
    outcome, built = await arun(agent, [("search_documents", args)], user=owner, **kw)
    return outcome.returns[0] if outcome.returns else outcome.retries[0]


@pytest.fixture
def handbook(org):
    collection = factories.collection(org, "Handbook")
    _ingest(collection, "policy.pdf", files.pdf(["Refunds take ten days.", "Shipping to Norway is free."]))
    _ingest(collection, "memo.docx", files.docx(["Refunds for gift cards are not possible."]))
    return collection


async def test_results_cite_the_page_for_pdfs_and_only_the_name_for_docx(org, owner, handbook):
    agent = await sync_to_async(_agent)(org, owner, [handbook])
    text = await _search(agent, owner, {"query": "refunds"})
    assert text.splitlines()[0].startswith("Lexical search only")
    assert "policy.pdf, page 1\nRefunds take ten days." in text
    assert "memo.docx\nRefunds for gift cards are not possible." in text
    assert "memo.docx, page" not in text


async def test_a_capability_bound_without_collections_attaches_nothing(org, owner, handbook):
    agent = await sync_to_async(_agent)(org, owner, [])
    outcome, built = await arun(agent, [], user=owner)
    assert "knowledge" not in built.active and outcome.script.offered == []


async def test_only_collections_bound_in_the_spec_are_searched(org, owner, handbook):
    other = await sync_to_async(factories.collection)(org, "Secret plans")
    await sync_to_async(_ingest)(other, "plans.txt", b"Refunds will be abolished next year.")
    agent = await sync_to_async(_agent)(org, owner, [handbook])
    text = await _search(agent, owner, {"query": "refunds abolished"})
    assert "plans.txt" not in text and "next year" not in text


async def test_a_foreign_collection_id_in_a_spec_is_unreachable(org, owner, outsider_org):
    foreign = await sync_to_async(factories.collection)(outsider_org, "Theirs")
    await sync_to_async(_ingest)(foreign, "theirs.txt", b"Refunds are instant at Other Corp.")
    agent = await sync_to_async(_agent)(org, owner, [])
    # Publishing refuses a foreign id; a version row written around that check must still find nothing.
    await sync_to_async(_add_version)(agent, collection_ids=[str(foreign.pk)])
    text = await _search(agent, owner, {"query": "refunds"})
    assert text.startswith("Refused") and "instant" not in text


async def test_filters_narrow_the_bound_scope(org, owner):
    collection = await sync_to_async(factories.collection)(org, "Mixed")
    await sync_to_async(_ingest)(collection, "hr.txt", b"Vacation requests go to HR.", org_unit="HR", source="wiki")
    await sync_to_async(_ingest)(collection, "it.txt", b"Vacation laptops stay home.", org_unit="IT", source="wiki")
    agent = await sync_to_async(_agent)(org, owner, [collection])
    text = await _search(agent, owner, {"query": "vacation", "org_unit": "hr"})
    assert "hr.txt" in text and "it.txt" not in text
    none = await _search(agent, owner, {"query": "vacation", "source": "email"})
    assert "No passages found" in none


async def test_hybrid_search_fuses_vector_and_word_matches(org, owner, fake_openai):
    profile = await sync_to_async(factories.model_profile)(
        org, "openai_compatible", "emb", base_url=fake_openai.base_url, kind="embedding")
    collection = await sync_to_async(factories.collection)(org, "Vectors", embedding_profile=profile)
    # The fake's vectors are hashes of the text: only the identical text is near; words match elsewhere.
    await sync_to_async(_ingest)(collection, "exact.txt", b"zebra crossing rules")
    await sync_to_async(_ingest)(collection, "words.txt", b"rules for parking")
    agent = await sync_to_async(_agent)(org, owner, [collection])
    text = await _search(agent, owner, {"query": "zebra crossing rules"})
    assert not text.startswith("Lexical")
    assert text.index("exact.txt") < text.index("words.txt")
    assert fake_openai.requests_to("embeddings")[-1].json["input"] == ["zebra crossing rules"]


def test_reciprocal_rank_fusion_rewards_agreement_between_lists():
    fused = ks.rrf([[1, 2, 3], [3, 1], [3]])
    assert [chunk for chunk, _ in fused] == [3, 1, 2]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61 + 1 / 61)


async def test_window_adds_neighbours_and_says_so(org, owner):
    collection = await sync_to_async(factories.collection)(org, "Story")
    parts = [f"Part {i} " + ("filler " * 120) for i in range(6)]
    parts[3] = "Part 3 the treasure is under the oak " + ("filler " * 110)
    await sync_to_async(_ingest)(collection, "story.txt", "\n\n".join(parts).encode())
    agent = await sync_to_async(_agent)(org, owner, [collection], parent_context="window", default_top_k=1)
    text = await _search(agent, owner, {"query": "treasure oak"})
    assert "story.txt (with surrounding text)" in text
    body = text.split("(with surrounding text)\n", 1)[1]
    assert body.index("Part 2") < body.index("Part 3 the treasure") < body.index("Part 4")
    assert "Part 1 " not in body and "Part 5 " not in body


def _hit(position, text, doc="d"):
    return ks.Hit(chunk_id=position, document_id=doc, document_name="doc.txt", kind="txt", page=None,
                  position=position, text=text, score=1.0)


def test_parent_context_stops_at_the_caps_and_never_repeats_or_skips_text(org, monkeypatch):
    """Positions 0..19 of 900 characters each; hits at 5 and 7. The 8,000 per-result cap allows 8 neighbours,
    chunk 6 lies between the hits and 7 is a hit itself, so the first passage cannot grow past them."""
    from knowledge.models import Chunk

    collection = factories.collection(org, "Caps")
    doc = factories.document(collection, "doc.txt", b"x")
    Chunk.objects.bulk_create([Chunk(organization=org, collection=collection, document=doc, position=i,
                                     text=f"{i:02d}" + "y" * 898) for i in range(20)])
    scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])
    hits = [_hit(5, "05" + "y" * 898, str(doc.pk)), _hit(7, "07" + "y" * 898, str(doc.pk))]
    ks.expand(scope, hits, "parent")
    first, second = hits
    first_positions = [int(t[:2]) for t in first.before + first.after]
    second_positions = [int(t[:2]) for t in second.before + second.after]
    assert first_positions == [0, 1, 2, 3, 4, 6]  # blocked at 7 (a hit) on the right
    assert sum(len(t) for t in first.before + first.after) <= ks.ADDED_PER_RESULT
    assert 6 not in second_positions  # already returned with the first result
    assert second_positions == list(range(8, 16))  # 8 x 900 = 7,200 <= 8,000; a ninth would not fit
    assert not set(first_positions) & set(second_positions)


def test_the_per_search_cap_bounds_all_added_text(org):
    from knowledge.models import Chunk

    collection = factories.collection(org, "Caps2")
    docs = [factories.document(collection, f"d{i}.txt", b"x") for i in range(4)]
    for doc in docs:
        Chunk.objects.bulk_create([Chunk(organization=org, collection=collection, document=doc, position=i,
                                         text="z" * 900) for i in range(30)])
    scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])
    hits = [_hit(15, "z" * 900, str(doc.pk)) for doc in docs]
    ks.expand(scope, hits, "parent")
    assert sum(len(t) for h in hits for t in h.before + h.after) <= ks.ADDED_PER_SEARCH
    assert all(len(h.text) == 900 for h in hits)  # the match itself is never shortened


def _analysis_model(reply: str, calls=({"query": "money back"},)):
    """The agent's model: for the expansion request (no tools offered) it answers `reply`; as the agent it
    calls search_documents with each of `calls`, then finishes."""
    state = {"step": 0}

    def respond(messages, info):
        if not info.function_tools:
            return ModelResponse(parts=[TextPart(reply)])
        state["step"] += 1
        if state["step"] <= len(calls):
            args = calls[state["step"] - 1]
            return ModelResponse(parts=[ToolCallPart("search_documents", args, f"c{state['step']}")])
        return ModelResponse(parts=[TextPart("done")])

    return respond


async def test_multi_query_searches_each_variant_and_fuses_the_results(org, owner):
    collection = await sync_to_async(factories.collection)(org, "Refunds")
    await sync_to_async(_ingest)(collection, "refunds.txt", b"Refunds take ten days.")
    agent = await sync_to_async(_agent)(org, owner, [collection], query_analysis_mode="multi_query",
                                        query_analysis_max_variants=2)
    outcome, _ = await arun(agent, [], user=owner,
                                 model_function=_analysis_model("refunds policy\nreturn window"))
    assert "refunds.txt" in outcome.returns[0]  # found only through a variant: "money back" shares no word


async def test_self_query_infers_known_filters_says_so_and_can_be_turned_off(org, owner):
    collection = await sync_to_async(factories.collection)(org, "Units")
    await sync_to_async(_ingest)(collection, "hr.txt", b"money back rules for HR", org_unit="HR")
    await sync_to_async(_ingest)(collection, "it.txt", b"money back rules for IT", org_unit="IT")
    agent = await sync_to_async(_agent)(org, owner, [collection], self_query_enabled=True)
    outcome, _ = await arun(agent, [], user=owner,
                                 model_function=_analysis_model('{"org_unit": "hr", "document_id": "x"}', calls=(
                                     {"query": "money back"}, {"query": "money back", "infer_filters": False})))
    inferred, without = outcome.returns
    assert inferred.startswith("Filters inferred from the question: org_unit=HR.")
    assert "hr.txt" in inferred and "it.txt" not in inferred
    assert "Filters inferred" not in without and "hr.txt" in without and "it.txt" in without


async def test_self_query_never_offers_a_unit_the_bound_collections_do_not_hold(org, owner, outsider_org):
    mine = await sync_to_async(factories.collection)(org, "Mine")
    await sync_to_async(_ingest)(mine, "hr.txt", b"money back rules", org_unit="HR")
    theirs = await sync_to_async(factories.collection)(outsider_org, "Theirs")
    await sync_to_async(_ingest)(theirs, "x.txt", b"money back rules", org_unit="Secret Unit")
    agent = await sync_to_async(_agent)(org, owner, [mine], self_query_enabled=True)
    outcome, _ = await arun(agent, [], user=owner,
                            model_function=_analysis_model('{"org_unit": "Secret Unit"}'))
    text = outcome.returns[0]
    assert "Filters inferred" not in text and "hr.txt" in text and "x.txt" not in text
