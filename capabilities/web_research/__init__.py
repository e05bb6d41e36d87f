"""web_research — web_search: current information from the public web."""

from capabilities.web_research.capability import CAPABILITY, binding_problems

__all__ = ["CAPABILITY", "binding_problems"]
