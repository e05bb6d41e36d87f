"""context — the organization's context files bound to the agent: inject (in the instructions) or link (read on demand)."""

from capabilities.context.capability import CAPABILITY, frame_context_files

__all__ = ["CAPABILITY", "frame_context_files"]
