"""memory_mem0 — remember/recall against a mem0 service, scoped {org}:{agent}:{owner}."""

from capabilities.memory_mem0.capability import CAPABILITY

__all__ = ["CAPABILITY"]
