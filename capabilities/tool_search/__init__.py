"""tool_search — find a tool in a large set instead of carrying every schema (defers MCP toolsets)."""

from capabilities.tool_search.capability import CAPABILITY

__all__ = ["CAPABILITY"]
