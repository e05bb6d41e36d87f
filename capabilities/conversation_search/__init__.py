"""conversation_search — search_conversations and read_conversation over one person's past conversations."""

from capabilities.conversation_search.capability import CAPABILITY

__all__ = ["CAPABILITY"]
