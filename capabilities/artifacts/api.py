"""/api/v1/artifacts: the applications the caller can open, one with its current version, its versions, and
its grants (as for knowledge collections). Loads are org-scoped (another organization's id is a 404); access
per object is capabilities/artifacts/access.py; changes go through services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.serializers import ID_MAX
from capabilities.artifacts import access, services
from capabilities.artifacts.capability import link
from capabilities.artifacts.models import Artifact, ArtifactVersion


class ArtifactSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True)
    owner_id = serializers.IntegerField(read_only=True, allow_null=True)
    access = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = ["id", "name", "title", "agent_id", "environment", "owner_id", "visibility", "access",
                  "current_version", "url", "created_at", "updated_at"]

    def get_access(self, obj: Artifact) -> str | None:
        """The caller's level: view | edit."""
        level = self.context.get("access")
        return level(obj) if level else None

    def get_url(self, obj: Artifact) -> str:
        return link(obj)


class ArtifactDetailSerializer(ArtifactSerializer):
    content = serializers.SerializerMethodField()
    format = serializers.SerializerMethodField()

    class Meta(ArtifactSerializer.Meta):
        fields = [*ArtifactSerializer.Meta.fields, "format", "content"]

    def _current(self, obj: Artifact) -> ArtifactVersion | None:
        return self.context.get("current")

    def get_content(self, obj: Artifact) -> str:
        version = self._current(obj)
        return version.content if version else ""

    def get_format(self, obj: Artifact) -> str:
        version = self._current(obj)
        return version.format if version else ""


class ArtifactWriteSerializer(serializers.Serializer):
    visibility = serializers.ChoiceField(choices=Artifact.Visibility.choices)


# agents.serializers.VersionSerializer is the schema's "Version" (an agent's version): this one is named apart.
@extend_schema_serializer(component_name="ArtifactVersion")
class VersionSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = ArtifactVersion
        fields = ["number", "format", "size", "sha256", "run_id", "created_at"]


class ArtifactGrantSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(min_value=1, max_value=ID_MAX)
    email = serializers.EmailField(read_only=True)
    level = serializers.ChoiceField(choices=list(access.LEVELS))


class _ArtifactMixin:
    actor: Any

    def artifact(self, pk, *, level: str = access.VIEW) -> Artifact:
        artifact = self.org_get(Artifact, pk)  # type: ignore[attr-defined]
        access.require_access(self.actor, artifact, level)
        return artifact

    def detail(self, artifact: Artifact) -> dict:
        return ArtifactDetailSerializer(artifact, context={
            "access": lambda a: access.artifact_access(self.actor, a), "current": services.current(artifact)}).data


class ArtifactListView(_ArtifactMixin, BaseOrgView):
    serializer_class = ArtifactSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: ArtifactSerializer(many=True), **ERRORS},
                   parameters=[OpenApiParameter("shared", str, enum=["mine", "with_me"],
                                                description="Only mine, or only those shared with me (else all).")],
                   summary="Applications the caller can open (?shared=mine|with_me)")
    def get(self, request: Request) -> Response:
        qs = access.visible_artifacts(self.actor)
        shared = request.query_params.get("shared", "")
        if shared == "mine":
            qs = qs.filter(owner_id=self.actor.user_id)
        elif shared == "with_me":
            qs = qs.exclude(owner_id=self.actor.user_id)
        rows = self.paginate_queryset(qs.order_by("-updated_at", "pk"))
        levels = access.GRANTS.levels_for(self.actor.user_id, [a.pk for a in rows])
        context = {"access": lambda a: access.artifact_access(self.actor, a, known_grants=levels)}
        return self.get_paginated_response(ArtifactSerializer(rows, many=True, context=context).data)


class ArtifactDetailView(_ArtifactMixin, BaseOrgView):
    serializer_class = ArtifactDetailSerializer
    permission_map = {"GET": "agents:view", "PATCH": "agents:view"}

    @extend_schema(responses={200: ArtifactDetailSerializer, **ERRORS}, summary="One application, current version")
    def get(self, request: Request, pk) -> Response:
        return Response(self.detail(self.artifact(pk)))

    @extend_schema(request=ArtifactWriteSerializer, responses={200: ArtifactDetailSerializer, **WRITE_ERRORS},
                   summary="Change who reads an application (visibility)")
    def patch(self, request: Request, pk) -> Response:
        artifact = self.artifact(pk)
        data = self.valid(ArtifactWriteSerializer)
        services.set_visibility(actor=self.actor, artifact=artifact, visibility=data["visibility"])
        return Response(self.detail(artifact))


class ArtifactVersionListView(_ArtifactMixin, BaseOrgView):
    serializer_class = VersionSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: VersionSerializer(many=True), **ERRORS}, summary="An application's versions")
    def get(self, request: Request, pk) -> Response:
        artifact = self.artifact(pk)
        page = self.paginate_queryset(artifact.versions.order_by("-number"))
        return self.get_paginated_response(VersionSerializer(page, many=True).data)


class ArtifactGrantListView(_ArtifactMixin, BaseOrgView):
    serializer_class = ArtifactGrantSerializer
    permission_map = {"GET": "agents:view", "POST": "agents:view"}

    @extend_schema(responses={200: ArtifactGrantSerializer(many=True), **ERRORS},
                   summary="Who an application is shared with")
    def get(self, request: Request, pk) -> Response:
        page = self.paginate_queryset(access.GRANTS.holders(self.artifact(pk)))
        return self.get_paginated_response(ArtifactGrantSerializer(page, many=True).data)

    @extend_schema(request=ArtifactGrantSerializer, responses={201: ArtifactGrantSerializer, **WRITE_ERRORS},
                   summary="Share an application with a member (view or edit)")
    def post(self, request: Request, pk) -> Response:
        data = self.valid(ArtifactGrantSerializer)
        grant = services.share(actor=self.actor, artifact=self.artifact(pk), user_id=data["user_id"],
                               level=data["level"])
        return Response(ArtifactGrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class ArtifactGrantDetailView(_ArtifactMixin, BaseOrgView):
    serializer_class = ArtifactGrantSerializer
    permission_map = {"DELETE": "agents:view"}

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Revoke a grant on an application")
    def delete(self, request: Request, pk, user_id: int) -> Response:
        services.revoke(actor=self.actor, artifact=self.artifact(pk), user_id=int(user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
