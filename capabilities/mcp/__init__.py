"""mcp — tools from the organization's MCP servers, prefixed with the connection's name."""

from capabilities.mcp.capability import CAPABILITY

__all__ = ["CAPABILITY"]
