"""Voice notes → text through an OpenAI-compatible POST /audio/transcriptions (OpenAI, Groq, Mistral).

The call itself is media.transcription's (the web chat's microphone makes the same one). The key is the one the organization already configured for that provider in its model profiles (matched
by provider, or by base URL host for OpenAI-compatible profiles); nothing new is stored for it. The bot may name
which profile (`stt_profile`); unnamed, the organization's only one serves, and with several it must be named. The call goes
through the outbound guard with the model profiles' allowance (`MODEL_ALLOWED_PRIVATE_HOSTS`), the address
checked and pinned, so the key never reaches a metadata or (unlisted) private address.

It spends the organization's provider credit, so it is metered like every model call (`governance.metered`):
the bot's agent's, the organization's caps are checked before the upload (a used-up cap sends nothing), and the
call is written to the ledger as `transcription` with the organization and the agent it served — a voice note
is heard before its run exists, so the row has no run.
"""

from __future__ import annotations

import logging

from agents.models import ModelProfile
from channelbots.services import stt_profiles
from governance import metered
from media import transcription as speech
from media.transcription import MAX_AUDIO_BYTES, TranscriptionFailed

__all__ = ["MAX_AUDIO_BYTES", "TranscriptionFailed", "transcribe"]

logger = logging.getLogger(__name__)


def _profile(bot, provider: str) -> ModelProfile:
    """The key that pays: the profile the bot names, else the organization's only profile serving the provider
    (a Speech-to-text one before the others). Several and none named is the operator's choice to make — the
    recording is never sent with whichever key a query happened to return first."""
    candidates = stt_profiles(bot.organization_id, provider)
    if bot.stt_profile_id is not None:
        named = next((profile for profile in candidates if profile.pk == bot.stt_profile_id), None)
        if named is None:
            raise TranscriptionFailed(f"the model profile chosen for voice notes no longer has a {provider} key")
        return named
    if not candidates:
        raise TranscriptionFailed(f"this organization has no {provider} key in its model profiles")
    transcription = [profile for profile in candidates if profile.kind == ModelProfile.Kind.TRANSCRIPTION]
    if len(transcription) == 1 or len(candidates) == 1:
        return (transcription or candidates)[0]
    raise TranscriptionFailed(f"this organization has several {provider} keys in its model profiles; "
                              "choose the one voice notes use in the bot's settings")


def _meter(bot) -> metered.Meter:
    """The bot's agent (its binding's environment) and organization; a bot with no binding meters its
    organization alone."""
    from channelbots.models import Binding

    binding = Binding.objects.filter(bot_id=bot.pk).values("agent_id", "environment").first()
    if binding is None:
        return metered.Meter(organization_id=bot.organization_id, kind=metered.TRANSCRIPTION, surface=bot.platform)
    return metered.for_agent(bot.organization_id, binding["agent_id"], kind=metered.TRANSCRIPTION,
                             surface=bot.platform, environment=binding["environment"])


def transcribe(bot, data: bytes, *, filename: str = "voice.ogg", mime: str = "audio/ogg") -> str:
    provider, model = bot.stt_provider, bot.stt_model
    if not provider or not model:
        raise TranscriptionFailed("no speech-to-text model is chosen for this bot")
    if len(data) > MAX_AUDIO_BYTES:
        raise TranscriptionFailed("the recording is larger than the transcription endpoint accepts")
    profile = _profile(bot, provider)
    return speech.transcribe(profile=profile, provider=provider, model=model, meter=_meter(bot), data=data,
                             filename=filename, mime=mime, who=f"bot {bot.pk}")
