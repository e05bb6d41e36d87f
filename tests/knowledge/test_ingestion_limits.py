"""What one document may expand to: a zip-based office file (.docx, .xlsx, .pptx, .odt) is bounded by the bytes
its members really decompress to, every format by the text it gives and the passages it makes, and an
organization by the passages it holds. A refused document ends failed with a sentence saying why, keeps no
passages (also none from an earlier ingestion), and no embedding is paid for."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from governance.models import SpendEntry
from knowledge import parsers, services
from knowledge.models import Chunk, Document
from tests import factories
from tests.knowledge import files

pytestmark = pytest.mark.django_db

MB = 1024 * 1024


@pytest.fixture
def collection(org):
    return factories.collection(org, "Handbook")


def _ingest(collection, name, data) -> Document:
    return services.ingest(str(factories.document(collection, name, data).pk))


def _padded(data: bytes, member: str, padding: int) -> bytes:
    """The same zip with `padding` bytes of whitespace after the root element of `member` (valid XML, no text):
    written a megabyte at a time, so the test never holds the expanded member."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, info.date_time)
            entry.compress_type = info.compress_type  # deflated, and .odt's leading mimetype stored
            with target.open(entry, "w") as written:
                written.write(source.read(info))
                if info.filename == member:
                    for _ in range(padding // MB):
                        written.write(b" " * MB)
    return out.getvalue()


# The member each format's library reads for its text.
ZIP_FORMATS = {
    "memo.docx": (files.docx(["Office closes at six."]), "word/document.xml"),
    "prices.xlsx": (files.xlsx([["product", "price"], ["widget", 10]]), "xl/worksheets/sheet1.xml"),
    "deck.pptx": (files.pptx(["Quarterly goals"]), "ppt/slides/slide1.xml"),
    "manual.odt": (files.odt(["The boiler pressure is 1.5 bar."]), "content.xml"),
}


@pytest.mark.parametrize("name", sorted(ZIP_FORMATS))
def test_an_office_file_that_unpacks_past_the_limit_is_refused_and_keeps_no_passages(collection, settings, name):
    settings.KNOWLEDGE_MAX_EXPANDED_BYTES = 2 * MB
    data, member = ZIP_FORMATS[name]
    assert _ingest(collection, f"small-{name}", _padded(data, member, 1 * MB)).status == "ready"

    bomb = _padded(data, member, 3 * MB)
    assert len(bomb) < 100_000  # whitespace compresses ~1000:1
    doc = _ingest(collection, name, bomb)
    assert doc.status == "failed" and doc.chunk_count == 0
    assert doc.error == ("This file unpacks to more than 2 MB, the most one document may expand to; nothing was "
                         "stored. Split it into smaller files.")
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_small_docx_that_unpacks_past_200_mb_is_refused_with_the_default_limits(collection):
    data, member = ZIP_FORMATS["memo.docx"]
    bomb = _padded(data, member, 201 * MB)
    assert len(bomb) < 400_000
    doc = _ingest(collection, "bomb.docx", bomb)
    assert doc.status == "failed" and "unpacks to more than 200 MB" in doc.error
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_member_whose_directory_understates_its_size_is_refused_not_trusted(settings):
    """The limit counts what comes out; a directory claiming 100 bytes for a 3 MB member does not get past it
    (and Python's zip reader refuses the member when what comes out does not match the claim)."""
    settings.KNOWLEDGE_MAX_EXPANDED_BYTES = 2 * MB
    data, member = ZIP_FORMATS["memo.docx"]
    bomb = bytearray(_padded(data, member, 3 * MB))
    name = member.encode()
    for signature, size_at in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):  # central directory, local header
        at = bomb.find(signature)
        while at != -1:
            name_length = struct.unpack_from("<H", bomb, at + (28 if signature == b"PK\x01\x02" else 26))[0]
            name_at = at + (46 if signature == b"PK\x01\x02" else 30)
            if bytes(bomb[name_at:name_at + name_length]) == name:
                struct.pack_into("<I", bomb, size_at + at, 100)
            at = bomb.find(signature, at + 4)
    assert zipfile.ZipFile(io.BytesIO(bytes(bomb))).getinfo(member).file_size == 100
    with pytest.raises(parsers.ParseError, match="could not be read as Word document"):
        parsers.parse("docx", bytes(bomb))


def test_a_zip_with_too_many_members_is_refused(settings):
    settings.KNOWLEDGE_MAX_ARCHIVE_MEMBERS = 50
    data, _ = ZIP_FORMATS["memo.docx"]
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a") as archive:
        for number in range(60):
            archive.writestr(f"extra/item{number}.xml", "<a/>")
    with pytest.raises(parsers.ParseError, match="more than 50 parts"):
        parsers.parse("docx", out.getvalue())


