"""custom_tools — named REST tools defined in the console, offered to an agent by id."""

from capabilities.custom_tools.capability import CAPABILITY

__all__ = ["CAPABILITY"]
