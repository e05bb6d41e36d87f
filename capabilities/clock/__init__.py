"""clock — the current date and time, in the instructions and on request."""

from capabilities.clock.capability import CAPABILITY

__all__ = ["CAPABILITY"]
