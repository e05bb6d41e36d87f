"""thinking — ask the model to reason before answering."""

from capabilities.thinking.capability import CAPABILITY

__all__ = ["CAPABILITY"]
