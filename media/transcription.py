"""Speech → text through an OpenAI-compatible POST /audio/transcriptions (OpenAI, Groq, Mistral): the one call
both the channel bots' voice notes (channelbots.transcription) and the web chat's microphone
(agents.api_transcriptions) make.

The key is one the organization already configured in a model profile; the caller says which (each surface has
its own rule for choosing it). The call goes through the outbound guard with the model profiles' allowance
(`MODEL_ALLOWED_PRIVATE_HOSTS`), the address checked and pinned, so the key never reaches a metadata or (unlisted)
private address. It spends the organization's provider credit, so it is metered like every model call
(`governance.metered`): the caps of the caller's meter are checked before the upload (a used-up cap sends nothing),
and the call is written to the ledger as `transcription`.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import httpx2

from agenticos import netguard, vault
from agents.models import ModelProfile
from governance import budgets, metered, pricing

logger = logging.getLogger(__name__)

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the endpoint's own limit

# The providers with an OpenAI-compatible transcription endpoint, their name for people, their home and their models.
STT_CATALOG: dict[str, dict[str, Any]] = {
    "openai": {"label": "OpenAI", "base_url": "https://api.openai.com/v1", "models": ["whisper-1", "gpt-4o-transcribe",
                                                                   "gpt-4o-mini-transcribe"]},
    "groq": {"label": "Groq", "base_url": "https://api.groq.com/openai/v1", "models": ["whisper-large-v3",
                                                                      "whisper-large-v3-turbo"]},
    "mistral": {"label": "Mistral AI", "base_url": "https://api.mistral.ai/v1", "models": ["voxtral-mini-latest"]},
}


class TranscriptionFailed(Exception):
    """Why there is no text, in words a person can read (no address, no key). `code`: "not_configured" (no
    profile to use), "budget_exceeded" (a cap is used up, nothing was sent), "transcription_failed" (the service
    or the recording)."""

    def __init__(self, message: str, code: str = "transcription_failed") -> None:
        super().__init__(message)
        self.code = code


def provider_of(profile: ModelProfile) -> str:
    """The catalog provider a profile's key serves: OpenAI for an OpenAI profile, else the provider whose host the
    profile's base URL names; "" for none (a local OpenAI-compatible server, priced as unknown)."""
    if profile.provider == "openai":
        return "openai"
    host = urlsplit(profile.base_url or "").hostname or ""
    return next((name for name, entry in STT_CATALOG.items() if urlsplit(entry["base_url"]).hostname == host), "")


def _record(meter: metered.Meter, provider: str, model: str, usage: Any) -> None:
    usage = usage if isinstance(usage, dict) else None
    cost, partial = pricing.price_audio(model, provider, usage)
    metered.record(meter, model=model, cost=cost, partial=partial, chat=False,
                   input_tokens=int((usage or {}).get("input_tokens") or 0),
                   output_tokens=int((usage or {}).get("output_tokens") or 0))


