"""planning — a checklist the model keeps for itself, owned by the conversation."""

from capabilities.planning.capability import CAPABILITY
from capabilities.planning.store import areset_in_progress_steps, reset_in_progress_steps, stored_plan

__all__ = ["CAPABILITY", "areset_in_progress_steps", "reset_in_progress_steps", "stored_plan"]
