"""Knowledge state changes: collections, documents and their ingestion. Each acts for an `actor`, runs in
one transaction with its audit row, and enqueues work after commit."""

from __future__ import annotations

import hashlib
import logging
from decimal import Decimal
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, Invalid
from agenticos.models import Organization
from agenticos.tenancy import Actor
from agents.models import ModelProfile
from knowledge import grants, parsers
from knowledge.embeddings import EmbeddingError, embed
from knowledge.models import Chunk, Collection, Document

logger = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
CHUNKER_VERSION = "c1"
# Passages one document may make (settings.KNOWLEDGE_MAX_DOCUMENT_CHUNKS): 20,000 is ~20 M characters, the text
# limit in knowledge/parsers.py, cut at ~1,000 characters; a file of many tiny pages reaches it sooner.
DEFAULT_MAX_DOCUMENT_CHUNKS = 20_000
# Passages one organization may hold in all its collections (settings.KNOWLEDGE_MAX_ORGANIZATION_CHUNKS): each
# carries its text and a vector, ~10 KB with a 1,536-dimension embedding, so 1 M is ~10 GB of one database.
DEFAULT_MAX_ORGANIZATION_CHUNKS = 1_000_000


def _ip(actor: Actor) -> str | None:
    return actor.extra.get("ip")


def _embedding_profile(actor: Actor, profile_id) -> ModelProfile | None:
    if not profile_id:
        return None
    profile = ModelProfile.objects.filter(organization=actor.organization, pk=profile_id).first()
    if profile is None:
        raise Invalid("No such model profile in this organization.", details={"field": "embedding_profile_id"})
    if profile.kind != ModelProfile.Kind.EMBEDDING:
        raise Invalid("That model profile is not an embedding model.", details={"field": "embedding_profile_id"})
    return profile


# ------------------------------------------------------------------ collections


def _visibility(value: str) -> str:
    if value not in Collection.Visibility.values:
        raise Invalid("Unknown visibility.", details={"field": "visibility", "allowed": list(Collection.Visibility.values)})
    return value


def create_collection(*, actor: Actor, name: str, description: str = "", embedding_profile_id=None,
                      visibility: str = Collection.Visibility.ORGANIZATION) -> Collection:
    with transaction.atomic():
        if Collection.objects.filter(organization=actor.organization, name=name).exists():
            raise Conflict("A collection with this name already exists.", details={"field": "name"})
        collection = Collection.objects.create(
            organization=actor.organization, name=name, description=description,
            embedding_profile=_embedding_profile(actor, embedding_profile_id), created_by=actor.user,
            visibility=_visibility(visibility),
        )
        audit.record(actor=actor.user, organization=actor.organization, action="collection.create",
                     target=collection, ip_address=_ip(actor))
    return collection


def update_collection(*, actor: Actor, collection: Collection, **changes) -> Collection:
    grants.require_collection_access(actor, collection, grants.EDIT)
    reembed = False
    with transaction.atomic():
        if "name" in changes and changes["name"] != collection.name:
            if Collection.objects.filter(organization=actor.organization, name=changes["name"]).exists():
                raise Conflict("A collection with this name already exists.", details={"field": "name"})
            collection.name = changes["name"]
        if "description" in changes:
            collection.description = changes["description"]
        if "visibility" in changes:
            collection.visibility = _visibility(changes["visibility"])
        if "embedding_profile_id" in changes:
            profile = _embedding_profile(actor, changes["embedding_profile_id"])
            reembed = (profile.pk if profile else None) != collection.embedding_profile_id
            collection.embedding_profile = profile
        collection.save()
        audit.record(actor=actor.user, organization=actor.organization, action="collection.update",
                     target=collection, details={"fields": sorted(changes)}, ip_address=_ip(actor))
        if reembed:
            ids = list(collection.documents.values_list("pk", flat=True))
            Document.objects.filter(pk__in=ids).update(status=Document.Status.PENDING)
            transaction.on_commit(lambda: _enqueue_all(ids))
    return collection


def _enqueue_all(ids) -> None:
    for document_id in ids:
        _enqueue(str(document_id))


def delete_collection(*, actor: Actor, collection: Collection) -> None:
    grants.require_collection_access(actor, collection, grants.EDIT)
    with transaction.atomic():
        grants.drop_grants_for_collection(collection)
        audit.record(actor=actor.user, organization=actor.organization, action="collection.delete",
                     target=collection, ip_address=_ip(actor))
        files = [str(d.file.name) for d in collection.documents.all() if d.file]
        collection.delete()
        transaction.on_commit(lambda: _delete_files(files))


# ------------------------------------------------------------------ documents


