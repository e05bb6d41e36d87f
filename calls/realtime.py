"""A server-side connection to OpenAI's Realtime API over WebSocket.

The browser talks to our socket (calls.consumers); this connection talks to the provider, so the key stays
in the vault and never reaches a page. The session is fixed when the call connects (`session.update`: the
agent's instructions, the call's tools, the voice, audio formats, server-side turn detection and input
transcription), because a realtime model's tools cannot change mid-call the way a text run's can.

Hand-written on `websockets` rather than the `openai` SDK's `realtime.connect`: that manager is a thin wrapper
over the same `websockets.connect`, and what we need from it is what it does not give — the connection sent to
the address netguard checked (the pin, with the TLS server name kept), and the raw JSON events relayed by
type, under both the beta names (`response.audio.delta`) and the GA ones (`response.output_audio.delta`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from agenticos import netguard

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Beta and GA spell the same events differently; the call reads both as the GA-less beta names below.
EVENT_ALIASES = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
}
CONNECT_TIMEOUT_S = 15


class RealtimeError(Exception):
    """The provider refused or dropped the call. `code` is the provider's error code; its message is never kept
    (it may quote the key or the person's words)."""

    def __init__(self, code: str):
        self.code = code
        super().__init__(f"The realtime provider ended the call ({code}).")


@dataclass(frozen=True)
class CallTool:
    """One function the realtime model may call: its name, what it is for, and its JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def as_session_tool(self) -> dict[str, Any]:
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": self.parameters}


@dataclass(frozen=True)
class SessionConfig:
    instructions: str
    tools: tuple[CallTool, ...] = ()
    voice: str = "alloy"
    transcription_model: str = "whisper-1"
    reasoning_effort: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def event(self) -> dict[str, Any]:
        session: dict[str, Any] = {
            "modalities": ["audio", "text"],
            "instructions": self.instructions,
            "voice": self.voice,
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "input_audio_transcription": {"model": self.transcription_model},
            "turn_detection": {"type": "server_vad"},
            "tools": [tool.as_session_tool() for tool in self.tools],
            "tool_choice": "auto" if self.tools else "none",
        }
        if self.reasoning_effort:  # the catalog's "mapeada": thinking becomes the model's own setting
            session["reasoning"] = {"effort": self.reasoning_effort}
        session.update(self.extra)
        return {"type": "session.update", "session": session}


def realtime_url(base_url: str, model: str) -> str:
    """`wss://…/v1/realtime?model=…` from a profile's HTTP base URL."""
    parts = urlsplit((base_url or DEFAULT_BASE_URL).rstrip("/"))
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, f"{parts.path}/realtime", urlencode({"model": model}), ""))


class RealtimeConnection:
    """One open call with the provider: send events, read events (aliases folded), close."""

    def __init__(self, socket: ClientConnection):
        self._socket = socket

    @classmethod
    async def open(cls, *, base_url: str, model: str, key: str, session: SessionConfig) -> RealtimeConnection:
        url = realtime_url(base_url, model)
        http_url = url.replace("wss://", "https://", 1).replace("ws://", "http://", 1)
        pinned = await netguard.check_url(http_url, allowance=netguard.MODEL_HOSTS)
        options: dict[str, Any] = {"host": pinned.ip.split("%")[0], "port": pinned.port}
        if pinned.is_https:
            options["server_hostname"] = pinned.hostname
            options["ssl"] = netguard.shared_tls_context()
        socket = await connect(
            url, additional_headers={"Authorization": f"Bearer {key}", "OpenAI-Beta": "realtime=v1"},
            open_timeout=CONNECT_TIMEOUT_S, max_size=16 * 1024 * 1024, user_agent_header=None, **options)
        connection = cls(socket)
        await connection.send(session.event())
        return connection

    async def send(self, event: dict[str, Any]) -> None:
        await self._socket.send(json.dumps(event))

    async def append_audio(self, audio_b64: str) -> None:
        await self.send({"type": "input_audio_buffer.append", "audio": audio_b64})

    async def function_output(self, call_id: str, output: str, *, respond: bool = True) -> None:
        await self.send({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": call_id, "output": output}})
        if respond:
            await self.send({"type": "response.create"})

    async def say(self, text: str) -> None:
        """Tell the model something happened (a hand-off finished) and have it answer aloud."""
        await self.send({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}})
        await self.send({"type": "response.create"})

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        try:
            async for raw in self._socket:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                kind = str(event.get("type", ""))
                event["type"] = EVENT_ALIASES.get(kind, kind)
                yield event
        except ConnectionClosed:
            return

    async def close(self) -> None:
        await self._socket.close()


def error_code(event: dict[str, Any]) -> str:
    error = event.get("error")
    error = error if isinstance(error, dict) else {}
    return str(error.get("code") or error.get("type") or "error")[:64]