def test_a_spreadsheet_repeating_a_long_header_on_every_row_is_refused_by_its_text(collection, settings):
    """Each value is written with its column's header: 400 rows under a 5,000-character header are 2 M
    characters from a file of a few kilobytes."""
    settings.KNOWLEDGE_MAX_DOCUMENT_CHARS = 1_000_000
    sheet = files.xlsx([["H" * 5_000], *[[f"v{i}"] for i in range(400)]])
    assert len(sheet) < 50_000
    doc = _ingest(collection, "wide.xlsx", sheet)
    assert doc.status == "failed"
    assert doc.error == ("This file holds more than 1,000,000 characters of text, the most one document may have; "
                         "nothing was stored. Split it into smaller files.")
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_csv_repeating_a_long_header_is_refused_by_its_text(collection, settings):
    settings.KNOWLEDGE_MAX_DOCUMENT_CHARS = 1_000_000
    data = ("H" * 5_000 + "\n" + "x\n" * 400).encode()
    doc = _ingest(collection, "wide.csv", data)
    assert doc.status == "failed" and "more than 1,000,000 characters" in doc.error
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_document_making_too_many_passages_is_refused(collection, settings):
    settings.KNOWLEDGE_MAX_DOCUMENT_CHUNKS = 10
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 150 for i in range(12))
    doc = _ingest(collection, "long.txt", paragraphs.encode())
    assert doc.status == "failed" and doc.chunk_count == 0
    assert doc.error == ("This file makes more than 10 passages, the most one document may have; nothing was "
                         "stored. Split it into smaller files.")
    assert not Chunk.objects.filter(document=doc).exists()


def test_a_reingestion_refused_by_a_limit_leaves_none_of_the_earlier_passages(collection, settings):
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 150 for i in range(12))
    doc = _ingest(collection, "long.txt", paragraphs.encode())
    assert doc.status == "ready" and Chunk.objects.filter(document=doc).count() == doc.chunk_count > 10

    settings.KNOWLEDGE_MAX_DOCUMENT_CHUNKS = 10
    Document.objects.filter(pk=doc.pk).update(ingested_fingerprint="")  # as after a chunker change
    again = services.ingest(str(doc.pk))
    assert again.status == "failed" and again.chunk_count == 0 and "more than 10 passages" in again.error
    assert not Chunk.objects.filter(document=doc).exists()


def _two_passages(word: str) -> bytes:
    return (f"{word} " * 100 + "\n\n" + f"{word} " * 100).encode()


def test_the_organization_ceiling_refuses_the_document_that_would_pass_it_before_anything_is_embedded(
        org, settings, fake_openai):
    settings.KNOWLEDGE_MAX_ORGANIZATION_CHUNKS = 5
    outsider_org = factories.organization(name="Outsider")
    theirs = factories.collection(outsider_org, "Theirs")
    for number in range(2):  # another organization's passages are not ours to count
        assert _ingest(theirs, f"t{number}.txt", _two_passages(f"their{number}")).status == "ready"

    profile = factories.model_profile(org, "openai_compatible", "emb", base_url=fake_openai.base_url,
                                      kind="embedding", settings={"input_usd_per_million_tokens": 100})
    collection = factories.collection(org, "Priced", embedding_profile=profile)
    first = _ingest(collection, "a.txt", _two_passages("alpha"))
    second = _ingest(collection, "b.txt", _two_passages("beta"))
    assert (first.status, second.status) == ("ready", "ready")
    calls = len(fake_openai.requests_to("embeddings"))
    spent = SpendEntry.objects.filter(organization=org).count()

    third = _ingest(collection, "c.txt", _two_passages("gamma"))
    assert third.status == "failed" and third.chunk_count == 0
    assert third.error == ("Not stored: this document makes 2 passages and the organization's knowledge already "
                           "holds 4 of at most 5. Delete documents no longer needed, or ask the operator to raise "
                           "KNOWLEDGE_MAX_ORGANIZATION_CHUNKS.")
    assert not Chunk.objects.filter(document=third).exists()
    assert len(fake_openai.requests_to("embeddings")) == calls
    assert SpendEntry.objects.filter(organization=org).count() == spent
    assert Chunk.objects.filter(organization=org).count() == 4  # the first two are untouched

    # A re-ingestion replaces the document's own passages, so it is not counted against itself.
    Document.objects.filter(pk=first.pk).update(ingested_fingerprint="")
    assert services.ingest(str(first.pk)).status == "ready"
    assert Chunk.objects.filter(organization=org).count() == 4


def test_the_organization_ceiling_is_checked_again_when_the_passages_are_written(collection, org, settings,
                                                                                 monkeypatch):
    """Another ingestion may fill the room after this one's first check: the check under the lock sees it."""
    settings.KNOWLEDGE_MAX_ORGANIZATION_CHUNKS = 3
    checks = []
    real = services._check_organization_room

    def room_then_filled(document, adding):
        checks.append(adding)
        if len(checks) == 2:  # between the two checks, a concurrent ingestion stored two passages
            other = factories.document(collection, "other.txt", b"x")
            Chunk.objects.bulk_create([Chunk(organization=org, collection=collection, document=other,
                                             position=i, text=f"other {i}") for i in range(2)])
        real(document, adding)

    monkeypatch.setattr(services, "_check_organization_room", room_then_filled)
    doc = _ingest(collection, "a.txt", _two_passages("alpha"))
    assert checks == [2, 2]
    assert doc.status == "failed" and "already holds 2 of at most 3" in doc.error
    assert not Chunk.objects.filter(document=doc).exists()
