"""code_execution — compute with a small Python program in a locked-down subprocess."""

from capabilities.code_execution.capability import CAPABILITY

__all__ = ["CAPABILITY"]
