"""skills — the organization's skills bound by id, loaded on demand through pydantic-ai-skills."""

from capabilities.skills.capability import CAPABILITY

__all__ = ["CAPABILITY"]
