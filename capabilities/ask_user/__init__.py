"""ask_user — multiple-choice questions to the person, instead of guessing."""

from capabilities.ask_user.capability import CAPABILITY, NOBODY_TO_ASK

__all__ = ["CAPABILITY", "NOBODY_TO_ASK"]
