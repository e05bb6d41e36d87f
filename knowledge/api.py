"""Knowledge REST endpoints: collections, documents (upload → ingestion), context files, skills, and
Settings → Memory. Thin views: loads are org-scoped, changes go through the services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.serializers import ID_MAX
from agenticos.tenancy import parse_uuid
from knowledge import grants, services
from knowledge.models import Collection, ContextFile, Document

# ------------------------------------------------------------------ serializers


class CollectionSerializer(serializers.ModelSerializer):
    embedding_profile_id = serializers.UUIDField(allow_null=True, read_only=True)
    document_count = serializers.SerializerMethodField()
    search_mode = serializers.SerializerMethodField()
    access = serializers.SerializerMethodField()

    class Meta:
        model = Collection
        fields = ["id", "name", "description", "embedding_profile_id", "search_mode", "visibility", "access",
                  "document_count", "created_at"]

    def get_access(self, obj: Collection) -> str | None:
        """The caller's level: view | use | edit."""
        access = self.context.get("access")
        return access(obj) if access else None

    def get_document_count(self, obj: Collection) -> int:
        annotated = getattr(obj, "n_documents", None)
        return annotated if annotated is not None else obj.documents.count()

    def get_search_mode(self, obj: Collection) -> str:
        return "hybrid" if obj.embedding_profile_id else "lexical"


class CollectionWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    embedding_profile_id = serializers.UUIDField(required=False, allow_null=True, default=None)
    visibility = serializers.ChoiceField(choices=Collection.Visibility.choices, required=False,
                                         default=Collection.Visibility.ORGANIZATION)


class CollectionGrantSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(min_value=1, max_value=ID_MAX)
    email = serializers.EmailField(read_only=True)
    level = serializers.ChoiceField(choices=list(grants.LEVELS))


class DocumentSerializer(serializers.ModelSerializer):
    collection_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = Document
        fields = ["id", "collection_id", "name", "kind", "size", "source", "doc_type", "org_unit", "document_date",
                  "status", "error", "chunk_count", "created_at", "ingested_at"]


class DocumentUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    name = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    source = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    doc_type = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    org_unit = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    document_date = serializers.DateField(required=False, allow_null=True, default=None)


# ------------------------------------------------------------------ collections


class CollectionAccessMixin:
    """Collections are loaded by organization (404 for anything else), then access is decided per object
    by knowledge.grants: the role gives a level, a grant can raise it. Writes need only agents:view from the
    role because an edit grant may allow them; the services refuse what the level does not."""

    actor: Any

    def collection(self, pk, *, level: str = grants.VIEW) -> Collection:
        collection = self.org_get(Collection, pk)  # type: ignore[attr-defined]
        grants.require_collection_access(self.actor, collection, level)
        return collection

    def document(self, pk, *, level: str = grants.VIEW) -> Document:
        document = self.org_get(Document, pk, Document.objects.select_related("collection"))  # type: ignore[attr-defined]
        grants.require_collection_access(self.actor, document.collection, level)
        return document

    def serialize(self, collection: Collection) -> dict:
        return CollectionSerializer(
            collection, context={"access": lambda c: grants.collection_access(self.actor, c)}).data


class CollectionListView(CollectionAccessMixin, BaseOrgView):
    serializer_class = CollectionSerializer
    permission_map = {"GET": "agents:view", "POST": "knowledge:manage"}

    @extend_schema(responses={200: CollectionSerializer(many=True), **ERRORS},
                   summary="Knowledge collections the caller can see")
    def get(self, request: Request) -> Response:
        from django.db.models import Count

        qs = grants.visible_collections(self.actor).annotate(n_documents=Count("documents")).order_by("name", "pk")
        rows = self.paginate_queryset(qs)
        levels = grants.grant_levels(self.actor.user_id, [c.pk for c in rows])
        context = {"access": lambda c: grants.collection_access(self.actor, c, known_grants=levels)}
        return self.get_paginated_response(CollectionSerializer(rows, many=True, context=context).data)

    @extend_schema(request=CollectionWriteSerializer, responses={201: CollectionSerializer, **WRITE_ERRORS},
                   summary="Create a collection")
    def post(self, request: Request) -> Response:
        collection = services.create_collection(actor=self.actor, **self.valid(CollectionWriteSerializer))
        return Response(self.serialize(collection), status=status.HTTP_201_CREATED)


