"""visuals — drawings in the conversation (`draw`, `revise_visual`, `read_visual`), in the applications'
sandbox (capabilities/artifacts/sandbox.py), checked by the watching console (`reports.py`)."""

from capabilities.visuals.capability import CAPABILITY

__all__ = ["CAPABILITY"]
