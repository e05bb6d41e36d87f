"""REST: a recording from the chat composer's microphone, as text for its sender to read and edit before sending
(web chat, or any member client of the API). The call is the channel bots' (media.transcription): the
organization's speech-to-text profile pays, the caps of the agent and the organization are checked before anything
is sent, and the ledger records it as `transcription` for that agent. Nothing is stored: the audio is sent and
dropped, the text goes back to the person only."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import parsers, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS, BaseOrgView
from agenticos.errors import DomainError, UploadTooLarge
from agenticos.serializers import ErrorSerializer
from agenticos.tenancy import parse_uuid
from agents import uploads
from agents.services import agent_version_and_rollout
from governance.grants import USE
from media import transcription

AUDIO_SCHEMA = {
    "multipart/form-data": {
        "type": "object",
        "properties": {"file": {"type": "string", "format": "binary", "description": "The recording (WebM, Ogg, "
                                "MP3, WAV, M4A…), at most 25 MB."},
                       "agent_id": {"type": "string", "format": "uuid",
                                    "description": "The agent the text is for: its budget pays."}},
        "required": ["file", "agent_id"],
    }
}


class TranscriptionSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="What was said; put it in the composer, the person sends it.")


class NotConfigured(DomainError):
    status = 409
    code = "not_configured"


class BudgetUsedUp(DomainError):
    status = 402
    code = "budget_exceeded"


class TranscriptionUnavailable(DomainError):
    status = 502
    code = "transcription_failed"


FAILURES: dict[str, type[DomainError]] = {"not_configured": NotConfigured, "budget_exceeded": BudgetUsedUp}


class TranscriptionView(BaseOrgView):
    permission_map = {"POST": "agents:run"}
    parser_classes = [parsers.MultiPartParser]
    serializer_class = TranscriptionSerializer

    @extend_schema(
        request=AUDIO_SCHEMA,
        responses={200: TranscriptionSerializer, **WRITE_ERRORS,
                   400: OpenApiResponse(ErrorSerializer, description="No agent_id, no file, or an empty recording; "
                                                                     "details.field names which."),
                   402: OpenApiResponse(ErrorSerializer, description="A budget (the agent's or the organization's) "
                                                                     "is used up: nothing was sent."),
                   409: OpenApiResponse(ErrorSerializer, description="No speech-to-text model profile is set up "
                                                                     "(or several, and none chosen for the chat)."),
                   413: OpenApiResponse(ErrorSerializer, description="Over 25 MB."),
                   502: OpenApiResponse(ErrorSerializer, description="The transcription service failed or heard "
                                                                     "nothing in the recording; the message says "
                                                                     "which.")},
        summary="Transcribe a recording for my next chat message",
    )
    def post(self, request: Request) -> Response:
        limit = transcription.MAX_AUDIO_BYTES
        uploads.refuse_oversized_body(request, limit)  # before the multipart body is parsed
        agent_id = parse_uuid(str(request.data.get("agent_id") or ""))
        if agent_id is None:
            raise DomainError("Name the agent the text is for in agent_id.", details={"field": "agent_id"})
        # The agent the person may use (its production version); another organization's or a private one is a 404.
        agent, _, _ = agent_version_and_rollout(actor=self.actor, agent_id=agent_id, level=USE)
        upload = request.FILES.get("file")
        if upload is None:
            raise DomainError("Send the recording as the multipart field 'file'.", details={"field": "file"})
        data = upload.read(limit + 1)
        if len(data) > limit:
            raise UploadTooLarge("The recording is over 25 MB.", details={"limit_bytes": limit})
        if not data:  # the client's to fix, not the service's failure (a 502 says "try again")
            raise DomainError("The recording is empty.", details={"field": "file"})
        try:
            text = transcription.transcribe_for_chat(
                organization_id=self.actor.organization.pk, agent_id=agent.pk, user_id=self.actor.user_id,
                data=data, filename=(upload.name or "recording.webm")[:120], mime=upload.content_type or "")
        except transcription.TranscriptionFailed as exc:
            raise FAILURES.get(exc.code, TranscriptionUnavailable)(_sentence(str(exc))) from None
        return Response(TranscriptionSerializer({"text": text}).data)


def _sentence(reason: str) -> str:
    return reason[:1].upper() + reason[1:] + "."
