"""One spoken chunk from each provider's own HTTP API; every answer is reduced to audio bytes or an outcome.

- OpenAI `POST /v1/audio/speech` through the OpenAI SDK (`AsyncOpenAI.audio.speech.create`): MP3, or `pcm`
  (24 kHz 16-bit mono) for a WAV clip; `instructions` only to a model that reads them.
- ElevenLabs `POST /v1/text-to-speech/{voice_id}?output_format=mp3_44100_128|pcm_24000`, key in `xi-api-key`.
- Gemini `POST /v1beta/models/{model}:generateContent` with `responseModalities: ["AUDIO"]` and the prebuilt
  voice, key in `x-goog-api-key`; the audio comes back inline as base64 PCM (24 kHz), with the text tokens in
  `usageMetadata.promptTokenCount`. Written by hand although `google-genai` is installed (image generation
  uses it through pydantic-ai): it is one JSON request, and the shared `_post` gives it what the other two
  providers get — the pinned outbound guard, the timeout, and errors reduced to status and code — which the
  SDK's client would have to be wrapped to reproduce.

A provider's refusal is raised as `outbound.ProviderError` (status and code, never its text), a timeout as
`outbound.Timeout`; a refused address propagates as the guard's `netguard.Refused`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from capabilities.text_to_speech.catalog import ProviderEntry, SpeechModel
from media import outbound

ELEVENLABS_FORMATS = {"mp3": "mp3_44100_128", "wav": "pcm_24000"}


@dataclass
class Spoken:
    """One chunk's audio: MP3 bytes, or raw PCM for a WAV clip; Gemini's text tokens when it reported them."""

    audio: bytes
    input_tokens: int = 0


@dataclass
class Request:
    entry: ProviderEntry
    model: SpeechModel
    api_key: str
    voice: str
    output_format: str
    instructions: str
    timeout: float


async def speak(request: Request, text: str) -> Spoken:
    api = {"openai-speech": _openai, "elevenlabs": _elevenlabs, "gemini": _gemini}[request.entry.api]
    return await api(request, text)


async def _openai(request: Request, text: str) -> Spoken:
    import openai

    base = outbound.base_url(request.entry.id, _openai_default(request.entry))
    http = outbound.api_client(base, timeout=request.timeout)
    client = openai.AsyncOpenAI(base_url=base, api_key=request.api_key, http_client=http, max_retries=0,
                                timeout=request.timeout)
    options: dict[str, Any] = {}
    if request.instructions and request.model.reads_instructions:
        options["instructions"] = request.instructions
    try:
        answer = await client.audio.speech.create(
            model=request.model.id, input=text, voice=request.voice,
            response_format="pcm" if request.output_format == "wav" else "mp3", **options)
        return Spoken(answer.content)
    except openai.APITimeoutError as exc:
        raise outbound.Timeout() from exc
    except openai.APIStatusError as exc:
        raise outbound.ProviderError(exc.status_code, str(exc.code or "")) from None
    finally:
        await client.close()


def _openai_default(entry: ProviderEntry) -> str:
    """OpenAI's endpoint is the operator's one setting for it (shared with image generation)."""
    from django.conf import settings

    return str(getattr(settings, "GENERATED_MEDIA_OPENAI_BASE_URL", "") or entry.base_url)


async def _post(request: Request, path: str, *, headers: dict[str, str], json: dict[str, Any],
                params: dict[str, str] | None = None) -> Any:
    base = outbound.base_url(request.entry.id, request.entry.base_url)
    async with outbound.api_client(base, timeout=request.timeout) as client:
        try:
            response = await client.post(f"{base}{path}", headers=headers, json=json, params=params)
        except Exception as exc:
            if outbound.is_timeout(exc):
                raise outbound.Timeout() from exc
            raise
    outbound.raise_for(response)
    return response


async def _elevenlabs(request: Request, text: str) -> Spoken:
    response = await _post(
        request, f"/v1/text-to-speech/{request.voice}", headers={"xi-api-key": request.api_key},
        params={"output_format": ELEVENLABS_FORMATS[request.output_format]},
        json={"text": text, "model_id": request.model.id})
    return Spoken(response.content)


async def _gemini(request: Request, text: str) -> Spoken:
    prompt = f"{request.instructions}:\n\n{text}" if request.instructions else text
    response = await _post(
        request, f"/v1beta/models/{request.model.id}:generateContent", headers={"x-goog-api-key": request.api_key},
        json={"contents": [{"parts": [{"text": prompt}]}],
              "generationConfig": {"responseModalities": ["AUDIO"], "speechConfig": {
                  "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": request.voice}}}}})
    body = response.json()
    try:
        parts = body["candidates"][0]["content"]["parts"]
        data = next(p["inlineData"]["data"] for p in parts if "inlineData" in p)
        audio = base64.b64decode(data, validate=True)
    except (KeyError, IndexError, TypeError, StopIteration, binascii.Error, ValueError):
        finish = ""
        if isinstance(body, dict):
            candidates = body.get("candidates") or [{}]
            finish = str((candidates[0] or {}).get("finishReason") or
                         (body.get("promptFeedback") or {}).get("blockReason") or "")
        raise outbound.ProviderError(200, finish or "no_audio") from None
    tokens = int(((body.get("usageMetadata") or {}).get("promptTokenCount")) or 0)
    return Spoken(audio, input_tokens=tokens)
