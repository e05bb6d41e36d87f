"""Knowledge in the console (console/knowledge.py over knowledge.services and knowledge.grants): a builder creates,
renames and deletes a collection, uploads documents of the formats the API ingests (several at once, a refused
format named with the reason and the others still stored), sees each one's status, passages and failure reason,
ingests one again and searches the collection. A viewer reads without edit controls and every change is 403
leaving nothing changed; an outsider gets 404 everywhere and sees no collection of ours."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agenticos.models import AuditEvent
from knowledge.models import Chunk, Collection, Document
from tests import factories
from tests.knowledge import files

pytestmark = pytest.mark.django_db

PAGE = "/knowledge/"


_capture = None


@pytest.fixture(autouse=True)
def _eager_ingestion(settings, tmp_path, django_capture_on_commit_callbacks):
    """Uploads in a temporary MEDIA_ROOT; ingestion runs the real task when the request's work commits (the
    test's own transaction never does: `committed` runs the callbacks a request registered)."""
    from config.celery import app

    global _capture
    settings.MEDIA_ROOT = str(tmp_path / "media")
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    _capture = django_capture_on_commit_callbacks
    yield
    _capture = None
    app.conf.task_always_eager = eager


def committed(call):
    assert _capture is not None
    with _capture(execute=True):
        return call()


def upload(client, collection, *named: tuple[str, bytes], json: bool = False):
    data = {"file": [SimpleUploadedFile(name, body) for name, body in named]}
    headers = {"HTTP_ACCEPT": "application/json"} if json else {}
    return committed(lambda: client.post(f"{PAGE}{collection.pk}/documents", data, **headers))


def test_a_builder_creates_a_collection_and_is_taken_to_it(client_as, org, builder):
    client = client_as(builder, org)
    assert b"data-collection-create" in client.get(PAGE).content

    response = client.post(f"{PAGE}new", {"name": "Handbook", "description": "HR rules", "visibility": "organization"})

    collection = Collection.objects.get(organization=org)
    assert response.status_code == 302 and response["Location"] == f"{PAGE}{collection.pk}/"
    assert collection.name == "Handbook" and collection.created_by == builder
    assert AuditEvent.objects.filter(organization=org, action="collection.create").count() == 1
    assert f'data-collection="{collection.pk}"' in client.get(PAGE).content.decode()


def test_a_duplicate_or_empty_name_is_said_at_the_name_field_once(client_as, org, builder):
    factories.collection(org, "Handbook")
    client = client_as(builder, org)
    response = client.post(f"{PAGE}new", {"name": "Handbook"})
    html = response.content.decode()
    assert response.status_code == 409 and html.count("already exists") == 1
    assert 'data-field-error="name"' in html and "<code>name</code>" not in html
    assert client.post(f"{PAGE}new", {"name": "  "}).status_code == 422
    assert Collection.objects.filter(organization=org).count() == 1


def test_every_format_uploads_together_and_a_refused_one_is_named_with_the_reason(client_as, org, builder):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(builder, org)
    response = upload(client, collection, ("policy.pdf", files.pdf(["Vacation is 25 days.", "Sick leave rules."])),
                      ("notes.md", b"# Notes\nParking is free on Fridays."), ("tool.exe", b"MZ"), json=True)

    data = response.json()
    assert response.status_code == 200
    assert sorted(d["name"] for d in data["added"]) == ["notes.md", "policy.pdf"]
    assert data["refused"][0]["name"] == "tool.exe" and ".pdf" in data["refused"][0]["message"]
    pdf = Document.objects.get(collection=collection, name="policy.pdf")
    assert pdf.status == "ready" and pdf.chunk_count >= 1
    status = client.get(f"{PAGE}{collection.pk}/documents.json").json()["documents"]
    assert {d["name"]: (d["status"], d["busy"]) for d in status} == {"notes.md": ("ready", False),
                                                                     "policy.pdf": ("ready", False)}
    html = client.get(f"{PAGE}{collection.pk}/").content.decode()
    assert f'data-document="{pdf.pk}" data-status="ready"' in html
    assert 'accept=".bmp,.csv,.doc,.docx' in html  # the picker offers what the parsers read


def test_a_document_that_cannot_be_read_shows_why_and_can_be_ingested_again(client_as, org, builder):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(builder, org)
    upload(client, collection, ("broken.pdf", b"%PDF-1.4 not really"))
    document = Document.objects.get(collection=collection)
    assert document.status == "failed" and document.error
    html = client.get(f"{PAGE}{collection.pk}/").content.decode()
    assert "data-doc-error" in html and "data-doc-reingest" in html

    good = factories.document(collection, "ok.txt", b"Lunch is at noon.")
    from knowledge import services

    services.ingest(str(good.pk))
    before = Chunk.objects.filter(document=good).values_list("pk", flat=True)
    before_ids = set(before)
    response = committed(lambda: client.post(f"{PAGE}documents/{good.pk}/reingest"))
    assert response.status_code == 302 and response["Location"].endswith(f"#doc-{good.pk}")
    good.refresh_from_db()
    # Read from scratch: new passages replace the old ones (an unchanged file is otherwise left alone).
    assert good.status == "ready" and set(Chunk.objects.filter(document=good).values_list("pk", flat=True)).isdisjoint(
        before_ids)


