"""The capability catalog endpoint: the Builder draws its picker and config forms from this."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api_base import OrgAPIView
from capabilities import registry


class CapabilityCatalogView(OrgAPIView):
    """GET /api/v1/agents/capabilities — every capability of this deployment, with JSON Schemas."""

    permission_map = {"GET": "agents:view"}

    def get(self, request: Request) -> Response:
        return Response(registry.catalog_json())
