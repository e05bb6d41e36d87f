"""`POST /api/v1/tool-kits/sessions/{id}/messages`: one turn of the AI tool builder, a run of the organization's
built-in builder agent (agents.tool_builder). The rest of the tools API is capabilities.api_tools; this view sits
here because it starts a run, which the catalog never does (issue 38)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS, BaseOrgView
from agenticos.errors import Invalid
from agents import tool_builder
from capabilities.api_tools import WRITE, body
from capabilities.models import ToolBuilderSession
from capabilities.serializers_tools import ToolBuilderTurnSerializer, ToolBuilderTurnStartedSerializer


class SessionMessageView(BaseOrgView):
    """POST a message to the AI builder: one run of the built-in builder agent in the session's conversation."""

    permission_map = {"POST": WRITE}

    @extend_schema(request=ToolBuilderTurnSerializer, responses={202: ToolBuilderTurnStartedSerializer, **WRITE_ERRORS},
                   summary="Say something to the AI tool builder (starts a run)")
    def post(self, request: Request, pk: Any) -> Response:
        self.actor.require("agents:run")
        session = self.org_get(ToolBuilderSession, pk)
        data = body(request)
        prompt = str(data.get("prompt") or "").strip()
        if not prompt:
            raise Invalid("Say what to build.", details={"problems": [{"field": "prompt", "message": "Required."}]})
        run = tool_builder.say(actor=self.actor, session=session, prompt=prompt,
                               model_profile_id=data.get("model_profile_id"))
        return Response({"run_id": str(run.pk), "conversation_id": str(run.conversation_id)},
                        status=status.HTTP_202_ACCEPTED)
