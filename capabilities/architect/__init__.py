"""architect — lets an agent design agents: what this organization can give a new one, and the checks a
proposed setup passes before it is drawn as a card (the Architect, agents/architect.py)."""

from capabilities.architect.capability import CAPABILITY

__all__ = ["CAPABILITY"]
