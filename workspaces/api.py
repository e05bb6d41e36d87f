"""REST for sandbox connections (Settings → Sandboxes). Thin views: org-scoped loads, `connections` does the
rest. Reading connections and their runtimes needs agents:view (the Builder offers them); registering,
deleting and choosing the default need secrets:manage; the open sandboxes and their activity need runs:view.

    GET/POST   /api/v1/sandbox-connections
    GET/DELETE /api/v1/sandbox-connections/{id}
    POST       /api/v1/sandbox-connections/{id}/default
    GET        /api/v1/sandbox-connections/{id}/runtimes            live, from the service
    GET        /api/v1/sandbox-connections/{id}/sandboxes           this organization's open sandboxes there
    GET        /api/v1/sandbox-connections/{id}/sandboxes/{ws}      one of them, with its activity log
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import DomainError, Invalid, NotFound
from agenticos.serializers import ErrorSerializer
from workspaces import connections
from workspaces.client import SandboxdError
from workspaces.models import SandboxConnection, Workspace
from workspaces.serializers import (
    RuntimeListSerializer,
    SandboxConnectionListSerializer,
    SandboxConnectionSerializer,
    SandboxDetailSerializer,
    SandboxListSerializer,
)

READ = "agents:view"
MANAGE = connections.MANAGE
OBSERVE = "runs:view"


class Unavailable(DomainError):
    status = 502
    code = "sandbox_unavailable"


UNAVAILABLE = {502: OpenApiResponse(ErrorSerializer, description="The sandbox service did not answer "
                                                                 "(error code sandbox_unavailable).")}


def connection_json(connection: SandboxConnection) -> dict[str, Any]:
    return {
        "id": str(connection.pk), "name": connection.name, "kind": connection.kind,
        "is_deployment": connection.is_deployment, "is_default": connection.is_default,
        # The deployment's address is the operator's, not the organization's: it is never shown.
        "url": "" if connection.is_deployment else connection.url,
        "has_credential": connection.secret_id is not None,
        "secret_id": str(connection.secret_id) if connection.secret_id else None,
        "created_at": connection.created_at.isoformat(),
    }


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise Invalid("The body must be a JSON object.")
    return dict(request.data)


def _client(connection: SandboxConnection):
    try:
        return connections.client_for(connection)
    except connections.ConnectionUnavailable as exc:
        raise Unavailable(str(exc)) from None


def org_workspaces(connection: SandboxConnection) -> dict[str, Workspace]:
    """This organization's service workspaces on the connection, by the id sandboxd knows them by."""
    rows = Workspace.objects.filter(organization_id=connection.organization_id, backend="service",
                                    key__startswith=f"{connection.pk}|").select_related("agent")
    return {str(row.pk).replace("-", ""): row for row in rows}