def upload_document(
    *,
    actor: Actor,
    collection: Collection,
    upload: UploadedFile,
    name: str = "",
    source: str = "",
    doc_type: str = "",
    org_unit: str = "",
    document_date=None,
) -> Document:
    grants.require_collection_access(actor, collection, grants.EDIT)
    filename = name or upload.name or "document"
    kind = parsers.kind_for(upload.name or filename) or parsers.kind_for(filename)
    if kind is None:
        raise Invalid(
            "This file type cannot be ingested.",
            details={"field": "file", "supported": parsers.supported_extensions()},
        )
    if upload.size and upload.size > MAX_UPLOAD_BYTES:
        raise Invalid("The file is larger than 50 MB.", details={"field": "file"})
    data = upload.read()
    with transaction.atomic():
        document = Document(
            organization=actor.organization, collection=collection, name=filename, kind=kind, size=len(data),
            sha256=hashlib.sha256(data).hexdigest(), source=source, doc_type=doc_type or kind, org_unit=org_unit,
            document_date=document_date, created_by=actor.user,
        )
        document.file.save(filename, ContentFile(data), save=False)
        document.save()
        audit.record(actor=actor.user, organization=actor.organization, action="document.upload",
                     target=document, details={"collection": str(collection.pk), "kind": kind},
                     ip_address=_ip(actor))
        document_id = str(document.pk)
        transaction.on_commit(lambda: _enqueue(document_id))
    return document


def reingest_document(*, actor: Actor, document: Document, force: bool = False) -> Document:
    """Queue the document again. An unchanged ready document (same file, same embedding model) is left as it
    is unless `force`: then it is read from scratch (the console's "Ingest again" after a parser change)."""
    grants.require_collection_access(actor, document.collection, grants.EDIT)
    with transaction.atomic():
        if force:
            Document.objects.filter(pk=document.pk).update(ingested_fingerprint="", status=Document.Status.PENDING,
                                                           error="")
            document.refresh_from_db()
        audit.record(actor=actor.user, organization=actor.organization, action="document.reingest",
                     target=document, ip_address=_ip(actor))
        document_id = str(document.pk)
        transaction.on_commit(lambda: _enqueue(document_id))
    return document


def delete_document(*, actor: Actor, document: Document) -> None:
    grants.require_collection_access(actor, document.collection, grants.EDIT)
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="document.delete",
                     target=document, ip_address=_ip(actor))
        files = [str(document.file.name)] if document.file else []
        document.delete()
        transaction.on_commit(lambda: _delete_files(files))


def _enqueue(document_id: str) -> None:
    from knowledge.tasks import ingest_document

    ingest_document.delay(document_id)


def _delete_files(names: list[str]) -> None:
    from django.core.files.storage import default_storage

    for name in names:
        try:
            default_storage.delete(name)
        except OSError:
            logger.warning("could not delete stored file %s", name)


# ------------------------------------------------------------------ ingestion


class IngestionRefused(Exception):
    """Ingestion cannot start (budget used up). The message is the document's failure reason."""


def fingerprint(document: Document, profile: ModelProfile | None) -> str:
    return f"{document.sha256}:{profile.pk if profile else 'lexical'}:{CHUNKER_VERSION}"


def ingest(document_id: str) -> Document | None:
    """Parse, chunk, embed and store one document. Idempotent: the same file with the same embedding model
    is not ingested twice, and a re-ingestion replaces the chunks in one transaction."""
    document = Document.objects.select_related("collection__embedding_profile", "organization").filter(
        pk=document_id).first()
    if document is None:
        return None
    profile = document.collection.embedding_profile
    mark = fingerprint(document, profile)
    if document.status == Document.Status.READY and document.ingested_fingerprint == mark:
        return document
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PROCESSING, error="")
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
        limit = parsers.setting("KNOWLEDGE_MAX_DOCUMENT_CHUNKS", DEFAULT_MAX_DOCUMENT_CHUNKS)
        pieces = parsers.chunk(parsers.parse(document.kind, data), limit=limit)
        _check_organization_room(document, len(pieces))  # before any embedding is paid for
        vectors: list[list[float]] | None = None
        if profile is not None:
            vectors = _embed_for_ingestion(document, profile, [p.text for p in pieces])
    except (parsers.ParseError, EmbeddingError, IngestionRefused) as exc:
        return _fail(document, str(exc))
    except OSError:
        return _fail(document, "The uploaded file could not be read from storage; upload it again.")
    try:
        with transaction.atomic():
            # Again under the organization's lock: two documents ingested at once cannot both take the last room.
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                               [f"knowledge-chunks:{document.organization_id}"])
            _check_organization_room(document, len(pieces))
            Chunk.objects.filter(document=document).delete()
            Chunk.objects.bulk_create([
                Chunk(
                    organization_id=document.organization_id, collection_id=document.collection_id,
                    document=document, position=i, page=piece.page, text=piece.text,
                    embedding=vectors[i] if vectors else None,
                    embedding_dims=len(vectors[i]) if vectors else None,
                )
                for i, piece in enumerate(pieces)
            ], batch_size=500)
            Document.objects.filter(pk=document.pk).update(
                status=Document.Status.READY, error="", chunk_count=len(pieces), ingested_fingerprint=mark,
                ingested_at=timezone.now(),
            )
    except IngestionRefused as exc:
        return _fail(document, str(exc))
    document.refresh_from_db()
    return document


