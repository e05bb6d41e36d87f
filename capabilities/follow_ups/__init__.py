"""follow_ups — suggested next steps under an answer (a separate, metered model) and setup cards."""

from capabilities.follow_ups.capability import CAPABILITY, FollowUpsConfig

__all__ = ["CAPABILITY", "FollowUpsConfig"]