def transcribe(*, profile: ModelProfile, provider: str, model: str, meter: metered.Meter, data: bytes,
               filename: str, mime: str, who: str) -> str:
    """The text of `data`, sent with `profile`'s key to `provider`'s endpoint (the profile's base URL first) and
    metered on `meter`. `who` names the caller in the operator's log (a bot, a person), never in the answer."""
    if not data:
        raise TranscriptionFailed("the recording is empty")
    if len(data) > MAX_AUDIO_BYTES:
        raise TranscriptionFailed("the recording is larger than the transcription endpoint accepts")
    try:
        metered.check(meter)
    except budgets.BudgetExceeded as exc:
        raise TranscriptionFailed(f"{exc.cap.label} is used up", code="budget_exceeded") from None
    home = STT_CATALOG.get(provider, {}).get("base_url", "")
    base = (profile.base_url or home).rstrip("/")
    if not base:
        raise TranscriptionFailed("the speech-to-text model profile has no address")
    key = vault.reveal(profile.secret) if profile.secret_id else ""
    url = f"{base}/audio/transcriptions"
    try:
        with netguard.pinned_sync_client(allowance=netguard.MODEL_HOSTS, home=url, timeout=60) as client:
            response = client.post(
                url,
                headers={"Authorization": f"Bearer {key}"} if key else {},
                data={"model": model, "response_format": "json"},
                files={"file": (filename, data, mime or "application/octet-stream")},
            )
    except netguard.Refused as exc:
        # The reason (it names resolved addresses) is for the operator; the person hears only that it was refused.
        logger.warning("Transcription for %s refused by the outbound guard: %s", who, netguard.operator_text(exc))
        raise TranscriptionFailed("this deployment's outbound guard refused the transcription service's address") from None
    except httpx2.TimeoutException:
        raise TranscriptionFailed("the transcription service did not answer in time") from None
    except httpx2.HTTPError as exc:
        raise TranscriptionFailed(f"the transcription service could not be reached ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise TranscriptionFailed(f"the transcription service refused the recording ({response.status_code})")
    try:
        body = response.json()
    except ValueError:
        body = {"text": response.text}
    body = body if isinstance(body, dict) else {}
    _record(meter, provider, model, body.get("usage"))
    text = str(body.get("text") or "").strip()
    if not text:
        raise TranscriptionFailed("the transcription came back empty")
    return text


# ------------------------------------------------------------------ the web chat's microphone


def chat_profile(organization_id: Any) -> ModelProfile:
    """The profile that transcribes the web chat's microphone: the one chosen in Settings → Chat, else the
    organization's only speech-to-text profile. Several and none chosen is the operator's choice to make — the
    recording is never sent with whichever key a query happened to return first."""
    from agents.models import ChatSettings

    chosen = (ChatSettings.objects.filter(organization_id=organization_id)
              .values_list("voice_profile_id", flat=True).first())
    profiles = ModelProfile.objects.select_related("secret").filter(
        organization_id=organization_id, kind=ModelProfile.Kind.TRANSCRIPTION)
    if chosen is not None:
        profile = profiles.filter(pk=chosen).first()
        if profile is not None:
            return profile
    found = list(profiles[:2])
    if not found:
        raise TranscriptionFailed("no speech-to-text model is set up for this organization: an administrator adds "
                                  "a Speech to text model profile", code="not_configured")
    if len(found) > 1:
        raise TranscriptionFailed("this organization has several speech-to-text model profiles: an administrator "
                                  "chooses the chat's in Settings → Chat", code="not_configured")
    return found[0]


def choose_chat_profile(*, actor: Any, profile_id: Any) -> Any:
    """The operator picks the speech-to-text profile the chat's microphone uses (None: the only one). Audited."""
    from django.db import transaction
    from django.utils import timezone

    from agenticos import audit
    from agenticos.tenancy import org_get
    from agents.models import ChatSettings

    actor.require("models:manage")
    profile = None
    if profile_id:
        profile = org_get(actor, ModelProfile, profile_id, queryset=ModelProfile.objects.filter(
            organization=actor.organization, kind=ModelProfile.Kind.TRANSCRIPTION))
    with transaction.atomic():
        chosen, _ = ChatSettings.objects.select_for_update().get_or_create(organization=actor.organization)
        if chosen.voice_profile_id != (profile.pk if profile else None):
            chosen.voice_profile = profile
            chosen.updated_at = timezone.now()
            chosen.save(update_fields=["voice_profile", "updated_at"])
            audit.record(actor=actor.user, organization=actor.organization, action="chat_settings.voice_profile",
                         target=chosen, details={"model_profile_id": str(profile.pk) if profile else None})
    return chosen


def transcribe_for_chat(*, organization_id: Any, agent_id: Any, user_id: Any, data: bytes, filename: str,
                        mime: str) -> str:
    """A person's recording from the web chat's composer, as text for them to edit before sending: the chat's
    speech-to-text profile pays, metered for the agent they talk to (its production cap) and the organization.
    The caller has checked that the person may use the agent."""
    profile = chat_profile(organization_id)
    meter = metered.for_agent(organization_id, agent_id, kind=metered.TRANSCRIPTION, surface="web")
    return transcribe(profile=profile, provider=provider_of(profile), model=profile.model, meter=meter, data=data,
                      filename=filename, mime=mime, who=f"user {user_id}")
