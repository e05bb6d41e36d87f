"""clock — the current date and time, in the instructions (no tool, on purpose)."""

from capabilities.clock.capability import CAPABILITY

__all__ = ["CAPABILITY"]
