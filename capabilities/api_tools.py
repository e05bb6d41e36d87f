"""REST for tools from outside the code: custom tools, templates, builder sessions/kits/drafts,
database connections and MCP connections. Thin views: org-scoped loads, services do the rest."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import Invalid, NotFound
from agenticos.serializers import ErrorSerializer
from capabilities import serializers_tools as doc
from capabilities.custom_tools import services, templates
from capabilities.models import (
    CustomTool,
    DatabaseConnection,
    McpConnection,
    ToolBuilderSession,
    ToolDraft,
    ToolKit,
)

READ = "agents:view"
WRITE = "agents:edit"


def body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise Invalid("The body must be a JSON object.")
    return dict(request.data)


def tool_json(tool: CustomTool) -> dict[str, Any]:
    return {
        "id": str(tool.pk), "name": tool.name, "alias": tool.alias, "description": tool.description,
        "usage_notes": tool.usage_notes, "method": tool.method, "url": tool.url, "parameters": tool.parameters,
        "auth": tool.auth, "credential_id": str(tool.credential_id) if tool.credential_id else None,
        "tags": tool.tags, "warnings": tool.warnings, "sample_outputs": tool.sample_outputs,
        "timeout_secs": tool.timeout_secs, "kit_name": tool.kit_name, "template_key": tool.template_key,
        "created_at": tool.created_at.isoformat(), "updated_at": tool.updated_at.isoformat(),
    }


def draft_json(draft: ToolDraft) -> dict[str, Any]:
    return {
        "id": str(draft.pk), "kit_id": str(draft.kit_id), "name": draft.name, "state": draft.state,
        "definition": draft.definition, "warnings": draft.warnings, "sample_outputs": draft.sample_outputs,
        "test": {"ok": draft.test_ok, "status": draft.test_status, "preview": draft.test_preview,
                 "error": draft.test_error, "args": draft.test_args,
                 "at": draft.tested_at.isoformat() if draft.tested_at else None},
        "created_tool_id": str(draft.created_tool_id) if draft.created_tool_id else None,
    }


def kit_json(kit: ToolKit) -> dict[str, Any]:
    return {"id": str(kit.pk), "session_id": str(kit.session_id), "name": kit.name, "provider": kit.provider,
            "credential_id": str(kit.credential_id) if kit.credential_id else None, "warnings": kit.warnings,
            "status": kit.status, "drafts": [draft_json(d) for d in kit.drafts.all()]}


def session_json(session: ToolBuilderSession, *, kits: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {"id": str(session.pk), "title": session.title,
                            "conversation_id": str(session.conversation_id) if session.conversation_id else None,
                            "created_at": session.created_at.isoformat()}
    if kits:
        data["kits"] = [kit_json(k) for k in session.kits.prefetch_related("drafts")]
    return data


# ------------------------------------------------------------------ custom tools


class ToolListView(BaseOrgView):
    permission_map = {"GET": READ, "POST": WRITE}

    @extend_schema(responses={200: doc.CustomToolListSerializer, **ERRORS}, operation_id="v1_tools_list",
                   summary="Custom tools")
    def get(self, request: Request) -> Response:
        return Response({"results": [tool_json(t) for t in self.org_queryset(CustomTool).order_by("name")]})

    @extend_schema(request=doc.CustomToolWriteSerializer, responses={201: doc.CustomToolSerializer, **WRITE_ERRORS},
                   summary="Create a custom tool")
    def post(self, request: Request) -> Response:
        data = body(request)
        definition = {k: v for k, v in data.items() if k in services.DEFINITION_FIELDS}
        tool = services.create_tool(actor=self.actor, definition=definition, credential_id=data.get("credential_id"),
                                    warnings=data.get("warnings"))
        return Response(tool_json(tool), status=status.HTTP_201_CREATED)


class ToolDetailView(BaseOrgView):
    permission_map = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(responses={200: doc.CustomToolSerializer, **ERRORS}, summary="One custom tool")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(tool_json(self.org_get(CustomTool, pk)))

    @extend_schema(request=doc.CustomToolWriteSerializer, responses={200: doc.CustomToolSerializer, **WRITE_ERRORS},
                   summary="Change a custom tool")
    def patch(self, request: Request, pk: Any) -> Response:
        tool = self.org_get(CustomTool, pk)
        changes = body(request)
        return Response(tool_json(services.update_tool(actor=self.actor, tool=tool, changes=changes)))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a custom tool")
    def delete(self, request: Request, pk: Any) -> Response:
        services.delete_tool(actor=self.actor, tool=self.org_get(CustomTool, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ToolTestView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=doc.ToolTestInputSerializer, responses={200: doc.ToolTestResultSerializer, **WRITE_ERRORS},
                   summary="Make a real test call with a custom tool")
    def post(self, request: Request, pk: Any) -> Response:
        tool = self.org_get(CustomTool, pk, CustomTool.objects.select_related("credential")
                            .filter(organization=self.actor.organization))
        args = body(request).get("args")
        return Response(services.test_tool(actor=self.actor, tool=tool, args=args))


# ------------------------------------------------------------------ templates


class TemplateListView(BaseOrgView):
    permission_map = {"GET": READ}

    @extend_schema(responses={200: doc.ToolTemplateListSerializer, **ERRORS}, summary="Tool templates")
    def get(self, request: Request) -> Response:
        return Response({"results": templates.catalog()})


class TemplateInstallView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=doc.ToolTemplateInstallSerializer, responses={201: doc.CustomToolSerializer, **WRITE_ERRORS},
                   summary="Install a tool template as a custom tool")
    def post(self, request: Request, key: str) -> Response:
        data = body(request)
        tool = templates.install(actor=self.actor, key=key, alias=data.get("alias"),
                                 credential_id=data.get("credential_id"))
        return Response(tool_json(tool), status=status.HTTP_201_CREATED)


# ------------------------------------------------------------------ builder sessions, kits, drafts


class SessionListView(BaseOrgView):
    permission_map = {"GET": READ, "POST": WRITE}

    @extend_schema(responses={200: doc.ToolBuilderSessionListSerializer, **ERRORS},
                   operation_id="v1_tool_kits_sessions_list", summary="Tool builder sessions")
    def get(self, request: Request) -> Response:
        return Response({"results": [session_json(s, kits=False) for s in self.org_queryset(ToolBuilderSession)]})

    @extend_schema(request=doc.ToolBuilderSessionCreateSerializer,
                   responses={201: doc.ToolBuilderSessionSerializer, **WRITE_ERRORS},
                   summary="Start a tool builder session")
    def post(self, request: Request) -> Response:
        session = services.create_session(actor=self.actor, title=str(body(request).get("title") or ""))
        return Response(session_json(session), status=status.HTTP_201_CREATED)


class SessionDetailView(BaseOrgView):
    permission_map = {"GET": READ}

    @extend_schema(responses={200: doc.ToolBuilderSessionSerializer, **ERRORS},
                   summary="One tool builder session, with its kits and drafts")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(session_json(self.org_get(ToolBuilderSession, pk)))


class SessionRestartView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=None, responses={200: doc.ToolBuilderSessionSerializer, **WRITE_ERRORS},
                   summary="Start a session over: drop its kits not yet finalized")
    def post(self, request: Request, pk: Any) -> Response:
        session = self.org_get(ToolBuilderSession, pk)
        services.restart_session(actor=self.actor, session=session)
        return Response(session_json(session))


class KitListView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=doc.ToolKitCreateSerializer, responses={201: doc.ToolKitSerializer, **WRITE_ERRORS},
                   summary="Start a kit in a session")
    def post(self, request: Request, pk: Any) -> Response:
        session = self.org_get(ToolBuilderSession, pk)
        data = body(request)
        kit = services.create_kit(actor=self.actor, session=session, name=str(data.get("name") or ""),
                                  provider=str(data.get("provider") or ""), credential_id=data.get("credential_id"),
                                  warnings=data.get("warnings"))
        return Response(kit_json(kit), status=status.HTTP_201_CREATED)


class KitDraftListView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=doc.ToolDraftCreateSerializer, responses={201: doc.ToolDraftSerializer, **WRITE_ERRORS},
                   summary="Add a draft to a kit")
    def post(self, request: Request, pk: Any) -> Response:
        kit = self.org_get(ToolKit, pk)
        draft = services.add_draft(actor=self.actor, kit=kit, name=str(body(request).get("name") or ""))
        return Response(draft_json(draft), status=status.HTTP_201_CREATED)


class KitFinalizeView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=None, responses={
        201: doc.ToolKitFinalizedSerializer, **WRITE_ERRORS,
        409: OpenApiResponse(ErrorSerializer, description="Finalized already, a draft not validated "
                                                          "(details.not_validated) or an asynchronous one without a "
                                                          "warning (details.needs_warning), or an alias taken.")},
        summary="Finalize a kit: create each validated draft as a custom tool")
    def post(self, request: Request, pk: Any) -> Response:
        created = services.finalize_kit(actor=self.actor, kit=self.org_get(ToolKit, pk))
        return Response({"tools": [tool_json(t) for t in created]}, status=status.HTTP_201_CREATED)


DRAFT_ACTIONS = ("configure", "test", "warnings", "samples")


class DraftActionSchema(AutoSchema):
    """The one view answers two paths (drafts/{id} and drafts/{id}/{action}): each gets its own operationId
    (drf-spectacular would name both the same and number them), `action` its four values, and a POST without an
    action, which is always refused, stays out of the schema."""

    def _with_action(self) -> bool:
        return "{action}" in self.path

    def is_excluded(self) -> bool:
        return self.method == "POST" and not self._with_action()

    def get_operation_id(self) -> str:
        if not self._with_action():
            return "v1_tool_kits_drafts_retrieve"
        return "v1_tool_kits_drafts_action_retrieve" if self.method == "GET" else "v1_tool_kits_drafts_action_create"

    def get_override_parameters(self) -> list[Any]:
        if not self._with_action():
            return super().get_override_parameters()
        return [*super().get_override_parameters(),
                OpenApiParameter("action", str, OpenApiParameter.PATH, enum=list(DRAFT_ACTIONS),
                                 description="A GET answers the draft whatever the action.")]


class DraftActionView(BaseOrgView):
    permission_map = {"GET": READ, "POST": WRITE}
    schema = DraftActionSchema()

    @extend_schema(responses={200: doc.ToolDraftSerializer, **ERRORS}, summary="One tool draft")
    def get(self, request: Request, pk: Any, action: str = "") -> Response:
        return Response(draft_json(services.get_draft(self.actor, pk)))

    @extend_schema(request=doc.ToolDraftActionSerializer, responses={200: doc.ToolDraftSerializer, **WRITE_ERRORS},
                   summary="Act on a draft: configure, test (a real call), attach a warning or a sample output")
    def post(self, request: Request, pk: Any, action: str = "") -> Response:
        draft = services.get_draft(self.actor, pk)
        data = body(request)
        if action == "configure":
            draft = services.configure_draft(actor=self.actor, draft=draft, definition=data.get("definition") or {})
        elif action == "test":
            draft = services.test_draft(actor=self.actor, draft=draft, args=data.get("args"))
        elif action == "warnings":
            draft = services.attach_warning(actor=self.actor, draft=draft, level=str(data.get("level") or "warning"),
                                            text=str(data.get("text") or ""))
        elif action == "samples":
            draft = services.attach_sample(actor=self.actor, draft=draft, label=str(data.get("label") or ""),
                                           content=data.get("content"))
        else:
            raise Invalid(f"Unknown draft action {action!r}.")
        return Response(draft_json(draft))


# ------------------------------------------------------------------ database and MCP connections


def connection_json(conn: DatabaseConnection) -> dict[str, Any]:
    return {"id": str(conn.pk), "name": conn.name, "engine": conn.engine, "permission": conn.permission,
            "statement_timeout_ms": conn.statement_timeout_ms, "row_cap": conn.row_cap,
            "created_at": conn.created_at.isoformat()}


class DbConnectionListView(BaseOrgView):
    permission_map = {"GET": READ, "POST": WRITE}

    @extend_schema(responses={200: doc.DatabaseConnectionListSerializer, **ERRORS},
                   operation_id="v1_db_connections_list", summary="Database connections")
    def get(self, request: Request) -> Response:
        return Response({"results": [connection_json(c) for c in self.org_queryset(DatabaseConnection)]})

    @extend_schema(request=doc.DatabaseConnectionCreateSerializer,
                   responses={201: doc.DatabaseConnectionSerializer, **WRITE_ERRORS},
                   summary="Add a database connection (checked with a real connect)")
    def post(self, request: Request) -> Response:
        from capabilities.db_connections import services as db_services

        data = body(request)
        conn = db_services.create_connection(actor=self.actor, name=str(data.get("name") or ""),
                                             dsn=str(data.get("dsn") or ""),
                                             permission=str(data.get("permission") or "read"),
                                             engine=str(data.get("engine") or "postgresql"))
        return Response(connection_json(conn), status=status.HTTP_201_CREATED)


class DbConnectionDetailView(BaseOrgView):
    permission_map = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(responses={200: doc.DatabaseConnectionSerializer, **ERRORS}, summary="One database connection")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(connection_json(self.org_get(DatabaseConnection, pk)))

    @extend_schema(request=doc.DatabaseConnectionUpdateSerializer,
                   responses={200: doc.DatabaseConnectionSerializer, **WRITE_ERRORS},
                   summary="Change a database connection")
    def patch(self, request: Request, pk: Any) -> Response:
        from capabilities.db_connections import services as db_services

        conn = db_services.update_connection(actor=self.actor, connection=self.org_get(DatabaseConnection, pk),
                                             changes=body(request))  # the service reads the limits (422 on junk)
        return Response(connection_json(conn))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a database connection")
    def delete(self, request: Request, pk: Any) -> Response:
        from capabilities.db_connections import services as db_services

        db_services.delete_connection(actor=self.actor, connection=self.org_get(DatabaseConnection, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


def mcp_json(conn: McpConnection) -> dict[str, Any]:
    return {"id": str(conn.pk), "name": conn.name, "url": conn.url, "transport": conn.transport,
            "auth_header": conn.auth_header, "auth_secret_id": str(conn.auth_secret_id) if conn.auth_secret_id else None,
            "tools": conn.tools, "checked_at": conn.checked_at.isoformat() if conn.checked_at else None}


class McpConnectionListView(BaseOrgView):
    permission_map = {"GET": READ, "POST": WRITE}

    @extend_schema(responses={200: doc.McpConnectionListSerializer, **ERRORS},
                   operation_id="v1_mcp_connections_list", summary="MCP connections")
    def get(self, request: Request) -> Response:
        return Response({"results": [mcp_json(c) for c in self.org_queryset(McpConnection)]})

    @extend_schema(request=doc.McpConnectionCreateSerializer, responses={201: doc.McpConnectionSerializer, **WRITE_ERRORS},
                   summary="Add an MCP server (its tools are listed at once)")
    def post(self, request: Request) -> Response:
        from capabilities.mcp import services as mcp_services

        conn = mcp_services.create_connection(actor=self.actor, **mcp_services.clean_input(body(request)))
        return Response(mcp_json(conn), status=status.HTTP_201_CREATED)


class McpConnectionDetailView(BaseOrgView):
    permission_map = {"GET": READ, "DELETE": WRITE}

    @extend_schema(responses={200: doc.McpConnectionSerializer, **ERRORS}, summary="One MCP connection")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(mcp_json(self.org_get(McpConnection, pk)))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete an MCP connection")
    def delete(self, request: Request, pk: Any) -> Response:
        from capabilities.mcp import services as mcp_services

        mcp_services.delete_connection(actor=self.actor, connection=self.org_get(McpConnection, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class McpConnectionCheckView(BaseOrgView):
    permission_map = {"POST": WRITE}

    @extend_schema(request=None, responses={200: doc.McpConnectionSerializer, **WRITE_ERRORS},
                   summary="List an MCP server's tools again")
    def post(self, request: Request, pk: Any) -> Response:
        from capabilities.mcp import services as mcp_services

        conn = mcp_services.check_connection(actor=self.actor, connection=self.org_get(McpConnection, pk))
        return Response(mcp_json(conn))


class McpCatalogView(BaseOrgView):
    """The services people connect with one click (capabilities.mcp.catalog): for each, whom it is connected
    for (the organization, or each person) and whether the caller's side of it is connected. Connecting is a
    browser's sign-in at the provider, so it starts from the console (/connections/catalog/<key>/connect)."""

    permission_map = {"GET": READ}

    @extend_schema(responses={200: doc.McpCatalogSerializer, **ERRORS}, summary="The MCP catalog")
    def get(self, request: Request) -> Response:
        from capabilities.mcp import services as mcp_services

        rows = mcp_services.catalog_listing(self.actor)
        for row in rows:
            row["connected_at"] = row["connected_at"].isoformat() if row["connected_at"] else None
        return Response({"results": rows})


class McpCatalogConnectionView(BaseOrgView):
    """Disconnect: the caller's own account, or (an editor) the organization's; the tokens are revoked at the
    provider when it offers revocation."""

    permission_map = {"DELETE": "agents:run"}  # the service asks for more on an organization-wide service

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Disconnect a catalog service")
    def delete(self, request: Request, key: str) -> Response:
        from capabilities.mcp import services as mcp_services

        if not mcp_services.disconnect(actor=self.actor, key=key):
            raise NotFound("Not connected.")
        return Response(status=status.HTTP_204_NO_CONTENT)
