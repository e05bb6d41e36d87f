"""tool_output_limits — reduce an oversized tool return once, when it is produced (pydantic-ai-harness)."""

# Nothing is imported here: capabilities/models.py imports this package's models while Django loads the apps, and
# the capability (registry.BUILTIN: capabilities.tool_output_limits.capability) needs those models loaded.
