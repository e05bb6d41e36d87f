"""The coding agent capability: Claude Code or Codex in the agent's sandbox (see capability.py)."""

from capabilities.coding_agent.capability import CAPABILITY

__all__ = ["CAPABILITY"]
