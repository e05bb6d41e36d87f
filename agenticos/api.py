"""Kernel REST endpoints: me, organizations, members and invitations, API keys, secrets. Thin views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.db.models import QuerySet
from django.http.response import HttpResponseBase
from django.urls import URLPattern, path
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from agenticos import services
from agenticos.api_base import OrgAPIView
from agenticos.models import ApiKey, Invitation, Membership, Secret
from agenticos.serializers import (
    AcceptInvitationSerializer,
    ApiKeyCreatedSerializer,
    ApiKeyCreateSerializer,
    ApiKeySerializer,
    ErrorSerializer,
    InvitationSerializer,
    InviteSerializer,
    MemberSerializer,
    MemberUpdateSerializer,
    MeSerializer,
    MyOrganizationSerializer,
    OrganizationCreateSerializer,
    OrganizationSerializer,
    SecretCreateSerializer,
    SecretRotateSerializer,
    SecretSerializer,
)

ERRORS = {
    code: OpenApiResponse(ErrorSerializer, description=text)
    for code, text in {
        401: "Not authenticated, or a bad or revoked API key.",
        403: "Your role or access level is too weak.",
        404: "Not found (or not in your organization).",
    }.items()
}
WRITE_ERRORS = {
    **ERRORS,
    400: OpenApiResponse(ErrorSerializer, description="Malformed input."),
    409: OpenApiResponse(ErrorSerializer, description="Conflicts with existing data; details.field names it."),
    422: OpenApiResponse(ErrorSerializer, description="Breaks a rule; details.problems lists field paths."),
}


def route(pattern: str, view: type[APIView] | Callable[..., HttpResponseBase], name: str) -> list[URLPattern]:
    """The one URL form of the API: the canonical path has no trailing slash and carries the name
    `reverse()` uses; the slash form answers the same view but stays out of the schema (so a client
    that appends a slash is never redirected — a redirected POST loses its body)."""
    if isinstance(view, type):
        cls = cast("type[APIView]", view)
        return [path(pattern, cls.as_view(), name=name), path(f"{pattern}/", cls.as_view(schema=None))]
    return [path(pattern, view, name=name), path(f"{pattern}/", view)]  # plain Django views are never in the schema


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Documents `Authorization: Bearer <api key>` in /api/schema/ (registered on import)."""

    target_class = "agenticos.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (aos_…) created at /api/v1/api-keys. It acts in its own organization.",
        }


class BaseOrgView(OrgAPIView):
    """Acts in the organization named by `X-Organization-Id` (an API key acts in its own organization).
    An organization you do not belong to answers 404. Errors use `{"error": {"code", "message", "details"}}`."""

    # (Code note: also puts the request's IP on the actor so services can write it in audit rows.)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.actor.extra["ip"] = self.client_ip()

    def valid(self, serializer_class, data=None) -> dict:
        serializer = serializer_class(data=self.request.data if data is None else data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


class WriteThrottle(UserRateThrottle):
    """Invitations send email: cap them per person (Redis cache)."""

    scope = "invitations"
    rate = "30/hour"


def _my_memberships(request: Request) -> QuerySet[Membership]:
    qs = Membership.objects.filter(user=request.user, is_suspended=False).select_related("organization")
    if isinstance(request.auth, ApiKey):
        # A key lives in one organization; it does not reveal the others its person belongs to.
        qs = qs.filter(organization_id=request.auth.organization_id)
    return qs


class MeView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: MeSerializer, 401: ERRORS[401]}, summary="Who am I, and in which organizations")
    def get(self, request: Request) -> Response:
        return Response(MeSerializer({"user": request.user, "organizations": _my_memberships(request)}).data)


class OrganizationListView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: MyOrganizationSerializer(many=True), 401: ERRORS[401]}, summary="My organizations")
    def get(self, request: Request) -> Response:
        return Response(MyOrganizationSerializer(_my_memberships(request), many=True).data)

    @extend_schema(request=OrganizationCreateSerializer, responses={201: OrganizationSerializer, **WRITE_ERRORS},
                   summary="Create an organization (you become its owner)")
    def post(self, request: Request) -> Response:
        serializer = OrganizationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        org = services.create_organization(actor=request.user, **serializer.validated_data)
        return Response(OrganizationSerializer(org).data, status=status.HTTP_201_CREATED)


