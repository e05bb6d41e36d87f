"""memory_files — notes the agent keeps between conversations, in the one store its audience decides."""

from capabilities.memory_files.capability import CAPABILITY

__all__ = ["CAPABILITY"]
