"""Web browser capability (`browser_use`): see capability.py."""

from capabilities.browser.capability import CAPABILITY

__all__ = ["CAPABILITY"]
