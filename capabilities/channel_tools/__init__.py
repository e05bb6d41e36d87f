"""channel_tools — lookups on the chat a run arrived from (granted per channel binding, never in a spec)."""

from capabilities.channel_tools.capability import CAPABILITY

__all__ = ["CAPABILITY"]
