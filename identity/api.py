"""/api/v1/ sign-in endpoints: roles (built-in presets and the organization's custom roles), the permission
catalog they are composed from, the audit trail (cursor pages, CSV / JSON Lines export), and the SCIM tokens an
owner hands to the IdP. Thin views over identity.roles, identity.audit_log and identity.provisioning."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos import audit
from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import Invalid
from agenticos.permissions import OWNER_ONLY, PERMISSIONS, ROLE_PERMISSIONS, Role
from identity import audit_log, provisioning, roles
from identity.models import CustomRole, ScimToken


class RoleSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="What a member's role is set to: a built-in name or custom:<id>.")
    name = serializers.CharField()
    builtin = serializers.BooleanField()
    permissions = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField(allow_blank=True)


class RoleWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)
    permissions = serializers.ListField(child=serializers.CharField(max_length=60), max_length=len(PERMISSIONS))
    description = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class RoleUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80, required=False)
    permissions = serializers.ListField(child=serializers.CharField(max_length=60), max_length=len(PERMISSIONS),
                                        required=False)
    description = serializers.CharField(max_length=300, required=False, allow_blank=True)


class PermissionSerializer(serializers.Serializer):
    id = serializers.CharField()
    description = serializers.CharField()
    composable = serializers.BooleanField(help_text="Whether a custom role may hold it (not the owner-only ones).")


def _custom(role: CustomRole) -> dict:
    return {"key": role.key, "name": role.name, "builtin": False, "permissions": sorted(role.permissions),
            "description": role.description}


def _builtin() -> list[dict]:
    return [{"key": str(value), "name": str(label), "builtin": True,
             "permissions": sorted(ROLE_PERMISSIONS[value]), "description": ""} for value, label in Role.choices]


class RoleListView(BaseOrgView):
    serializer_class = RoleSerializer
    permission_map = {"POST": "roles:manage"}
    pagination_class = None  # a handful of presets and custom roles: one list, as the schema says

    @extend_schema(responses={200: RoleSerializer(many=True), **ERRORS},
                   summary="Roles: the built-in presets, then the organization's custom roles")
    def get(self, request: Request) -> Response:
        custom = [_custom(r) for r in self.org_queryset(CustomRole)]
        return Response(_builtin() + custom)

    @extend_schema(request=RoleWriteSerializer, responses={201: RoleSerializer, **WRITE_ERRORS},
                   summary="Compose a custom role from the permission catalog")
    def post(self, request: Request) -> Response:
        role = roles.create_role(actor=self.actor, **self.valid(RoleWriteSerializer))
        return Response(_custom(role), status=status.HTTP_201_CREATED)


class RoleDetailView(BaseOrgView):
    serializer_class = RoleSerializer
    permission_map = {"PATCH": "roles:manage", "DELETE": "roles:manage"}

    @extend_schema(responses={200: RoleSerializer, **ERRORS}, summary="One custom role")
    def get(self, request: Request, pk: int) -> Response:
        return Response(_custom(self.org_get(CustomRole, pk)))

    @extend_schema(request=RoleUpdateSerializer, responses={200: RoleSerializer, **WRITE_ERRORS},
                   summary="Rename a custom role or change its permissions")
    def patch(self, request: Request, pk: int) -> Response:
        data = self.valid(RoleUpdateSerializer)
        role = roles.update_role(actor=self.actor, role=self.org_get(CustomRole, pk), **data)
        return Response(_custom(role))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a custom role nobody holds")
    def delete(self, request: Request, pk: int) -> Response:
        roles.delete_role(actor=self.actor, role=self.org_get(CustomRole, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PermissionListView(BaseOrgView):
    serializer_class = PermissionSerializer
    pagination_class = None  # the fixed catalog: one list, as the schema says

    @extend_schema(responses={200: PermissionSerializer(many=True), **ERRORS}, summary="The permission catalog")
    def get(self, request: Request) -> Response:
        return Response([{"id": p, "description": text, "composable": p not in OWNER_ONLY}
                         for p, text in PERMISSIONS.items()])


# ------------------------------------------------------------------ the audit trail


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    action = serializers.CharField()
    actor_id = serializers.IntegerField(allow_null=True)
    actor = serializers.CharField(help_text="The person's e-mail, or what acted (system).")
    target_type = serializers.CharField(allow_blank=True)
    target_id = serializers.CharField(allow_blank=True)
    target_name = serializers.CharField(allow_blank=True)
    ip_address = serializers.CharField(allow_null=True)
    details = serializers.DictField()


class AuditCursor(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 100
    max_page_size = 500
    page_size_query_param = "limit"


AUDIT_FILTERS = [
    OpenApiParameter("actor", str, description="A user id or e-mail."),
    OpenApiParameter("action", str, description='An action ("member.role_changed"), or a prefix ending in "." ("sso.").'),
    OpenApiParameter("object", str, description='A target type ("apikey"), "type:id", or part of its name.'),
    OpenApiParameter("since", str, description="ISO 8601 date-time with offset (inclusive)."),
    OpenApiParameter("until", str, description="ISO 8601 date-time with offset (exclusive)."),
]


class AuditListView(BaseOrgView):
    serializer_class = AuditEventSerializer
    permission_map = {"GET": "audit:read"}
    pagination_class = AuditCursor

    @extend_schema(parameters=[*AUDIT_FILTERS, OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
                   responses={200: AuditEventSerializer(many=True), **ERRORS},
                   summary="The organization's audit events, newest first (cursor pages)")
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(audit_log.events(self.actor, request.query_params))
        return self.get_paginated_response([audit_log.as_row(e) for e in page or []])


class AuditExportView(BaseOrgView):
    serializer_class = AuditEventSerializer
    permission_map = {"GET": "audit:read"}

    @extend_schema(parameters=[*AUDIT_FILTERS, OpenApiParameter("as", str, enum=["csv", "jsonl"])],
                   responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR,
                              **ERRORS},
                   summary="Export the filtered audit events as CSV or JSON Lines (newest first)")
    def get(self, request: Request) -> StreamingHttpResponse:
        return export_response(self.actor, request.query_params)


def export_response(actor: Any, params: Any) -> StreamingHttpResponse:
    """Shared by the API and the console (Settings → Audit)."""
    kind = params.get("as", "csv")
    if kind not in ("csv", "jsonl"):
        raise Invalid("Export as csv or jsonl.", details={"problems": [{"field": "as", "message": "csv or jsonl"}]})
    qs = audit_log.events(actor, params)
    exported = audit.record(actor=actor.user, organization=actor.organization, action="audit.exported",
                 target_type="audit", details={"as": kind, "filters": {k: params.get(k) for k in
                                                                      ("actor", "action", "object", "since", "until")
                                                                      if params.get(k)}},
                 ip_address=actor.extra.get("ip"))
    qs = qs.exclude(pk=exported.pk)  # the export's own row is in the next one
    lines = audit_log.csv_lines(qs) if kind == "csv" else audit_log.jsonl_lines(qs)
    response = StreamingHttpResponse(lines, content_type="text/csv" if kind == "csv" else "application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="audit-{actor.organization.slug}.{kind}"'
    return response


# ------------------------------------------------------------------ SCIM tokens


class ScimTokenSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="The token's first characters, to recognise it; never the token.")
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True, help_text="The e-mail of the owner who created it.")
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class ScimTokenCreatedSerializer(ScimTokenSerializer):
    token = serializers.CharField(help_text="The bearer token for the IdP's SCIM client. Shown this once.")


class ScimTokenWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="Which IdP or client the token is for.")


def _token(token: ScimToken) -> dict:
    return {"id": token.pk, "name": token.name, "prefix": token.prefix, "created_at": token.created_at,
            "created_by": token.created_by.email if token.created_by else None,
            "last_used_at": token.last_used_at, "revoked_at": token.revoked_at}


class ScimTokenListView(BaseOrgView):
    serializer_class = ScimTokenSerializer
    permission_map = {"GET": "signin:manage", "POST": "signin:manage"}
    pagination_class = None  # a few tokens per organization (one per IdP): one list, as the schema says

    @extend_schema(responses={200: ScimTokenSerializer(many=True), **ERRORS},
                   summary="The organization's SCIM tokens (owners; the tokens themselves are never shown again)")
    def get(self, request: Request) -> Response:
        tokens = self.org_queryset(ScimToken).select_related("created_by")
        return Response([_token(t) for t in tokens])

    @extend_schema(request=ScimTokenWriteSerializer, responses={201: ScimTokenCreatedSerializer, **WRITE_ERRORS},
                   summary="Create a SCIM token for /scim/v2/ (shown once)")
    def post(self, request: Request) -> Response:
        token, raw = provisioning.create_token(actor=self.actor, **self.valid(ScimTokenWriteSerializer))
        return Response({**_token(token), "token": raw}, status=status.HTTP_201_CREATED)


class ScimTokenDetailView(BaseOrgView):
    serializer_class = ScimTokenSerializer
    permission_map = {"DELETE": "signin:manage"}

    @extend_schema(responses={204: None, **WRITE_ERRORS},
                   summary="Revoke a SCIM token: the IdP's next request with it is refused")
    def delete(self, request: Request, pk: int) -> Response:
        provisioning.revoke_token(actor=self.actor, token=self.org_get(ScimToken, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
