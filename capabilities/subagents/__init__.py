"""Delegation: see capability.py."""

from capabilities.subagents.capability import CAPABILITY

__all__ = ["CAPABILITY"]