class AcceptInvitationView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=AcceptInvitationSerializer, responses={200: MyOrganizationSerializer, **WRITE_ERRORS},
                   summary="Accept an invitation sent to your email address")
    def post(self, request: Request) -> Response:
        serializer = AcceptInvitationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = services.accept_invitation(actor=request.user, token=serializer.validated_data["token"])
        return Response(MyOrganizationSerializer(membership).data)


# ------------------------------------------------------------------ members


class MemberListView(mixins.ListModelMixin, BaseOrgView):
    serializer_class = MemberSerializer

    def get_queryset(self):
        return self.org_queryset(Membership).select_related("user").order_by("user__email")

    @extend_schema(responses={200: MemberSerializer(many=True), **ERRORS}, summary="Members of the organization")
    def get(self, request: Request) -> Response:
        return self.list(request)


class MemberDetailView(BaseOrgView):
    serializer_class = MemberSerializer
    permission_map = {"PATCH": "members:manage"}

    def _membership(self, pk) -> Membership:
        return self.org_get(Membership, pk, self.org_queryset(Membership).select_related("user"))

    @extend_schema(request=MemberUpdateSerializer, responses={200: MemberSerializer, **WRITE_ERRORS},
                   summary="Change a member's role or suspend them")
    def patch(self, request: Request, pk: str) -> Response:
        data = self.valid(MemberUpdateSerializer)
        membership = self._membership(pk)
        if "role" in data:
            membership = services.change_member_role(actor=self.actor, membership=membership, role=data["role"])
        if "is_suspended" in data:
            membership = services.set_member_suspended(
                actor=self.actor, membership=membership, suspended=data["is_suspended"]
            )
        return Response(MemberSerializer(membership).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Remove a member (or leave)")
    def delete(self, request: Request, pk: str) -> Response:
        services.remove_member(actor=self.actor, membership=self._membership(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListView(mixins.ListModelMixin, BaseOrgView):
    serializer_class = InvitationSerializer
    permission_map = {"*": "members:manage"}

    def get_throttles(self):
        return [WriteThrottle()] if self.request.method == "POST" else []

    def get_queryset(self):
        return self.org_queryset(Invitation).filter(accepted_at__isnull=True).select_related("invited_by")

    @extend_schema(responses={200: InvitationSerializer(many=True), **ERRORS}, summary="Pending invitations")
    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=InviteSerializer, responses={201: InvitationSerializer, **WRITE_ERRORS,
                   429: OpenApiResponse(ErrorSerializer, description="Too many invitations.")},
                   summary="Invite someone by email")
    def post(self, request: Request) -> Response:
        invitation, _raw = services.invite_member(actor=self.actor, **self.valid(InviteSerializer))
        return Response(InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)


class InvitationDetailView(BaseOrgView):
    serializer_class = InvitationSerializer
    permission_map = {"*": "members:manage"}

    @extend_schema(responses={204: None, **ERRORS}, summary="Revoke a pending invitation")
    def delete(self, request: Request, pk: str) -> Response:
        services.revoke_invitation(actor=self.actor, invitation=self.org_get(Invitation, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


# ------------------------------------------------------------------ API keys


class ApiKeyListView(mixins.ListModelMixin, BaseOrgView):
    serializer_class = ApiKeySerializer
    permission_map = {"*": "apikeys:manage"}

    def get_queryset(self):
        return services.search_api_keys(services.api_keys_for(self.actor), self.request.query_params.get("search", ""))

    @extend_schema(responses={200: ApiKeySerializer(many=True), **ERRORS},
                   parameters=[OpenApiParameter("search", str, description="Part of a name, prefix or owner's email")],
                   summary="API keys (yours; everyone's for member managers)")
    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer, **WRITE_ERRORS},
                   summary="Create an API key (the raw key is returned once)")
    def post(self, request: Request) -> Response:
        key, raw = services.create_api_key(actor=self.actor, **self.valid(ApiKeyCreateSerializer))
        return Response(ApiKeyCreatedSerializer(key, context={"raw_key": raw}).data, status=status.HTTP_201_CREATED)


class ApiKeyDetailView(BaseOrgView):
    serializer_class = ApiKeySerializer
    permission_map = {"*": "apikeys:manage"}

    @extend_schema(responses={200: ApiKeySerializer, **ERRORS}, summary="Revoke an API key")
    def delete(self, request: Request, pk: str) -> Response:
        key = services.revoke_api_key(actor=self.actor, api_key=self.org_get(ApiKey, pk))
        return Response(ApiKeySerializer(key).data)


# ------------------------------------------------------------------ secrets


class SecretListView(mixins.ListModelMixin, BaseOrgView):
    serializer_class = SecretSerializer
    permission_map = {"GET": "secrets:view", "POST": "secrets:manage"}

    def get_queryset(self):
        return self.org_queryset(Secret).defer("wrapped_key", "ciphertext")

    @extend_schema(responses={200: SecretSerializer(many=True), **ERRORS}, summary="Secrets (never their values)")
    def get(self, request: Request) -> Response:
        return self.list(request)

    @extend_schema(request=SecretCreateSerializer, responses={201: SecretSerializer, **WRITE_ERRORS},
                   summary="Seal a new secret in the vault")
    def post(self, request: Request) -> Response:
        secret = services.create_secret(actor=self.actor, **self.valid(SecretCreateSerializer))
        return Response(SecretSerializer(secret).data, status=status.HTTP_201_CREATED)


class SecretDetailView(BaseOrgView):
    serializer_class = SecretSerializer
    permission_map = {"GET": "secrets:view", "DELETE": "secrets:manage"}

    @extend_schema(responses={200: SecretSerializer, **ERRORS}, summary="One secret (never its value)")
    def get(self, request: Request, pk) -> Response:
        return Response(SecretSerializer(self.org_get(Secret, pk)).data)

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a secret")
    def delete(self, request: Request, pk) -> Response:
        services.delete_secret(actor=self.actor, secret=self.org_get(Secret, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SecretRotateView(BaseOrgView):
    serializer_class = SecretSerializer
    permission_map = {"*": "secrets:manage"}

    @extend_schema(request=SecretRotateSerializer, responses={200: SecretSerializer, **WRITE_ERRORS},
                   summary="Replace a secret's value")
    def post(self, request: Request, pk) -> Response:
        data = self.valid(SecretRotateSerializer)
        secret = services.rotate_secret(actor=self.actor, secret=self.org_get(Secret, pk), value=data["value"])
        return Response(SecretSerializer(secret).data)


IMAGE_UPLOAD_SCHEMA = {
    "multipart/form-data": {
        "type": "object",
        "properties": {"file": {"type": "string", "format": "binary"}},
        "required": ["file"],
    }
}


def uploaded_image(request: Request) -> bytes:
    """The multipart field `file`, refused by its declared size before a byte is read past the cap."""
    from agenticos import images
    from agenticos.errors import Invalid

    upload = request.FILES.get("file")
    if upload is None:
        raise Invalid("Send the image as the multipart field 'file'.", details={"field": "file"})
    if upload.size and upload.size > images.MAX_BYTES:
        raise Invalid("The image is larger than 2 MB.", details={"field": "file", "limit_bytes": images.MAX_BYTES})
    return upload.read(images.MAX_BYTES + 1)


class OrganizationLogoView(BaseOrgView):
    """The organization's logo: PNG, JPEG, WebP or GIF (recognised by its bytes), at most 2 MB. Hosted pages
    whose logo source is `organization` show it."""

    permission_map = {"*": "organization:manage"}
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=IMAGE_UPLOAD_SCHEMA, responses={200: OpenApiResponse(description="{has_logo: true}"),
                                                           **WRITE_ERRORS}, summary="Upload the organization's logo")
    def post(self, request: Request) -> Response:
        services.set_organization_logo(actor=self.actor, data=uploaded_image(request))
        return Response({"has_logo": True})

    @extend_schema(request=None, responses={204: None, **ERRORS}, summary="Remove the organization's logo")
    def delete(self, request: Request) -> Response:
        services.set_organization_logo(actor=self.actor, data=None)
        return Response(status=status.HTTP_204_NO_CONTENT)
