"""web_fetch — read the whole page at a URL, as Markdown."""

from capabilities.web_fetch.capability import CAPABILITY, binding_problems

__all__ = ["CAPABILITY", "binding_problems"]
