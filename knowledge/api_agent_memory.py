"""`POST /api/v1/memory/agents/{agent_id}/clear`: everything one agent remembers, about everyone.

Its own module beside `knowledge/api.py` (routed in `knowledge/urls.py`); the console's Toolbox action calls
the same service, `knowledge.memory.clear_agent`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS, BaseOrgView
from agents.models import Agent


class AgentMemoryClearView(BaseOrgView):
    """Clear one agent's memory: every person's and group chat's notes, and mem0 memories of every owner.

    Needs edit access on the agent (the service checks it); another organization's agent answers 404. A mem0
    key that is missing, a provider failure or an incomplete mem0 user list is an error and deletes nothing here.
    """

    permission_map: dict[str, str] = {}

    @extend_schema(request=None, summary="Clear an agent's memory", responses={200: inline_serializer(
        "AgentMemoryCleared", {"notes_deleted": serializers.IntegerField(),
                               "mem0_spaces_cleared": serializers.IntegerField()}), **WRITE_ERRORS})
    def post(self, request: Request, agent_id: Any) -> Response:
        from agenticos.errors import DomainError
        from knowledge import memory
        from knowledge.mem0 import Mem0Error

        agent = self.org_get(Agent, agent_id)
        try:
            result = memory.clear_agent(actor=self.actor, agent=agent)
        except Mem0Error as exc:
            raise DomainError(f"Memory was not cleared: {exc}", code="mem0_unavailable") from exc
        return Response(result)