def test_search_previews_passages_with_their_citation(client_as, org, builder):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(builder, org)
    upload(client, collection, ("policy.pdf", files.pdf(["Vacation is 25 days a year.", "Parking is free."])))

    found = client.get(f"{PAGE}{collection.pk}/search.json", {"q": "parking"}).json()

    assert found["words_only"] is True and found["hits"][0]["citation"] == "policy.pdf, page 2"
    assert "Parking is free" in found["hits"][0]["text"]
    page = client.get(f"{PAGE}{collection.pk}/", {"q": "vacation"}).content.decode()
    assert "policy.pdf, page 1" in page and "data-words-only" in page


def test_a_builder_renames_and_deletes_a_collection(client_as, org, builder):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(builder, org)
    upload(client, collection, ("a.txt", b"alpha"))
    assert client.post(f"{PAGE}{collection.pk}/edit", {"name": "HR handbook", "description": "",
                                                        "visibility": "private"}).status_code == 302
    collection.refresh_from_db()
    assert collection.name == "HR handbook" and collection.visibility == "private"
    response = client.post(f"{PAGE}{collection.pk}/delete")
    assert response.status_code == 302 and response["Location"] == PAGE
    assert not Collection.objects.filter(pk=collection.pk).exists() and not Document.objects.exists()


def test_an_embedding_profile_of_the_wrong_kind_is_refused_at_its_field(client_as, org, builder):
    chat = factories.model_profile(org, label="Chat one")
    response = client_as(builder, org).post(f"{PAGE}new", {"name": "X", "embedding_profile_id": str(chat.pk)})
    assert response.status_code == 422 and 'data-field-error="embedding_profile_id"' in response.content.decode()
    assert not Collection.objects.exists()


def test_a_viewer_reads_without_edit_controls_and_every_change_is_refused(client_as, org, builder, viewer):
    collection = factories.collection(org, "Handbook", created_by=builder)
    document = factories.document(collection, "a.txt", b"alpha")
    client = client_as(viewer, org)
    listing = client.get(PAGE).content.decode()
    assert f'data-collection="{collection.pk}"' in listing and "data-collection-create" not in listing
    html = client.get(f"{PAGE}{collection.pk}/").content.decode()
    assert "data-upload" not in html and "data-doc-delete" not in html and "data-collection-settings" not in html
    assert client.post(f"{PAGE}new", {"name": "Mine"}).status_code == 403
    assert upload(client, collection, ("b.txt", b"beta")).status_code == 403
    assert client.post(f"{PAGE}{collection.pk}/edit", {"name": "Renamed"}).status_code == 403
    assert client.post(f"{PAGE}{collection.pk}/delete").status_code == 403
    assert client.post(f"{PAGE}documents/{document.pk}/reingest").status_code == 403
    assert client.post(f"{PAGE}documents/{document.pk}/delete").status_code == 403
    collection.refresh_from_db()
    assert collection.name == "Handbook" and list(Document.objects.values_list("name", flat=True)) == ["a.txt"]
    assert Collection.objects.count() == 1
    assert not AuditEvent.objects.filter(action__startswith="collection.").exists()
    assert not AuditEvent.objects.filter(action__startswith="document.").exists()


def test_a_member_can_see_but_not_change_a_collection(client_as, org, builder, member):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(member, org)
    assert client.get(f"{PAGE}{collection.pk}/").status_code == 200
    assert upload(client, collection, ("b.txt", b"beta")).status_code == 403
    assert not Document.objects.exists()


def test_a_private_collection_is_invisible_to_a_member_without_a_grant(client_as, org, builder, member):
    private = factories.collection(org, "Secret plans", created_by=builder, visibility="private")
    client = client_as(member, org)
    assert "Secret plans" not in client.get(PAGE).content.decode()
    assert client.get(f"{PAGE}{private.pk}/").status_code == 404
    assert client.get(f"{PAGE}{private.pk}/search.json", {"q": "x"}).status_code == 404


def test_an_outsider_gets_404_everywhere_and_changes_nothing(client_as, org, builder, outsider_org, outsider):
    collection = factories.collection(org, "Handbook", created_by=builder)
    document = factories.document(collection, "a.txt", b"alpha")
    client = client_as(outsider, outsider_org)
    assert "Handbook" not in client.get(PAGE).content.decode()
    for path in (f"{PAGE}{collection.pk}/", f"{PAGE}{collection.pk}/documents.json",
                 f"{PAGE}{collection.pk}/search.json?q=alpha"):
        assert client.get(path).status_code == 404, path
    for path in (f"{PAGE}{collection.pk}/edit", f"{PAGE}{collection.pk}/delete",
                 f"{PAGE}documents/{document.pk}/reingest", f"{PAGE}documents/{document.pk}/delete"):
        assert client.post(path, {"name": "Mine"}).status_code == 404, path
    assert upload(client, collection, ("b.txt", b"beta")).status_code == 404
    collection.refresh_from_db()
    assert collection.name == "Handbook" and Document.objects.count() == 1


def test_reloading_a_form_answer_goes_back_to_its_page_never_a_bare_405(client_as, org, builder):
    collection = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(builder, org)
    for path, page in ((f"{PAGE}new", PAGE), (f"{PAGE}{collection.pk}/edit", f"{PAGE}{collection.pk}/"),
                       (f"{PAGE}{collection.pk}/documents", f"{PAGE}{collection.pk}/")):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == page, path