def _check_organization_room(document: Document, adding: int) -> None:
    """The organization's passages, this document's earlier ones excepted (a re-ingestion replaces them),
    plus `adding` must stay within its ceiling."""
    limit = parsers.setting("KNOWLEDGE_MAX_ORGANIZATION_CHUNKS", DEFAULT_MAX_ORGANIZATION_CHUNKS)
    held = Chunk.objects.filter(organization_id=document.organization_id).exclude(document_id=document.pk).count()
    if held + adding > limit:
        raise IngestionRefused(
            f"Not stored: this document makes {adding:,} passages and the organization's knowledge already holds "
            f"{held:,} of at most {limit:,}. Delete documents no longer needed, or ask the operator to raise "
            "KNOWLEDGE_MAX_ORGANIZATION_CHUNKS."
        )


def _fail(document: Document, reason: str) -> Document:
    """A failed document keeps no passages: search skips it anyway, and its old ones would still fill the
    organization's room."""
    with transaction.atomic():
        Chunk.objects.filter(document_id=document.pk).delete()
        Document.objects.filter(pk=document.pk).update(status=Document.Status.FAILED, error=reason[:2000],
                                                       chunk_count=0, ingested_fingerprint="")
    document.refresh_from_db()
    return document


def _embed_for_ingestion(document: Document, profile: ModelProfile, texts: list[str]) -> list[list[float]]:
    check_budget(document.organization)
    result = embed(profile, texts)
    record_embedding_spend(document.organization, profile, result.tokens, result.cost_usd, result.is_partial)
    return result.vectors


def check_budget(organization: Organization, *, agent_id=None, agent_budget: Decimal | None = None) -> None:
    """Before the work: a used-up cap refuses it (the spend that would break the cap is never made)."""
    from governance.budgets import caps_for, first_exhausted

    cap = first_exhausted(caps_for(organization=organization, agent_id=agent_id, agent_budget=agent_budget))
    if cap is not None:
        raise IngestionRefused(
            f"Not embedded: {cap.label} of ${cap.limit:.2f} is used up (${cap.spent:.2f} spent this month)."
        )


def record_embedding_spend(
    organization: Organization, profile: ModelProfile, tokens: int, cost: Decimal, partial: bool, *,
    run_id=None, agent_id=None, surface: str = "",
) -> None:
    """Ingestion spend is the organization's; a query embedding made during a run is also the run's (its
    cost moves the run's total and counts against the run's embed, as knowledge/usage.py explains)."""
    from knowledge import usage

    meter = usage.Meter(organization_id=str(organization.pk), run_id=None, agent_id=usage.as_uuid(agent_id),
                        embed_id=None, surface=surface)
    if run_id is not None:
        from types import SimpleNamespace

        meter = usage.meter_for(SimpleNamespace(run_id=run_id, organization_id=organization.pk,
                                                agent_id=agent_id, surface=surface))
    usage.record(meter, kind="embedding", model=f"{profile.provider}:{profile.model}", input_tokens=tokens,
                 output_tokens=0, cost=cost, partial=partial)


def search_preview(actor: Actor, collection: Collection, query: str, *, limit: int) -> dict[str, Any]:
    """The passages an agent bound to this collection would get for `query`: the same hybrid search
    (knowledge.search), its query embedding checked against the organization's budget and recorded as its
    spend like an ingestion's. A collection without an embedding model is searched by words, as agents do.
    The caller has checked the actor may view the collection."""
    from knowledge import search as ks

    def embed_query(target: Collection, text: str) -> list[float] | None:
        profile = target.embedding_profile
        if profile is None:
            return None
        try:
            check_budget(actor.organization)
            result = embed(profile, [text])
        except (IngestionRefused, EmbeddingError):
            return None  # searched by words only, and the page says so (outcome.degraded)
        record_embedding_spend(actor.organization, profile, result.tokens, result.cost_usd,
                                        result.is_partial, surface="console")
        return result.vectors[0] if result.vectors else None

    scope = ks.resolve_scope(str(actor.organization.pk), [str(collection.pk)])
    outcome = ks.search(scope, [query], top_k=limit, filters=ks.Filters(), embed_query=embed_query)
    return {
        "query": query,
        "words_only": outcome.lexical_only or bool(outcome.degraded),
        "hits": [{"citation": hit.citation(), "document_id": hit.document_id, "page": hit.page,
                  "text": hit.text[:600]} for hit in outcome.hits],
    }
