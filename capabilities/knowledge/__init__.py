"""knowledge — search_documents over the collections the agent's spec binds."""

from capabilities.knowledge.capability import CAPABILITY

__all__ = ["CAPABILITY"]
