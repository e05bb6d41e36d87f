"""REST: deleting one's own conversation (the list and its messages are in api_runs)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agents.chat import delete_conversation


class ConversationDetailView(OrgAPIView):
    permission_map = {"DELETE": "agents:run"}

    @extend_schema(request=None, responses={204: None, **WRITE_ERRORS},
                   summary="Delete one of my conversations with its messages, runs, workspace and uploaded files")
    def delete(self, request: Request, conversation_id) -> Response:
        delete_conversation(actor=self.actor, conversation_id=conversation_id, ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)