class CollectionDetailView(CollectionAccessMixin, BaseOrgView):
    serializer_class = CollectionSerializer
    permission_map = {"GET": "agents:view", "PATCH": "agents:view", "DELETE": "agents:view"}

    @extend_schema(responses={200: CollectionSerializer, **ERRORS}, summary="One collection")
    def get(self, request: Request, pk) -> Response:
        return Response(self.serialize(self.collection(pk)))

    @extend_schema(request=CollectionWriteSerializer(partial=True),
                   responses={200: CollectionSerializer, **WRITE_ERRORS}, summary="Change a collection")
    def patch(self, request: Request, pk) -> Response:
        collection = self.collection(pk)
        serializer = CollectionWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {k: v for k, v in serializer.validated_data.items() if k in request.data}
        collection = services.update_collection(actor=self.actor, collection=collection, **changes)
        return Response(self.serialize(collection))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a collection and its documents")
    def delete(self, request: Request, pk) -> Response:
        services.delete_collection(actor=self.actor, collection=self.collection(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class CollectionGrantListView(CollectionAccessMixin, BaseOrgView):
    serializer_class = CollectionGrantSerializer
    permission_map = {"GET": "agents:view", "POST": "agents:view"}

    @extend_schema(responses={200: CollectionGrantSerializer(many=True), **ERRORS},
                   summary="Who a collection is shared with")
    def get(self, request: Request, pk) -> Response:
        collection = self.collection(pk)
        page = self.paginate_queryset(grants.collection_grants(collection))
        return self.get_paginated_response(CollectionGrantSerializer(page, many=True).data)

    @extend_schema(request=CollectionGrantSerializer, responses={201: CollectionGrantSerializer, **WRITE_ERRORS},
                   summary="Share a collection with a member (view, use or edit)")
    def post(self, request: Request, pk) -> Response:
        data = self.valid(CollectionGrantSerializer)
        grant = grants.share_collection(actor=self.actor, collection=self.collection(pk), user_id=data["user_id"],
                                        level=data["level"])
        return Response(CollectionGrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class CollectionGrantDetailView(CollectionAccessMixin, BaseOrgView):
    serializer_class = CollectionGrantSerializer
    permission_map = {"DELETE": "agents:view"}

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Revoke a grant on a collection")
    def delete(self, request: Request, pk, user_id: int) -> Response:
        grants.revoke_collection_grant(actor=self.actor, collection=self.collection(pk), user_id=int(user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ------------------------------------------------------------------ documents


class DocumentListView(CollectionAccessMixin, BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"GET": "agents:view", "POST": "agents:view"}
    parser_classes = [parsers.MultiPartParser, parsers.FormParser]

    @extend_schema(responses={200: DocumentSerializer(many=True), **ERRORS}, summary="Documents of a collection")
    def get(self, request: Request, pk) -> Response:
        collection = self.collection(pk)
        page = self.paginate_queryset(collection.documents.order_by("name", "pk"))
        return self.get_paginated_response(DocumentSerializer(page, many=True).data)

    @extend_schema(request={"multipart/form-data": DocumentUploadSerializer},
                   responses={201: DocumentSerializer, **WRITE_ERRORS}, summary="Upload a document")
    def post(self, request: Request, pk) -> Response:
        collection = self.collection(pk)
        data = self.valid(DocumentUploadSerializer)
        document = services.upload_document(actor=self.actor, collection=collection, upload=data.pop("file"), **data)
        return Response(DocumentSerializer(document).data, status=status.HTTP_201_CREATED)


class DocumentDetailView(CollectionAccessMixin, BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"GET": "agents:view", "DELETE": "agents:view"}

    @extend_schema(responses={200: DocumentSerializer, **ERRORS}, summary="One document and its ingestion status")
    def get(self, request: Request, pk) -> Response:
        return Response(DocumentSerializer(self.document(pk)).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a document")
    def delete(self, request: Request, pk) -> Response:
        services.delete_document(actor=self.actor, document=self.document(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReingestView(CollectionAccessMixin, BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"POST": "agents:view"}

    @extend_schema(request=None, responses={202: DocumentSerializer, **WRITE_ERRORS}, summary="Ingest again")
    def post(self, request: Request, pk) -> Response:
        document = services.reingest_document(actor=self.actor, document=self.document(pk))
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)


# ------------------------------------------------------------------ context files


class ContextFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContextFile
        fields = ["id", "name", "description", "format", "mode", "body", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]


class ContextFileListView(BaseOrgView):
    serializer_class = ContextFileSerializer
    permission_map = {"GET": "agents:view", "POST": "knowledge:manage"}

    @extend_schema(responses={200: ContextFileSerializer(many=True), **ERRORS}, summary="Context files")
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.org_queryset(ContextFile).order_by("name", "pk"))
        return self.get_paginated_response(ContextFileSerializer(page, many=True).data)

    @extend_schema(request=ContextFileSerializer, responses={201: ContextFileSerializer, **WRITE_ERRORS},
                   summary="Create a context file")
    def post(self, request: Request) -> Response:
        from knowledge import context_services

        item = context_services.create_context_file(actor=self.actor, **self.valid(ContextFileSerializer))
        return Response(ContextFileSerializer(item).data, status=status.HTTP_201_CREATED)


class ContextFileDetailView(BaseOrgView):
    serializer_class = ContextFileSerializer
    permission_map = {"GET": "agents:view", "PATCH": "knowledge:manage", "DELETE": "knowledge:manage"}

    @extend_schema(responses={200: ContextFileSerializer, **ERRORS}, summary="One context file")
    def get(self, request: Request, pk) -> Response:
        return Response(ContextFileSerializer(self.org_get(ContextFile, pk)).data)

    @extend_schema(request=ContextFileSerializer(partial=True), responses={200: ContextFileSerializer, **WRITE_ERRORS},
                   summary="Change a context file")
    def patch(self, request: Request, pk) -> Response:
        from knowledge import context_services

        item = self.org_get(ContextFile, pk)
        serializer = ContextFileSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        item = context_services.update_context_file(actor=self.actor, item=item, **serializer.validated_data)
        return Response(ContextFileSerializer(item).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a context file")
    def delete(self, request: Request, pk) -> Response:
        from knowledge import context_services

        context_services.delete_context_file(actor=self.actor, item=self.org_get(ContextFile, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ------------------------------------------------------------------ Settings → Memory


class MemoryNoteSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent_id = serializers.UUIDField()
    agent_name = serializers.CharField(source="agent.name")
    name = serializers.CharField()
    content = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MyMemoryPageSerializer(serializers.Serializer):
    """A page of my notes (the project's limit/offset page) and the agents whose memory cannot be listed."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = MemoryNoteSerializer(many=True)
    not_listed_mem0_agents = serializers.ListField(
        child=serializers.CharField(),
        help_text="Agents remembering with mem0: it answers what matches a question, not what is stored.")


class MyMemoryView(BaseOrgView):
    """Everything agents here wrote about me. No permission: the answer is the same for a Viewer and an Owner."""

    serializer_class = MemoryNoteSerializer
    permission_map: dict[str, str] = {}

    @extend_schema(responses={200: MyMemoryPageSerializer, **ERRORS}, summary="My memory")
    def get(self, request: Request) -> Response:
        from knowledge.mem0 import endpoints_for_agent
        from knowledge.models import MemoryNote

        notes = MemoryNote.objects.filter(organization=self.actor.organization, owner_user=self.actor.user,
                                          chat_key="").select_related("agent").order_by("agent__name", "-updated_at",
                                                                                        "pk")
        from governance.grants import visible_agents

        # Only agents the person can see: a private agent's name is not everyone's to read.
        mem0_agents = [a.name for a in visible_agents(self.actor).order_by("name").prefetch_related("versions")
                       if endpoints_for_agent(a)]
        response = self.get_paginated_response(MemoryNoteSerializer(self.paginate_queryset(notes), many=True).data)
        # mem0 answers "what matches a question", not "what is stored": these agents cannot be listed here.
        response.data["not_listed_mem0_agents"] = mem0_agents
        return response


class MyMemoryNoteBase(BaseOrgView):
    serializer_class = MemoryNoteSerializer
    permission_map: dict[str, str] = {}

    def note(self, pk):
        from knowledge.models import MemoryNote

        mine = MemoryNote.objects.filter(organization=self.actor.organization, owner_user=self.actor.user,
                                         chat_key="").select_related("agent")
        return self.org_get(MemoryNote, pk, mine)


class MyMemoryNoteView(MyMemoryNoteBase):
    @extend_schema(responses={204: None, **ERRORS}, summary="Delete one of my notes")
    def delete(self, request: Request, pk) -> Response:
        from knowledge import memory

        memory.delete(actor=self.actor, note=self.note(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MyMemoryNoteActionView(MyMemoryNoteBase):
    # A sibling of MyMemoryNoteView, not a child: inheriting its delete(pk) made DELETE on this route
    # (which also passes `action`) a TypeError instead of a 405.
    @extend_schema(request=None, responses={200: MemoryNoteSerializer, **ERRORS},
                   summary="Suspend or restore one of my notes")
    def post(self, request: Request, pk, action: str) -> Response:
        from knowledge import memory

        note = self.note(pk)
        if action == "suspend":
            note = memory.suspend(actor=self.actor, note=note)
        elif action == "restore":
            note = memory.restore(actor=self.actor, note=note)
        else:
            from agenticos.errors import NotFound

            raise NotFound("Unknown action.")
        return Response(MemoryNoteSerializer(note).data)


class ClearMemorySerializer(serializers.Serializer):
    user_id = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1, max_value=ID_MAX)


class ClearMemoryView(BaseOrgView):
    """Clear everything agents remember about a person: oneself always; another member with members:manage."""

    serializer_class = ClearMemorySerializer
    permission_map: dict[str, str] = {}

    @extend_schema(request=ClearMemorySerializer, responses={200: None, **WRITE_ERRORS}, summary="Clear memory")
    def post(self, request: Request) -> Response:
        from agenticos.errors import DomainError, NotFound
        from agenticos.models import Membership
        from knowledge import memory
        from knowledge.mem0 import Mem0Error

        user_id = self.valid(ClearMemorySerializer)["user_id"] or self.actor.user_id
        if user_id != self.actor.user_id:
            self.actor.require("members:manage")
            if not Membership.objects.filter(organization=self.actor.organization, user_id=user_id).exists():
                raise NotFound("Member not found.")
        try:
            result = memory.clear_person(actor=self.actor, user_id=user_id)
        except Mem0Error as exc:
            raise DomainError(f"Memory was not cleared: {exc}", code="mem0_unavailable") from exc
        return Response(result)


class PersonMemoryView(BaseOrgView):
    """Deployment administrators only: read another person's notes in a named tenant, with a reason.

    Audited with actor, tenant, subject and reason, never the content. An organization role (even Owner)
    or an edit grant on the agent does not open it."""

    serializer_class = MemoryNoteSerializer
    permission_map: dict[str, str] = {}

    def initial(self, request: Request, *args, **kwargs) -> None:
        # Deliberately not the org-resolving base: the administrator need not be a member of the tenant.
        from rest_framework.generics import GenericAPIView

        GenericAPIView.initial(self, request, *args, **kwargs)

    @extend_schema(responses={200: MemoryNoteSerializer(many=True), **ERRORS}, summary="A person's memory (admins)")
    def get(self, request: Request, user_id: int) -> Response:
        from agenticos import audit
        from agenticos.errors import Forbidden, Invalid, NotFound
        from agenticos.models import Membership, Organization
        from knowledge.models import MemoryNote

        if not getattr(request.user, "is_superuser", False):
            raise Forbidden("Only a deployment administrator can read another person's memory.")
        reason = (request.query_params.get("reason") or "").strip()
        tenant_id = request.query_params.get("organization_id") or ""
        if not reason or not tenant_id:
            raise Invalid("Name the tenant (organization_id) and a reason.",
                          details={"fields": ["organization_id", "reason"]})
        organization = Organization.objects.filter(pk=tenant_id).first() if parse_uuid(tenant_id) else None
        if organization is None or not Membership.objects.filter(organization=organization, user_id=user_id).exists():
            raise NotFound("No such person in that organization.")
        notes = MemoryNote.objects.filter(organization=organization, owner_user_id=user_id, chat_key="").select_related(
            "agent").order_by("agent__name", "-updated_at", "pk")
        audit.record(actor=request.user, organization=organization, action="memory.admin_read",
                     target_type="user", target_id=str(user_id), details={"reason": reason[:500]},
                     ip_address=request.META.get("REMOTE_ADDR"))
        page = self.paginate_queryset(notes)
        return self.get_paginated_response(MemoryNoteSerializer(page, many=True).data)


# ------------------------------------------------------------------ skills


class SkillFileSerializer(serializers.Serializer):
    path = serializers.CharField(max_length=300)
    content = serializers.CharField(allow_blank=True)


class SkillSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True)
    skill_md = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()
    updated_at = serializers.DateTimeField(read_only=True)

    def get_skill_md(self, obj) -> str:
        from knowledge.skills import skill_md_text

        return skill_md_text(obj)

    def get_files(self, obj) -> list[dict]:
        return [{"path": f.path, "content": f.content} for f in obj.files.all()]


class SkillWriteSerializer(serializers.Serializer):
    skill_md = serializers.CharField()
    files = SkillFileSerializer(many=True, required=False, default=list)


class SkillListView(BaseOrgView):
    serializer_class = SkillSerializer
    permission_map = {"GET": "agents:view", "POST": "knowledge:manage"}

    @extend_schema(responses={200: SkillSerializer(many=True), **ERRORS}, summary="Skills")
    def get(self, request: Request) -> Response:
        from knowledge.models import Skill

        page = self.paginate_queryset(self.org_queryset(Skill).prefetch_related("files").order_by("name", "pk"))
        return self.get_paginated_response(SkillSerializer(page, many=True).data)

    @extend_schema(request=SkillWriteSerializer, responses={201: SkillSerializer, **WRITE_ERRORS}, summary="Add a skill")
    def post(self, request: Request) -> Response:
        from knowledge import skills

        data = self.valid(SkillWriteSerializer)
        skill = skills.create_skill(actor=self.actor, skill_md=data["skill_md"], files=data["files"])
        return Response(SkillSerializer(skill).data, status=status.HTTP_201_CREATED)


class SkillDetailView(BaseOrgView):
    serializer_class = SkillSerializer
    permission_map = {"GET": "agents:view", "PATCH": "knowledge:manage", "DELETE": "knowledge:manage"}

    def _skill(self, pk):
        from knowledge.models import Skill

        return self.org_get(Skill, pk)

    @extend_schema(responses={200: SkillSerializer, **ERRORS}, summary="One skill")
    def get(self, request: Request, pk) -> Response:
        return Response(SkillSerializer(self._skill(pk)).data)

    @extend_schema(request=SkillWriteSerializer(partial=True), responses={200: SkillSerializer, **WRITE_ERRORS},
                   summary="Change a skill")
    def patch(self, request: Request, pk) -> Response:
        from knowledge import skills

        skill = self._skill(pk)
        serializer = SkillWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        skill = skills.update_skill(actor=self.actor, skill=skill, skill_md=data.get("skill_md"),
                                    files=data["files"] if "files" in request.data else None)
        return Response(SkillSerializer(skill).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a skill")
    def delete(self, request: Request, pk) -> Response:
        from knowledge import skills

        skills.delete_skill(actor=self.actor, skill=self._skill(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SkillProposalSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    skill_id = serializers.UUIDField()
    path = serializers.CharField()
    content = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class SkillProposalListView(BaseOrgView):
    serializer_class = SkillProposalSerializer
    permission_map = {"GET": "skills:edit"}

    @extend_schema(responses={200: SkillProposalSerializer(many=True), **ERRORS}, summary="Proposed skill edits")
    def get(self, request: Request) -> Response:
        from knowledge.models import SkillProposal

        rows = SkillProposal.objects.filter(organization=self.actor.organization, status="pending").order_by(
            "-created_at", "pk")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(SkillProposalSerializer(page, many=True).data)


class SkillProposalDecisionView(BaseOrgView):
    serializer_class = SkillProposalSerializer
    permission_map = {"POST": "skills:edit"}

    @extend_schema(request=None, responses={200: SkillProposalSerializer, **WRITE_ERRORS},
                   summary="Accept or discard a proposed skill edit")
    def post(self, request: Request, pk, decision: str) -> Response:
        from agenticos.errors import NotFound
        from knowledge import skills
        from knowledge.models import SkillProposal

        if decision not in ("accept", "discard"):
            raise NotFound("Unknown decision.")
        proposal = self.org_get(SkillProposal, pk, SkillProposal.objects.filter(
            organization=self.actor.organization).select_related("skill"))
        proposal = skills.decide_proposal(actor=self.actor, proposal=proposal, accept=decision == "accept")
        return Response(SkillProposalSerializer(proposal).data)
