"""Knowledge REST: collections, documents (upload → ingestion on commit), context files. Every endpoint has
an outsider (404) and a too-weak role (403)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agenticos.models import AuditEvent
from knowledge.models import Chunk, Collection, ContextFile, Document
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(org):
    return factories.collection(org, "Handbook")


@pytest.fixture
def document(collection):
    return factories.document(collection, "a.txt", b"Alpha text.")


@pytest.fixture
def context_file(org):
    return ContextFile.objects.create(organization=org, name="Glossary", body="SLA = service level agreement")


def test_a_builder_creates_a_collection_and_it_is_audited(api_as, builder, org):
    response = api_as(builder, org).post("/api/v1/collections", {"name": "Policies"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["search_mode"] == "lexical"
    assert AuditEvent.objects.filter(organization=org, action="collection.create").count() == 1


def test_a_collection_with_a_chat_profile_is_refused(api_as, builder, org):
    chat = factories.model_profile(org)
    response = api_as(builder, org).post("/api/v1/collections", {"name": "X", "embedding_profile_id": str(chat.pk)},
                                         format="json")
    assert response.status_code == 422 and response.json()["error"]["details"]["field"] == "embedding_profile_id"


def test_a_duplicate_collection_name_conflicts(api_as, builder, org, collection):
    response = api_as(builder, org).post("/api/v1/collections", {"name": "Handbook"}, format="json")
    assert response.status_code == 409


def test_collections_list_in_a_constant_number_of_queries(api_as, viewer, org):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = api_as(viewer, org)
    counts = []
    for total in (1, 6):
        while Collection.objects.filter(organization=org).count() < total:
            factories.collection(org)  # empty ones too: a zero count must not trigger a query
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/api/v1/collections")
        assert response.status_code == 200 and len(response.json()["results"]) == total
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_uploading_a_document_ingests_it_after_commit(api_as, builder, org, collection,
                                                      django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("notes.md", b"# Notes\n\nThe office opens at nine.", content_type="text/markdown")
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(builder, org).post(f"/api/v1/collections/{collection.pk}/documents",
                                             {"file": upload, "org_unit": "HR"}, format="multipart")
    assert response.status_code == 201, response.json()
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == "ready" and document.org_unit == "HR" and document.kind == "md"
    status = api_as(builder, org).get(f"/api/v1/documents/{document.pk}").json()
    assert status["status"] == "ready" and status["chunk_count"] == 1


def test_an_unsupported_file_type_is_refused_with_the_supported_list(api_as, builder, org, collection):
    upload = SimpleUploadedFile("virus.exe", b"MZ...")
    response = api_as(builder, org).post(f"/api/v1/collections/{collection.pk}/documents", {"file": upload},
                                         format="multipart")
    assert response.status_code == 422 and ".pdf" in response.json()["error"]["details"]["supported"]


def test_reingest_and_delete_a_document(api_as, builder, org, document, django_capture_on_commit_callbacks):
    client = api_as(builder, org)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/api/v1/documents/{document.pk}/reingest").status_code == 202
    assert Chunk.objects.filter(document=document).count() == 1
    assert client.delete(f"/api/v1/documents/{document.pk}").status_code == 204
    assert not Document.objects.filter(pk=document.pk).exists()


def test_context_files_crud(api_as, builder, org):
    client = api_as(builder, org)
    created = client.post("/api/v1/context", {"name": "Tone", "body": "Be brief.", "mode": "link"}, format="json")
    assert created.status_code == 201
    pk = created.json()["id"]
    assert client.patch(f"/api/v1/context/{pk}", {"body": "Be kind."}, format="json").json()["body"] == "Be kind."
    assert [f["name"] for f in client.get("/api/v1/context").json()["results"]] == ["Tone"]
    assert client.delete(f"/api/v1/context/{pk}").status_code == 204
    assert AuditEvent.objects.filter(organization=org, action__startswith="context.").count() == 3


ENDPOINTS = [
    ("get", "/api/v1/collections/{collection}", None),
    ("patch", "/api/v1/collections/{collection}", {"name": "New"}),
    ("delete", "/api/v1/collections/{collection}", None),
    ("get", "/api/v1/collections/{collection}/documents", None),
    ("post", "/api/v1/collections/{collection}/documents", "upload"),
    ("get", "/api/v1/documents/{document}", None),
    ("delete", "/api/v1/documents/{document}", None),
    ("post", "/api/v1/documents/{document}/reingest", None),
    ("get", "/api/v1/context/{context}", None),
    ("patch", "/api/v1/context/{context}", {"body": "x"}),
    ("delete", "/api/v1/context/{context}", None),
]


def _call(client, method, url, body):
    if body == "upload":
        return client.post(url, {"file": SimpleUploadedFile("x.txt", b"x")}, format="multipart")
    return getattr(client, method)(url, body, format="json") if body else getattr(client, method)(url)


@pytest.mark.parametrize(("method", "template", "body"), ENDPOINTS)
def test_an_outsider_gets_404_on_every_object_endpoint(api_as, outsider, outsider_org, collection, document,
                                                        context_file, method, template, body):
    url = template.format(collection=collection.pk, document=document.pk, context=context_file.pk)
    response = _call(api_as(outsider, outsider_org), method, url, body)
    assert response.status_code == 404
    assert Collection.objects.filter(pk=collection.pk).exists() and Document.objects.filter(pk=document.pk).exists()


def test_an_outsider_lists_only_their_own_collections_and_context(api_as, outsider, outsider_org, collection,
                                                                   context_file):
    client = api_as(outsider, outsider_org)
    assert client.get("/api/v1/collections").json()["results"] == []
    assert client.get("/api/v1/context").json()["results"] == []


WRITES = [e for e in ENDPOINTS if e[0] != "get"] + [
    ("post", "/api/v1/collections", {"name": "Mine"}),
    ("post", "/api/v1/context", {"name": "Mine", "body": "x"}),
]


@pytest.mark.parametrize(("method", "template", "body"), WRITES)
def test_a_viewer_cannot_change_knowledge(api_as, viewer, org, collection, document, context_file, method,
                                          template, body):
    url = template.format(collection=collection.pk, document=document.pk, context=context_file.pk)
    response = _call(api_as(viewer, org), method, url, body)
    assert response.status_code == 403
    details = response.json()["error"]["details"]
    if template.startswith(("/api/v1/collections/{collection}", "/api/v1/documents/")):
        # decided per object (a grant could allow it): the refusal names the level
        assert details == {"needed": "edit", "have": "view"}
    else:
        assert details["permission"] == "knowledge:manage"
