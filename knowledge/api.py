"""Knowledge REST endpoints: collections, documents (upload → ingestion), context files, skills, and
Settings → Memory. Thin views: loads are org-scoped, changes go through the services."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from knowledge import services
from knowledge.models import Collection, ContextFile, Document

# ------------------------------------------------------------------ serializers


class CollectionSerializer(serializers.ModelSerializer):
    embedding_profile_id = serializers.UUIDField(allow_null=True, read_only=True)
    document_count = serializers.SerializerMethodField()
    search_mode = serializers.SerializerMethodField()

    class Meta:
        model = Collection
        fields = ["id", "name", "description", "embedding_profile_id", "search_mode", "document_count",
                  "created_at"]

    def get_document_count(self, obj: Collection) -> int:
        return getattr(obj, "n_documents", None) or obj.documents.count()

    def get_search_mode(self, obj: Collection) -> str:
        return "hybrid" if obj.embedding_profile_id else "lexical"


class CollectionWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    embedding_profile_id = serializers.UUIDField(required=False, allow_null=True, default=None)


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


class CollectionListView(BaseOrgView):
    serializer_class = CollectionSerializer
    permission_map = {"GET": "agents:view", "POST": "knowledge:manage"}

    @extend_schema(responses={200: CollectionSerializer(many=True), **ERRORS}, summary="Knowledge collections")
    def get(self, request: Request) -> Response:
        from django.db.models import Count

        rows = self.org_queryset(Collection).annotate(n_documents=Count("documents"))
        return Response(CollectionSerializer(rows, many=True).data)

    @extend_schema(request=CollectionWriteSerializer, responses={201: CollectionSerializer, **WRITE_ERRORS},
                   summary="Create a collection")
    def post(self, request: Request) -> Response:
        collection = services.create_collection(actor=self.actor, **self.valid(CollectionWriteSerializer))
        return Response(CollectionSerializer(collection).data, status=status.HTTP_201_CREATED)


class CollectionDetailView(BaseOrgView):
    serializer_class = CollectionSerializer
    permission_map = {"GET": "agents:view", "PATCH": "knowledge:manage", "DELETE": "knowledge:manage"}

    @extend_schema(responses={200: CollectionSerializer, **ERRORS}, summary="One collection")
    def get(self, request: Request, pk) -> Response:
        return Response(CollectionSerializer(self.org_get(Collection, pk)).data)

    @extend_schema(request=CollectionWriteSerializer(partial=True),
                   responses={200: CollectionSerializer, **WRITE_ERRORS}, summary="Change a collection")
    def patch(self, request: Request, pk) -> Response:
        collection = self.org_get(Collection, pk)
        serializer = CollectionWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {k: v for k, v in serializer.validated_data.items() if k in request.data}
        collection = services.update_collection(actor=self.actor, collection=collection, **changes)
        return Response(CollectionSerializer(collection).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a collection and its documents")
    def delete(self, request: Request, pk) -> Response:
        services.delete_collection(actor=self.actor, collection=self.org_get(Collection, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ------------------------------------------------------------------ documents


class DocumentListView(BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"GET": "agents:view", "POST": "knowledge:manage"}
    parser_classes = [parsers.MultiPartParser, parsers.FormParser]

    @extend_schema(responses={200: DocumentSerializer(many=True), **ERRORS}, summary="Documents of a collection")
    def get(self, request: Request, pk) -> Response:
        collection = self.org_get(Collection, pk)
        return Response(DocumentSerializer(collection.documents.all(), many=True).data)

    @extend_schema(request={"multipart/form-data": DocumentUploadSerializer},
                   responses={201: DocumentSerializer, **WRITE_ERRORS}, summary="Upload a document")
    def post(self, request: Request, pk) -> Response:
        collection = self.org_get(Collection, pk)
        data = self.valid(DocumentUploadSerializer)
        document = services.upload_document(actor=self.actor, collection=collection, upload=data.pop("file"), **data)
        return Response(DocumentSerializer(document).data, status=status.HTTP_201_CREATED)


class DocumentDetailView(BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"GET": "agents:view", "DELETE": "knowledge:manage"}

    def _document(self, pk) -> Document:
        return self.org_get(Document, pk)

    @extend_schema(responses={200: DocumentSerializer, **ERRORS}, summary="One document and its ingestion status")
    def get(self, request: Request, pk) -> Response:
        return Response(DocumentSerializer(self._document(pk)).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a document")
    def delete(self, request: Request, pk) -> Response:
        services.delete_document(actor=self.actor, document=self._document(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReingestView(BaseOrgView):
    serializer_class = DocumentSerializer
    permission_map = {"POST": "knowledge:manage"}

    @extend_schema(request=None, responses={202: DocumentSerializer, **WRITE_ERRORS}, summary="Ingest again")
    def post(self, request: Request, pk) -> Response:
        document = services.reingest_document(actor=self.actor, document=self.org_get(Document, pk))
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
        return Response(ContextFileSerializer(self.org_queryset(ContextFile), many=True).data)

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
