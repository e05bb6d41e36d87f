"""Agents REST endpoints: model profiles, agents and drafts, publish, versions, diff, environments,
YAML export/import, grants. Thin views: every load is org-scoped, every check is in the services."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, parsers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, IMAGE_UPLOAD_SCHEMA, WRITE_ERRORS, BaseOrgView, uploaded_image
from agenticos.errors import NotFound
from agenticos.strings import digits_only
from agents import services
from agents.models import Agent, AgentVersion, Environment, ModelProfile
from agents.serializers import (
    AgentCreateSerializer,
    AgentDetailSerializer,
    AgentExportSerializer,
    AgentSerializer,
    AgentUpdateSerializer,
    DiffSerializer,
    EnvironmentSerializer,
    GrantCreateSerializer,
    GrantSerializer,
    ImportSerializer,
    ModelProfileSerializer,
    ModelProfileWriteSerializer,
    PromoteSerializer,
    PublishSerializer,
    VersionDetailSerializer,
    VersionSerializer,
)
from governance import grants

# ------------------------------------------------------------------ model profiles


def _profiles(view: BaseOrgView):
    return view.org_queryset(ModelProfile).select_related("secret").prefetch_related("fallbacks")


class ModelProfileListView(mixins.ListModelMixin, BaseOrgView):
    serializer_class = ModelProfileSerializer
    permission_map = {"GET": "agents:view", "POST": "models:manage"}

    def get_queryset(self):
        return _profiles(self)

    @extend_schema(responses={200: ModelProfileSerializer(many=True), **ERRORS}, summary="Model profiles")
    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=ModelProfileWriteSerializer, responses={201: ModelProfileSerializer, **WRITE_ERRORS},
                   summary="Create a model profile")
    def post(self, request: Request) -> Response:
        profile = services.create_model_profile(actor=self.actor, **self.valid(ModelProfileWriteSerializer))
        return Response(ModelProfileSerializer(_profiles(self).get(pk=profile.pk)).data, status=status.HTTP_201_CREATED)


class ModelProfileDetailView(BaseOrgView):
    serializer_class = ModelProfileSerializer
    permission_map = {"GET": "agents:view", "PATCH": "models:manage", "DELETE": "models:manage"}

    def _profile(self, pk) -> ModelProfile:
        return self.org_get(ModelProfile, pk, _profiles(self))

    @extend_schema(responses={200: ModelProfileSerializer, **ERRORS}, summary="One model profile")
    def get(self, request: Request, pk) -> Response:
        return Response(ModelProfileSerializer(self._profile(pk)).data)

    @extend_schema(request=ModelProfileWriteSerializer(partial=True),
                   responses={200: ModelProfileSerializer, **WRITE_ERRORS}, summary="Change a model profile")
    def patch(self, request: Request, pk) -> Response:
        serializer = ModelProfileWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        for key in ("secret_id",):
            if key in changes and changes[key] is not None:
                changes[key] = str(changes[key])
        profile = services.update_model_profile(actor=self.actor, profile=self._profile(pk), **changes)
        return Response(ModelProfileSerializer(_profiles(self).get(pk=profile.pk)).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a model profile")
    def delete(self, request: Request, pk) -> Response:
        services.delete_model_profile(actor=self.actor, profile=self._profile(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ------------------------------------------------------------------ agents


def _environments_prefetch() -> Prefetch:
    return Prefetch("environments", queryset=Environment.objects.select_related("version").order_by("name"))


class AgentView(BaseOrgView):
    """Agents of the organization named by `X-Organization-Id`. Your access to an agent is the stronger of
    what your role gives and what was shared with you: view < use < edit < publish. An agent you cannot
    see answers 404; too weak an access answers 403. Errors use `{"error": {"code", "message", "details"}}`."""

    # Code note: loads go through org_get; every service decides access with governance.grants. A write also
    # loads its agent at the level it needs, so who may not ask is refused (403/404) before the body is read.

    serializer_class = AgentSerializer
    # Reads need at least agents:view from the role; writes are decided per object (grants may allow them).
    permission_map = {"GET": "agents:view"}

    def agent(self, pk, *, level: str = grants.VIEW) -> Agent:
        agent = self.org_get(Agent, pk, self.org_queryset(Agent).select_related("owner"))
        grants.require_agent_access(self.actor, agent, level)
        return agent

    def detail(self, agent: Agent) -> dict:
        agent = Agent.objects.select_related("owner").prefetch_related(_environments_prefetch()).get(pk=agent.pk)
        return AgentDetailSerializer(agent, context={"access": lambda a: grants.agent_access(self.actor, a)}).data


class AgentListView(AgentView):
    permission_map = {"GET": "agents:view", "POST": "agents:edit"}

    @extend_schema(responses={200: AgentSerializer(many=True), **ERRORS}, summary="Agents you can see")
    def get(self, request: Request) -> Response:
        qs = (
            grants.visible_agents(self.actor)
            .select_related("owner")
            .prefetch_related(_environments_prefetch())
            .order_by("name", "pk")
        )
        page = self.paginate_queryset(qs)
        levels = grants.grant_levels(self.actor.user_id, [a.pk for a in page])
        context = {"access": lambda a: grants.agent_access(self.actor, a, known_grants=levels)}
        return self.get_paginated_response(AgentSerializer(page, many=True, context=context).data)

    @extend_schema(request=AgentCreateSerializer, responses={201: AgentDetailSerializer, **WRITE_ERRORS},
                   summary="Create an agent (a draft)")
    def post(self, request: Request) -> Response:
        agent = services.create_agent(actor=self.actor, **self.valid(AgentCreateSerializer))
        return Response(self.detail(agent), status=status.HTTP_201_CREATED)


class AgentDetailView(AgentView):
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: AgentDetailSerializer, **ERRORS}, summary="One agent with its draft spec")
    def get(self, request: Request, pk) -> Response:
        return Response(self.detail(self.agent(pk)))

    @extend_schema(request=AgentUpdateSerializer, responses={200: AgentDetailSerializer, **WRITE_ERRORS},
                   summary="Edit the draft (needs edit access; slug/visibility need publish access)")
    def patch(self, request: Request, pk) -> Response:
        agent = self.agent(pk, level=grants.EDIT)  # slug/visibility need publish: the service decides that
        agent = services.update_agent(actor=self.actor, agent=agent, **self.valid(AgentUpdateSerializer))
        return Response(self.detail(agent))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete an agent (needs publish access)")
    def delete(self, request: Request, pk) -> Response:
        services.delete_agent(actor=self.actor, agent=self.agent(pk, level=grants.PUBLISH))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentPublishView(AgentView):
    @extend_schema(request=PublishSerializer, responses={201: VersionDetailSerializer, **WRITE_ERRORS},
                   summary="Publish the draft as a new version (422 lists every problem with its path; "
                           "409 `unchanged` when nothing changed since the latest version)")
    def post(self, request: Request, pk) -> Response:
        agent = self.agent(pk, level=grants.PUBLISH)
        data = self.valid(PublishSerializer)
        version = services.publish_agent(actor=self.actor, agent=agent, note=data.get("note", ""),
                                        allow_unchanged=False)
        return Response(VersionDetailSerializer(version).data, status=status.HTTP_201_CREATED)


class AgentVersionListView(AgentView):
    @extend_schema(responses={200: VersionSerializer(many=True), **ERRORS}, summary="Published versions, newest first")
    def get(self, request: Request, pk) -> Response:
        agent = self.agent(pk)
        qs = AgentVersion.objects.filter(agent=agent, number__gt=0).select_related("published_by").order_by("-number")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(VersionSerializer(page, many=True).data)


class AgentVersionDetailView(AgentView):
    @extend_schema(responses={200: VersionDetailSerializer, **ERRORS}, summary="One version with its frozen spec")
    def get(self, request: Request, pk, number: str) -> Response:
        agent = self.agent(pk)
        version = None
        if digits_only(number) and int(number) > 0:  # 0: evaluation snapshots of the draft
            version = AgentVersion.objects.select_related("published_by").filter(agent=agent, number=int(number)).first()
        if version is None:
            raise NotFound(f"Version {number} not found.")
        return Response(VersionDetailSerializer(version).data)


class AgentDiffView(AgentView):
    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, required=True, description="Version number, 'draft' or environment name"),
            OpenApiParameter("to", str, required=True, description="Version number, 'draft' or environment name"),
        ],
        responses={200: DiffSerializer, **ERRORS},
        summary="What changed between two versions, by field path",
    )
    def get(self, request: Request, pk) -> Response:
        agent = self.agent(pk)
        result = services.diff_versions(
            actor=self.actor, agent=agent, from_ref=request.query_params.get("from"),
            to_ref=request.query_params.get("to"),
        )
        return Response(result)


class AgentEnvironmentListView(AgentView):
    pagination_class = None  # a handful per agent
    @extend_schema(responses={200: EnvironmentSerializer(many=True), **ERRORS}, summary="Environments")
    def get(self, request: Request, pk) -> Response:
        agent = self.agent(pk)
        envs = Environment.objects.filter(agent=agent).select_related("version").order_by("name")
        return Response(EnvironmentSerializer(envs, many=True).data)


class AgentPromoteView(AgentView):
    @extend_schema(request=PromoteSerializer, responses={200: EnvironmentSerializer, **WRITE_ERRORS},
                   summary="Point an environment at a version (an older one rolls back)")
    def post(self, request: Request, pk, name: str) -> Response:
        agent = self.agent(pk, level=grants.PUBLISH)
        data = self.valid(PromoteSerializer)
        env = services.promote_environment(actor=self.actor, agent=agent, environment=name, version=data["version"])
        env = Environment.objects.select_related("version").get(pk=env.pk)
        return Response(EnvironmentSerializer(env).data)


class AgentExportView(AgentView):
    @extend_schema(
        parameters=[OpenApiParameter("version", int, description="Export this version instead of the draft")],
        responses={(200, "application/yaml"): AgentExportSerializer, **ERRORS},
        summary="The agent spec as YAML",
    )
    def get(self, request: Request, pk) -> HttpResponse:
        agent = self.agent(pk)
        version = request.query_params.get("version")
        if version is not None and not digits_only(version):
            raise NotFound(f"Version {version} not found.")
        text = services.export_agent_yaml(actor=self.actor, agent=agent, version=int(version) if version else None)
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{agent.slug}.yaml"'
        return response


class AgentAvatarView(AgentView):
    """The agent's picture: PNG, JPEG, WebP or GIF (recognised by its bytes), at most 2 MB. Hosted pages whose
    logo source is `agent` show it. Needs edit access to the agent."""

    parser_classes = [parsers.MultiPartParser, parsers.FormParser]

    @extend_schema(request=IMAGE_UPLOAD_SCHEMA, responses={200: OpenApiResponse(description="{has_avatar: true}"),
                                                           **WRITE_ERRORS}, summary="Upload the agent's avatar")
    def post(self, request: Request, pk) -> Response:
        agent = self.agent(pk, level=grants.EDIT)
        services.set_avatar(actor=self.actor, agent=agent, data=uploaded_image(request))
        return Response({"has_avatar": True})

    @extend_schema(request=None, responses={204: None, **ERRORS}, summary="Remove the agent's avatar")
    def delete(self, request: Request, pk) -> Response:
        services.set_avatar(actor=self.actor, agent=self.agent(pk, level=grants.EDIT), data=None)
        return Response(status=status.HTTP_204_NO_CONTENT)


class YAMLTextParser(parsers.BaseParser):
    """A raw YAML body (`Content-Type: application/yaml`) → {"yaml": text}."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"yaml": stream.read().decode("utf-8", errors="replace")}


