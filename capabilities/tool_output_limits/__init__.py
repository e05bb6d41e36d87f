"""tool_output_limits — reduce an oversized tool return once, when it is produced (pydantic-ai-harness)."""

from capabilities.tool_output_limits.capability import CAPABILITY, limits_for_run, run_store

__all__ = ["CAPABILITY", "limits_for_run", "run_store"]
