"""Voice notes → text through an OpenAI-compatible POST /audio/transcriptions (OpenAI, Groq, Mistral).

The key is the one the organization already configured for that provider in its model profiles (matched
by provider, or by base URL host for OpenAI-compatible profiles); nothing new is stored for it. The call goes
through the outbound guard with the model profiles' allowance (`MODEL_ALLOWED_PRIVATE_HOSTS`), the address
checked and pinned, so the key never reaches a metadata or (unlisted) private address.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import httpx2

from agenticos import vault
from agents.models import ModelProfile
from capabilities import netguard
from channelbots.services import STT_CATALOG

logger = logging.getLogger(__name__)

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the endpoint's own limit


class TranscriptionFailed(Exception):
    """Said in the answer; the turn goes on without the transcript."""


def _profile(organization_id, provider: str) -> ModelProfile | None:
    qs = ModelProfile.objects.select_related("secret").filter(organization_id=organization_id)
    if provider == "openai":
        found = qs.filter(provider="openai").exclude(secret=None).first()
        if found:
            return found
    host = urlsplit(STT_CATALOG[provider]["base_url"]).hostname or ""
    for profile in qs.exclude(secret=None).exclude(base_url=""):
        if (urlsplit(profile.base_url).hostname or "") == host:
            return profile
    return None


def transcribe(bot, data: bytes, *, filename: str = "voice.ogg", mime: str = "audio/ogg") -> str:
    provider, model = bot.stt_provider, bot.stt_model
    if not provider or not model:
        raise TranscriptionFailed("no speech-to-text model is chosen for this bot")
    if len(data) > MAX_AUDIO_BYTES:
        raise TranscriptionFailed("the recording is larger than the transcription endpoint accepts")
    profile = _profile(bot.organization_id, provider)
    if profile is None or profile.secret is None:
        raise TranscriptionFailed(f"this organization has no {provider} key in its model profiles")
    base = (profile.base_url or STT_CATALOG[provider]["base_url"]).rstrip("/")
    key = vault.reveal(profile.secret)
    url = f"{base}/audio/transcriptions"
    try:
        with netguard.pinned_sync_client(allowance=netguard.MODEL_HOSTS, home=url, timeout=60) as client:
            response = client.post(
                url,
                headers={"Authorization": f"Bearer {key}"},
                data={"model": model, "response_format": "json"},
                files={"file": (filename, data, mime or "application/octet-stream")},
            )
    except netguard.Refused as exc:
        # The reason (it names resolved addresses) is for the operator; the person hears only that it was refused.
        logger.warning("Transcription for bot %s refused by the outbound guard: %s", bot.pk, exc)
        raise TranscriptionFailed("this deployment's outbound guard refused the transcription service's address") from None
    except httpx2.TimeoutException:
        raise TranscriptionFailed("the transcription service did not answer in time") from None
    except httpx2.HTTPError as exc:
        raise TranscriptionFailed(f"the transcription service could not be reached ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise TranscriptionFailed(f"the transcription service refused the recording ({response.status_code})")
    try:
        text = str(response.json().get("text") or "").strip()
    except ValueError:
        text = response.text.strip()
    if not text:
        raise TranscriptionFailed("the transcription came back empty")
    return text
