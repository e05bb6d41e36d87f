""".odt, .rtf, .doc and images: pages where the file records them (and cited), none where it records
none, field codes and escapes never leaking into the text, readable failures, OCR for images."""

from __future__ import annotations

import shutil

import pytest

from knowledge import search as ks
from knowledge import services
from knowledge.models import Chunk, Document
from tests import factories
from tests.knowledge import files

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(org):
    return factories.collection(org, "Handbook")


def _ingest(collection, name, data) -> Document:
    return services.ingest(str(factories.document(collection, name, data).pk))


def _chunks(doc):
    return list(Chunk.objects.filter(document=doc).order_by("position").values_list("page", "text"))


def test_an_odt_keeps_the_pages_libreoffice_recorded(collection):
    doc = _ingest(collection, "manual.odt", files.odt(["Boilers are serviced in May.", "Radiators are bled in October."]))
    assert doc.kind == "odt" and doc.status == "ready"
    assert _chunks(doc) == [(1, "Boilers are serviced in May."), (2, "Radiators are bled in October.")]


def test_an_odt_page_break_style_starts_a_page(collection):
    doc = _ingest(collection, "styled.odt", files.odt(["Part one", "Part two", "Part three"], soft_breaks=False,
                                                      break_style=True))
    assert _chunks(doc) == [(1, "Part one"), (2, "Part two"), (3, "Part three")]


def test_an_odt_that_records_no_layout_gives_no_page(collection):
    doc = _ingest(collection, "flat.odt", files.odt(["Alpha", "Beta"], soft_breaks=False))
    assert _chunks(doc) == [(None, "Alpha\nBeta")]


def test_an_rtf_splits_at_its_page_breaks_and_decodes_accents(collection):
    doc = _ingest(collection, "memo.rtf", files.rtf(["Caf\u00e9 budget approved.", "Use C:\\page\\files for forms."]))
    assert doc.kind == "rtf" and doc.status == "ready"
    chunks = _chunks(doc)
    assert chunks == [(1, "Caf\u00e9 budget approved."), (2, "Use C:\\page\\files for forms.")]
    assert not any("\\par" in text or "fonttbl" in text or "Arial" in text for _, text in chunks)


def test_a_doc_is_read_through_its_piece_table_with_pages(collection):
    doc = _ingest(collection, "contract.doc", files.doc(["Term: twelve months.", "Pen\u00e1lty: 5 \u20ac per day."],
                                                        field="Annex A"))
    assert doc.kind == "doc" and doc.status == "ready", doc.error
    chunks = _chunks(doc)
    assert [page for page, _ in chunks] == [1, 2]
    assert chunks[0][1] == "Term: twelve months."
    assert "Pen\u00e1lty: 5 \u20ac per day." in chunks[1][1]
    # the field's result is text, its code is not
    assert "Annex A" in chunks[1][1] and "HYPERLINK" not in chunks[1][1] and "example.com" not in chunks[1][1]


def test_a_doc_without_page_breaks_gives_no_page(collection):
    doc = _ingest(collection, "short.doc", files.doc(["One paragraph.\nAnother paragraph."]))
    assert _chunks(doc) == [(None, "One paragraph.\nAnother paragraph.")]


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("new.doc", files.docx(["Saved as docx, named .doc"]), "not a Word 97-2003 document"),
    ("broken.odt", b"PK\x03\x04 not really a zip", "could not be read as OpenDocument text"),
    ("plain.rtf", b"Just text, no RTF header", "not a Rich Text Format document"),
    ("photo.png", b"\x89PNG\r\n\x1a\n broken", "not an image that can be read"),
])
def test_a_bad_word_processor_or_image_file_fails_readably(collection, name, data, reason):
    doc = _ingest(collection, name, data)
    assert doc.status == "failed"
    assert reason in doc.error and "Traceback" not in doc.error
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_doc_that_is_no_word_file_inside_an_ole_container_fails_readably(collection):
    doc = _ingest(collection, "sheet.doc", files._compound_file({"Workbook": b"\x09\x08" + b"\x00" * 100}))
    assert doc.status == "failed" and doc.error.startswith("This file has no Word document inside")


def test_word_processor_citations_name_the_page_and_images_do_not(org, collection, monkeypatch):
    _ingest(collection, "manual.odt", files.odt(["Intro", "The boiler pressure is 1.5 bar."]))
    _ingest(collection, "memo.rtf", files.rtf(["Intro", "The boiler room key is at reception."]))
    _ingest(collection, "flat.odt", files.odt(["The boiler warranty lasts two years."], soft_breaks=False))
    scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])
    outcome = ks.search(scope, ["boiler"], top_k=5, filters=ks.Filters())
    citations = sorted(hit.citation() for hit in outcome.hits)
    assert citations == ["flat.odt", "manual.odt, page 2", "memo.rtf, page 2"]


def test_an_image_without_an_ocr_program_fails_saying_so(collection, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "tesseract" else real_which(name))
    doc = _ingest(collection, "scan.png", files.image("Invoice 4471"))
    assert doc.kind == "image" and doc.status == "failed"
    assert "no OCR program (tesseract) installed" in doc.error


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="the tesseract OCR program is not installed")
def test_an_image_is_read_with_ocr_and_cited_by_name(org, collection):
    doc = _ingest(collection, "scan.png", files.image("Invoice number 4471\nPaid in full"))
    assert doc.status == "ready", doc.error
    (page, text), = _chunks(doc)
    assert page is None and "4471" in text and "Paid in full" in text
    scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])
    hits = ks.search(scope, ["4471"], top_k=1, filters=ks.Filters()).hits
    assert [h.citation() for h in hits] == ["scan.png"]


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="the tesseract OCR program is not installed")
def test_an_image_without_text_fails_readably(collection):
    doc = _ingest(collection, "blank.png", files.image(""))
    assert doc.status == "failed" and doc.error == "No text was found in this image, so there is nothing to search."


def test_the_upload_endpoint_accepts_the_new_extensions(api_as, builder, org, collection,
                                                        django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(builder, org).post(f"/api/v1/collections/{collection.pk}/documents",
                                             {"file": SimpleUploadedFile("minutes.rtf", files.rtf(["Quorum met."]))},
                                             format="multipart")
    assert response.status_code == 201, response.json()
    assert Document.objects.get(pk=response.json()["id"]).status == "ready"
    refused = api_as(builder, org).post(f"/api/v1/collections/{collection.pk}/documents",
                                        {"file": SimpleUploadedFile("x.exe", b"MZ")}, format="multipart")
    assert refused.status_code == 422
    supported = refused.json()["error"]["details"]["supported"]
    assert {".doc", ".odt", ".rtf", ".png", ".jpg"} <= set(supported)
