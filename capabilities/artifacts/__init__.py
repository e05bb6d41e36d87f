"""artifacts — published applications: one self-contained HTML or Markdown page under a stable link.

`models.py` (Artifact + its versions), `access.py` (who reads and who changes one: owner, visibility,
grants through governance.object_grants), `services.py` (publish, edits, visibility, sharing),
`capability.py` (`publish_artifact`, `read_artifact`), `sandbox.py` (the opaque-origin document and its CSP),
`api.py` + `urls.py` (/api/v1/artifacts…). The console's Apps pages are console/applications.py.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # The registry reads CAPABILITY; importing it here at app loading would import models too early.
    if name == "CAPABILITY":
        from capabilities.artifacts.capability import CAPABILITY

        return CAPABILITY
    raise AttributeError(name)
