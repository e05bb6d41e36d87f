"""charts — draw numbers the model already has."""

from capabilities.charts.capability import CAPABILITY

__all__ = ["CAPABILITY"]
