"""video_generation — `generate_video` makes short clips with Google (inline), BytePlus or xAI (polled jobs),
priced per second at the chosen resolution before the call, and stored in the generated-media store."""

from capabilities.video_generation.capability import CAPABILITY

__all__ = ["CAPABILITY"]
