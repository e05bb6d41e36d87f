"""text_to_speech — `generate_speech` reads a text aloud with OpenAI, ElevenLabs or Gemini, priced by the
character before the call, recorded chunk by chunk, and stored in the generated-media store."""

from capabilities.text_to_speech.capability import CAPABILITY

__all__ = ["CAPABILITY"]