class TextYAMLParser(YAMLTextParser):
    media_type = "text/yaml"


class AgentImportView(AgentView):
    parser_classes = [parsers.JSONParser, YAMLTextParser, TextYAMLParser]
    permission_map = {}

    @extend_schema(request=ImportSerializer, responses={201: AgentDetailSerializer, 200: AgentDetailSerializer,
                                                         **WRITE_ERRORS},
                   summary="Create an agent from YAML (or replace a draft with agent_id)")
    def post(self, request: Request) -> Response:
        data = self.valid(ImportSerializer)
        # Replacing a draft needs edit access, decided before the YAML's references are looked up.
        target = self.agent(data["agent_id"], level=grants.EDIT) if data.get("agent_id") else None
        agent = services.import_agent_yaml(actor=self.actor, text=data["yaml"], agent=target)
        return Response(self.detail(agent), status=status.HTTP_200_OK if target else status.HTTP_201_CREATED)


class AgentGrantListView(AgentView):
    pagination_class = None
    @extend_schema(responses={200: GrantSerializer(many=True), **ERRORS}, summary="Who the agent is shared with")
    def get(self, request: Request, pk) -> Response:
        return Response(GrantSerializer(grants.agent_grants(self.agent(pk)), many=True).data)

    @extend_schema(request=GrantCreateSerializer, responses={201: GrantSerializer, **WRITE_ERRORS},
                   summary="Share the agent with a member at a level (view, use, edit, publish)")
    def post(self, request: Request, pk) -> Response:
        agent = self.agent(pk, level=grants.EDIT)
        data = self.valid(GrantCreateSerializer)
        grant = grants.share_agent(actor=self.actor, agent=agent, user_id=data["user_id"], level=data["level"])
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class AgentGrantDetailView(AgentView):
    @extend_schema(responses={204: OpenApiResponse(description="Revoked"), **ERRORS}, summary="Revoke a grant")
    def delete(self, request: Request, pk, user_id: str) -> Response:
        agent = self.agent(pk, level=grants.EDIT)
        if not digits_only(user_id):
            raise NotFound("Grant not found.")
        grants.revoke_agent_grant(actor=self.actor, agent=agent, user_id=int(user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
