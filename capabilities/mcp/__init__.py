"""mcp — tools from the organization's MCP servers, prefixed with the connection's name."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.mcp.capability) needs those models loaded.
