"""sandbox — a workspace of files that survives between turns (backend state: this database)."""

from capabilities.sandbox.capability import CAPABILITY

__all__ = ["CAPABILITY"]
