"""Ingestion: every listed format parses (pages where the format has them), bad files fail readably,
re-ingestion is idempotent, embedding spend is recorded and checked against the budget first."""

from __future__ import annotations

from decimal import Decimal

import pytest

from governance.models import SpendEntry
from knowledge import services
from knowledge.models import Chunk, Document
from tests import factories
from tests.knowledge import files


@pytest.fixture
def collection(org):
    return factories.collection(org, "Handbook")


def _ingest(collection, name, data, **extra) -> Document:
    doc = factories.document(collection, name, data, **extra)
    return services.ingest(str(doc.pk))


def _chunks(doc):
    return list(Chunk.objects.filter(document=doc).order_by("position").values_list("page", "text"))


def test_a_pdf_is_ingested_page_by_page(collection):
    doc = _ingest(collection, "policy.pdf", files.pdf(["Refunds take ten days.", "Shipping is free over 50 EUR."]))
    assert doc.status == "ready" and doc.chunk_count == 2
    assert [(page, "Refunds" in text or "Shipping" in text) for page, text in _chunks(doc)] == [(1, True), (2, True)]


def test_a_presentation_keeps_its_slide_numbers(collection):
    doc = _ingest(collection, "deck.pptx", files.pptx(["Quarterly goals", "Hiring plan"]))
    assert [(p, t) for p, t in _chunks(doc)] == [(1, "Quarterly goals"), (2, "Hiring plan")]


def test_docx_markdown_text_csv_and_xlsx_have_no_pages(collection):
    docs = [
        _ingest(collection, "memo.docx", files.docx(["Office closes at six.", "Badges are required."])),
        _ingest(collection, "notes.md", b"# Heading\n\nThe wifi password rotates monthly."),
        _ingest(collection, "plain.txt", "Caf\u00e9 opens at eight.".encode()),
        _ingest(collection, "prices.csv", b"product,price\nwidget,10\ngadget,20\n"),
        _ingest(collection, "prices.xlsx", files.xlsx([["product", "price"], ["widget", 10]])),
    ]
    assert [d.status for d in docs] == ["ready"] * 5
    texts = {d.name: " ".join(t for _, t in _chunks(d)) for d in docs}
    assert all(page is None for d in docs for page, _ in _chunks(d))
    assert "Badges are required." in texts["memo.docx"]
    assert "# Heading" in texts["notes.md"]  # kept as text; never read as a section boundary
    assert "Café opens at eight." in texts["plain.txt"]
    assert "product: gadget; price: 20" in texts["prices.csv"]
    assert "Sheet: Prices" in texts["prices.xlsx"] and "product: widget; price: 10" in texts["prices.xlsx"]


def test_html_becomes_markdown_without_scripts(collection):
    html = b"<html><head><script>alert(1)</script></head><body><h1>Returns</h1><p>Keep the <b>receipt</b>.</p></body></html>"
    doc = _ingest(collection, "page.html", html)
    text = _chunks(doc)[0][1]
    assert "# Returns" in text and "**receipt**" in text and "alert" not in text


def test_a_bad_file_is_marked_failed_with_a_readable_reason(collection):
    doc = _ingest(collection, "broken.pdf", b"%PDF-1.4 this is not really a pdf")
    assert doc.status == "failed"
    assert doc.error.startswith("This file") and "Traceback" not in doc.error
    empty = _ingest(collection, "empty.txt", b"   \n ")
    assert empty.status == "failed" and "no text" in empty.error
    assert Chunk.objects.filter(document__in=[doc, empty]).count() == 0


def test_long_text_is_cut_into_contiguous_chunks_without_overlap(collection):
    paragraphs = [f"Paragraph {i} " + ("word " * 60) for i in range(20)]
    doc = _ingest(collection, "long.txt", "\n\n".join(paragraphs).encode())
    chunks = [t for _, t in _chunks(doc)]
    assert len(chunks) > 3 and all(len(c) <= 1000 for c in chunks)
    joined = " ".join(chunks)
    assert all(joined.count(f"Paragraph {i} ") == 1 for i in range(20))


def test_reingesting_the_same_file_is_a_no_op_and_a_changed_profile_reembeds(collection, org, fake_openai):
    doc = _ingest(collection, "a.txt", b"Alpha beta gamma.")
    first_ids = list(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    again = services.ingest(str(doc.pk))
    assert list(Chunk.objects.filter(document=again).values_list("pk", flat=True)) == first_ids

    collection.embedding_profile = factories.model_profile(
        org, "openai_compatible", "text-embedding-3-small", base_url=fake_openai.base_url, kind="embedding")
    collection.save()
    redone = services.ingest(str(doc.pk))
    chunk = Chunk.objects.get(document=redone)
    assert chunk.pk not in first_ids and chunk.embedding_dims == 8 and len(chunk.embedding) == 8


def test_embedding_spend_is_recorded_and_a_spent_budget_stops_ingestion_before_the_call(org, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "emb", base_url=fake_openai.base_url,
                                      kind="embedding", settings={"input_usd_per_million_tokens": 100})
    collection = factories.collection(org, "Priced", embedding_profile=profile)
    doc = _ingest(collection, "a.txt", b"one two three four")
    assert doc.status == "ready"
    entry = SpendEntry.objects.get(organization=org, kind="embedding")
    assert entry.input_tokens == 4 and entry.cost_usd == Decimal("0.0004") and not entry.is_partial

    org.monthly_budget_usd = Decimal("0.0001")
    org.save()
    calls = len(fake_openai.requests_to("embeddings"))
    refused = _ingest(collection, "b.txt", b"five six")
    assert refused.status == "failed" and "budget" in refused.error
    assert len(fake_openai.requests_to("embeddings")) == calls


def test_an_unreachable_embedding_model_fails_the_document_without_leaking_the_key(org, settings):
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # listed, so the guard lets it through to a closed port
    profile = factories.model_profile(org, "openai_compatible", "emb", base_url="http://127.0.0.1:9/v1",
                                      kind="embedding", api_key="sk-very-secret-embedding-key")
    collection = factories.collection(org, "Down", embedding_profile=profile)
    doc = _ingest(collection, "a.txt", b"hello")
    assert doc.status == "failed" and "could not be reached" in doc.error
    assert "sk-very" not in doc.error and "127.0.0.1" not in doc.error