def sandbox_json(item: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
    return {"workspace_id": str(workspace.pk), "agent": {"id": str(workspace.agent_id), "name": workspace.agent.name},
            "scope": workspace.scope, "label": workspace.label, "runtime": item.get("runtime"),
            "idle_seconds": item.get("idle_seconds"), "running": item.get("running", 0),
            "memory_kb": item.get("memory_kb", 0)}


class ConnectionListView(BaseOrgView):
    permission_map = {"GET": READ, "POST": MANAGE}

    @extend_schema(operation_id="v1_sandbox_connections_list", responses={200: SandboxConnectionListSerializer,
                   **ERRORS}, summary="Sandbox connections (the default first)")
    def get(self, request: Request) -> Response:
        connections.ensure_default(self.actor.organization)
        rows = self.org_queryset(SandboxConnection).order_by("-is_default", "name")
        return Response({"results": [connection_json(c) for c in rows]})

    @extend_schema(request=SandboxConnectionSerializer, responses={201: SandboxConnectionSerializer, **WRITE_ERRORS},
                   summary="Register a sandbox service (sandboxd or Daytona)")
    def post(self, request: Request) -> Response:
        data = _body(request)
        connection = connections.register(actor=self.actor, name=str(data.get("name") or ""),
                                          url=str(data.get("url") or ""), secret_id=data.get("secret_id"),
                                          make_default=bool(data.get("is_default")),
                                          kind=str(data.get("kind") or connections.SANDBOXD))
        return Response(connection_json(connection), status=status.HTTP_201_CREATED)


class ConnectionDetailView(BaseOrgView):
    permission_map = {"GET": READ, "DELETE": MANAGE}

    @extend_schema(responses={200: SandboxConnectionSerializer, **ERRORS}, summary="One sandbox connection")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(connection_json(self.org_get(SandboxConnection, pk)))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a sandbox connection")
    def delete(self, request: Request, pk: Any) -> Response:
        connections.delete(actor=self.actor, connection=self.org_get(SandboxConnection, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConnectionDefaultView(BaseOrgView):
    permission_map = {"POST": MANAGE}

    @extend_schema(request=None, responses={200: SandboxConnectionSerializer, **WRITE_ERRORS},
                   summary="Make a connection the organization's default")
    def post(self, request: Request, pk: Any) -> Response:
        connection = connections.make_default(actor=self.actor, connection=self.org_get(SandboxConnection, pk))
        return Response(connection_json(connection))


class ConnectionRuntimesView(BaseOrgView):
    permission_map = {"GET": READ}

    @extend_schema(responses={200: RuntimeListSerializer, **ERRORS, **UNAVAILABLE},
                   summary="The runtimes the service offers (asked live)")
    def get(self, request: Request, pk: Any) -> Response:
        client = _client(self.org_get(SandboxConnection, pk))
        try:
            runtimes = client.runtimes_sync()
        except SandboxdError as exc:
            raise Unavailable(str(exc)) from None
        return Response({"results": [{"alias": str(r.get("alias")), "description": str(r.get("description", ""))}
                                     for r in runtimes]})


class SandboxListView(BaseOrgView):
    permission_map = {"GET": OBSERVE}

    @extend_schema(operation_id="v1_sandbox_connections_sandboxes_list",
                   responses={200: SandboxListSerializer, **ERRORS, **UNAVAILABLE},
                   summary="This organization's open sandboxes on the service")
    def get(self, request: Request, pk: Any) -> Response:
        connection = self.org_get(SandboxConnection, pk)
        mine = org_workspaces(connection)
        try:
            listed = _client(connection).workspaces_sync()
        except SandboxdError as exc:
            raise Unavailable(str(exc)) from None
        # One sandboxd serves many organizations: only this organization's workspaces are shown.
        return Response({"results": [sandbox_json(item, mine[str(item.get("id"))]) for item in listed
                                     if str(item.get("id")) in mine]})


class SandboxDetailView(BaseOrgView):
    permission_map = {"GET": OBSERVE}

    @extend_schema(responses={200: SandboxDetailSerializer, **ERRORS, **UNAVAILABLE},
                   summary="One open sandbox, with its activity log")
    def get(self, request: Request, pk: Any, workspace_id: Any) -> Response:
        connection = self.org_get(SandboxConnection, pk)
        workspace = org_workspaces(connection).get(str(workspace_id).replace("-", ""))
        if workspace is None:
            raise NotFound("Sandbox not found.")
        try:
            item = _client(connection).workspace_sync(str(workspace.pk).replace("-", ""))
        except SandboxdError as exc:
            if exc.status == 404:
                raise NotFound("That sandbox is not open on its host.") from None
            raise Unavailable(str(exc)) from None
        activity = [{"at": a.get("at"), "kind": a.get("kind"),
                     **{k: a[k] for k in ("command", "exit_code", "timed_out", "disk_full", "duration_ms", "path",
                                          "size", "runtime") if k in a}}
                    for a in item.get("activity") or []]
        return Response({**sandbox_json(item, workspace), "disk_bytes": item.get("disk_bytes"),
                         "disk_cap": item.get("disk_cap"), "activity": activity})
