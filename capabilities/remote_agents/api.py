"""`/api/v1/remote-agents`: register, list, read, update and delete remote agents (thin views over services)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import Invalid
from capabilities.remote_agents import services
from capabilities.remote_agents.models import RemoteAgent
from capabilities.remote_agents.serializers import (
    RemoteAgentCreateSerializer,
    RemoteAgentListSerializer,
    RemoteAgentSerializer,
    RemoteAgentUpdateSerializer,
)


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise Invalid("The body must be a JSON object.")
    return dict(request.data)


class RemoteAgentListView(BaseOrgView):
    permission_map = {"GET": "agents:view", "POST": "agents:edit"}

    @extend_schema(operation_id="v1_remote_agents_list", responses={200: RemoteAgentListSerializer, **ERRORS},
                   summary="Remote (A2A) agents of the organization")
    def get(self, request: Request) -> Response:
        rows = self.org_queryset(RemoteAgent).order_by("name")
        return Response({"results": [services.remote_agent_json(r) for r in rows]})

    @extend_schema(request=RemoteAgentCreateSerializer, responses={201: RemoteAgentSerializer, **WRITE_ERRORS},
                   summary="Register a remote agent by its agent card")
    def post(self, request: Request) -> Response:
        body = _body(request)
        row = services.create_remote_agent(actor=self.actor, card_url=body.get("card_url"),
                                           secret_id=body.get("secret_id"), name=body.get("name"))
        return Response(services.remote_agent_json(row), status=status.HTTP_201_CREATED)


class RemoteAgentDetailView(BaseOrgView):
    permission_map = {"GET": "agents:view", "PATCH": "agents:edit", "DELETE": "agents:edit"}

    @extend_schema(responses={200: RemoteAgentSerializer, **ERRORS}, summary="One remote agent")
    def get(self, request: Request, pk: Any) -> Response:
        return Response(services.remote_agent_json(self.org_get(RemoteAgent, pk)))

    @extend_schema(request=RemoteAgentUpdateSerializer, responses={200: RemoteAgentSerializer, **WRITE_ERRORS},
                   summary="Change a remote agent (its card is read again)")
    def patch(self, request: Request, pk: Any) -> Response:
        body = _body(request)
        changes: dict[str, Any] = {k: body[k] for k in ("card_url", "secret_id", "name") if k in body}
        row = services.update_remote_agent(actor=self.actor, row=self.org_get(RemoteAgent, pk), changes=changes)
        return Response(services.remote_agent_json(row))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete a remote agent")
    def delete(self, request: Request, pk: Any) -> Response:
        services.delete_remote_agent(actor=self.actor, row=self.org_get(RemoteAgent, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
