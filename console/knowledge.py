"""Knowledge in the console: collections (create, rename, delete), their documents (upload by button, drop or
paste, every format the API ingests; status while ingesting, passages, the failure's reason, ingest again) and a
search-as-you-type preview over a collection.

Thin views over `knowledge.services` and `knowledge.grants` — the same services and access rules as
/api/v1/collections: a collection is loaded by organization (404 for anyone else's), then the level the person
holds on it (view < use < edit) decides what the page offers and what a POST may do.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, DomainError, Forbidden, Invalid, NotFound
from agenticos.models import Membership
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset
from agents.models import ModelProfile
from console.base import console_view, post_form, screen
from console.tools import form_errors, with_ip
from knowledge import grants, parsers, services
from knowledge.models import Collection, Document

READ = "agents:view"
PREVIEW_RESULTS = 5
QUERY_MAX = 500
FORM_FIELDS = frozenset({"name", "embedding_profile_id"})
# What the file picker offers: every extension the parsers read (knowledge/parsers.py), nothing else.
ACCEPT = ",".join(parsers.supported_extensions())


def _collection(actor: Actor, pk: Any, level: str = grants.VIEW) -> tuple[Collection, str]:
    collection = org_get(actor, Collection, pk, org_queryset(actor, Collection).select_related("embedding_profile"))
    return collection, grants.require_collection_access(actor, collection, level)


def _document(actor: Actor, pk: Any, level: str = grants.EDIT) -> Document:
    document = org_get(actor, Document, pk, org_queryset(actor, Document).select_related("collection"))
    grants.require_collection_access(actor, document.collection, level)
    return document


def _embedding_profiles(actor: Actor) -> list[ModelProfile]:
    return list(org_queryset(actor, ModelProfile).filter(kind=ModelProfile.Kind.EMBEDDING).order_by("label"))


def _status(exc: Exception) -> int:
    return 403 if isinstance(exc, Forbidden) else 409 if isinstance(exc, Conflict) else 422


def _form_errors(exc: DomainError) -> dict[str, str]:
    """Each problem at its field; one the form has no field for is said once above it."""
    errors: dict[str, str] = {}
    for field, message in form_errors(exc).items():
        key = field if field in FORM_FIELDS else "all"
        errors.setdefault(key, message)
    return errors


def document_row(document: Document) -> dict[str, Any]:
    """What the page and its status poll show of one document (the same words in both)."""
    return {
        "id": str(document.pk), "name": document.name, "kind": document.get_kind_display(),
        "size": document.size, "status": document.status, "status_label": str(document.get_status_display()),
        "chunks": document.chunk_count, "error": document.error,
        "busy": document.status in (Document.Status.PENDING, Document.Status.PROCESSING),
    }


# ------------------------------------------------------------------ collections


def _list_page(request: HttpRequest, actor: Actor, *, status: int = 200, **extra: Any) -> HttpResponse:
    rows = list(grants.visible_collections(actor).annotate(n_documents=Count("documents")).order_by("name", "pk"))
    levels = grants.grant_levels(actor.user_id, [c.pk for c in rows])
    for row in rows:
        row.level = grants.collection_access(actor, row, known_grants=levels)  # type: ignore[attr-defined]
        row.level_label = level_labels().get(row.level or "")  # type: ignore[attr-defined]
    context = {
        "nav": "knowledge", "collections": rows, "can_create": actor.has("knowledge:manage"),
        "embedding_profiles": _embedding_profiles(actor), "visibilities": Collection.Visibility.choices,
        "form": {}, "errors": {}, **extra,
    }
    return screen(request, "console/knowledge/list.html", context, status=status)


@console_view(READ)
def collection_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    return _list_page(request, actor)


def _collection_fields(request: HttpRequest) -> dict[str, Any]:
    post = request.POST
    fields: dict[str, Any] = {"name": (post.get("name") or "").strip(), "description": post.get("description", "")}
    if "embedding_profile_id" in post:
        fields["embedding_profile_id"] = post.get("embedding_profile_id") or None
    if post.get("visibility"):
        fields["visibility"] = post["visibility"]
    if not fields["name"]:
        raise Invalid(_("Give the collection a name."), details={"field": "name"})
    if len(fields["name"]) > 200:
        raise Invalid(_("A name has at most 200 characters."), details={"field": "name"})
    return fields


@post_form("console-knowledge:list")
@console_view("knowledge:manage")
def collection_create(request: HttpRequest, actor: Actor) -> HttpResponse:
    try:
        collection = services.create_collection(actor=with_ip(actor, request), **_collection_fields(request))
    except (Invalid, Conflict) as exc:
        return _list_page(request, actor, status=_status(exc), form=request.POST, errors=_form_errors(exc))
    messages.success(request, _("Created the collection %(name)s: add documents to it.") % {"name": collection.name})
    return redirect("console-knowledge:detail", pk=collection.pk)


@post_form("console-knowledge:detail")
@console_view(READ)
def collection_update(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    collection, _level = _collection(actor, pk, grants.EDIT)
    try:
        services.update_collection(actor=with_ip(actor, request), collection=collection, **_collection_fields(request))
    except (Invalid, Conflict) as exc:
        collection.refresh_from_db()
        return _detail_page(request, actor, collection, status=_status(exc), errors=_form_errors(exc),
                            form=request.POST)
    messages.success(request, _("Saved the collection %(name)s.") % {"name": collection.name})
    return redirect("console-knowledge:detail", pk=collection.pk)


@require_POST
@console_view(READ)
def collection_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    collection, _level = _collection(actor, pk, grants.EDIT)
    name = collection.name
    services.delete_collection(actor=with_ip(actor, request), collection=collection)
    messages.success(request, _("Deleted the collection %(name)s and its documents.") % {"name": name})
    return redirect("console-knowledge:list")


# ------------------------------------------------------------------ one collection and its documents


def _detail_page(request: HttpRequest, actor: Actor, collection: Collection, *, status: int = 200,
                 **extra: Any) -> HttpResponse:
    level = grants.collection_access(actor, collection)
    documents = [document_row(d) for d in collection.documents.order_by("name", "pk")]
    context = {
        "nav": "knowledge", "collection": collection, "level": level, "level_label": level_labels().get(level or ""),
        "can_edit": grants.at_least(level, grants.EDIT), "documents": documents,
        **(_sharing(actor, collection) if grants.at_least(level, grants.EDIT) else {}),
        "embedding_profiles": _embedding_profiles(actor), "visibilities": Collection.Visibility.choices,
        "accept": ACCEPT, "extensions": parsers.supported_extensions(),
        "max_mb": services.MAX_UPLOAD_BYTES // (1024 * 1024),
        "query": (request.GET.get("q") or "")[:QUERY_MAX], "results": None,
        "form": {}, "errors": {}, "upload_errors": [], "grant_errors": {}, "grant_form": {},
        "strings": knowledge_strings(),
        "current": {"name": collection.name, "description": collection.description,
                    "embedding_profile_id": str(collection.embedding_profile_id or ""),
                    "visibility": collection.visibility},
        **extra,
    }
    if context["query"].strip():
        context["results"] = services.search_preview(actor, collection, context["query"], limit=PREVIEW_RESULTS)
    return screen(request, "console/knowledge/detail.html", context, status=status)


@console_view(READ)
def collection_detail(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    collection, _level = _collection(actor, pk)
    return _detail_page(request, actor, collection)


@console_view(READ)
def document_status(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """The documents' status for the page's poll while something ingests."""
    collection, _level = _collection(actor, pk)
    return JsonResponse({"documents": [document_row(d) for d in collection.documents.order_by("name", "pk")]})


@post_form("console-knowledge:detail")
@console_view(READ)
def document_upload(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """One or more files (the button, a drop or a paste send the same form). Each is stored and queued by
    `services.upload_document`; a file it refuses is named with the reason, the others still go in."""
    collection, _level = _collection(actor, pk, grants.EDIT)
    files = request.FILES.getlist("file")
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    added: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    if not files:
        refused.append({"name": "", "message": _("Choose a file to upload.")})
    for upload in files:
        try:
            document = services.upload_document(actor=with_ip(actor, request), collection=collection, upload=upload)
        except Invalid as exc:
            message = exc.message
            supported = (exc.details or {}).get("supported") if isinstance(exc.details, dict) else None
            if supported:
                message = _("%(message)s These can: %(list)s.") % {"message": message, "list": ", ".join(supported)}
            refused.append({"name": upload.name or "", "message": message})
            continue
        added.append(document_row(document))
    if wants_json:
        return JsonResponse({"added": added, "refused": refused}, status=200 if added or not refused else 422)
    if refused:
        return _detail_page(request, actor, collection, status=422 if not added else 200, upload_errors=refused)
    messages.success(request, _("Uploaded %(n)s document(s): they are being read now.") % {"n": len(added)})
    return redirect("console-knowledge:detail", pk=collection.pk)


@require_POST
@console_view(READ)
def document_reingest(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    document = _document(actor, pk)
    services.reingest_document(actor=with_ip(actor, request), document=document, force=True)
    messages.success(request, _("%(name)s is being read again.") % {"name": document.name})
    return redirect(reverse("console-knowledge:detail", args=[document.collection_id]) + f"#doc-{document.pk}")


@require_POST
@console_view(READ)
def document_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    document = _document(actor, pk)
    collection_id, name = document.collection_id, document.name
    services.delete_document(actor=with_ip(actor, request), document=document)
    messages.success(request, _("Deleted %(name)s.") % {"name": name})
    return redirect("console-knowledge:detail", pk=collection_id)


# ------------------------------------------------------------------ who may read, use or change it


def level_labels() -> dict[str, str]:
    """The grant levels in the words of the page (knowledge/grants.py: view < use < edit)."""
    return {grants.VIEW: _("Can read"), grants.USE: _("Can read and use it in agents"),
            grants.EDIT: _("Can change, upload and share")}


def _sharing(actor: Actor, collection: Collection) -> dict[str, Any]:
    """The Sharing card: who holds a grant and the members one could grant to (all active members of the
    organization but oneself; granting again replaces the earlier level)."""
    labels = level_labels()
    holders = [{**g, "level_label": labels.get(g["level"], g["level"])} for g in grants.collection_grants(collection)]
    members = (Membership.objects.filter(organization=actor.organization, is_suspended=False, user__is_active=True)
               .exclude(user_id=actor.user_id).select_related("user").order_by("user__email"))
    return {"grants": holders, "grant_members": list(members), "grant_levels": list(labels.items())}


@post_form("console-knowledge:detail")
@console_view(READ)
def collection_share(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """Grant a member a level on the collection (edit access needed; knowledge.grants.share_collection)."""
    collection, _level = _collection(actor, pk, grants.EDIT)
    user_id, level = request.POST.get("user_id", ""), request.POST.get("level", "")
    errors: dict[str, str] = {}
    if not digits_only(user_id):
        errors["user_id"] = _("Choose a member.")
    if level not in grants.LEVELS:
        errors["level"] = _("Choose what they may do.")
    if not errors:
        try:
            granted = grants.share_collection(actor=with_ip(actor, request), collection=collection,
                                              user_id=int(user_id), level=level)
        except NotFound:
            errors["user_id"] = _("Choose a member of this organization.")
        else:
            messages.success(request, _("%(email)s: %(level)s.") % {
                "email": granted["email"], "level": level_labels()[level]})
            return redirect(reverse("console-knowledge:detail", args=[collection.pk]) + "#sharing")
    return _detail_page(request, actor, collection, status=422, grant_errors=errors, grant_form=request.POST)


@require_POST
@console_view(READ)
def collection_unshare(request: HttpRequest, actor: Actor, pk: Any, user_id: int) -> HttpResponse:
    collection, _level = _collection(actor, pk, grants.EDIT)
    grants.revoke_collection_grant(actor=with_ip(actor, request), collection=collection, user_id=user_id)
    messages.success(request, _("Access removed."))
    return redirect(reverse("console-knowledge:detail", args=[collection.pk]) + "#sharing")


# ------------------------------------------------------------------ search preview


@console_view(READ)
def collection_search(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    collection, _level = _collection(actor, pk)
    query = (request.GET.get("q") or "")[:QUERY_MAX]
    if not query.strip():
        return JsonResponse({"query": query, "words_only": False, "hits": []})
    try:
        return JsonResponse(services.search_preview(actor, collection, query, limit=PREVIEW_RESULTS))
    except DomainError as exc:
        return JsonResponse({"error": {"code": exc.code, "message": exc.message}}, status=exc.status)


def knowledge_strings() -> dict[str, str]:
    """The words knowledge.js writes (translated here, so the script holds none)."""
    return {
        "uploading": _("Uploading %(name)s…"), "refused": _("%(name)s was not added: %(message)s"),
        "failed": _("The upload did not reach the server. Try again."),
        "chunks": _("%(n)s passages"), "no_results": _("No passage matches."),
        "words_only": _("Matched by words only: this collection has no embedding model, or it could not be reached."),
        "searching": _("Searching…"), "pasted": _("pasted"),
    }
