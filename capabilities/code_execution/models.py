"""The host uid each organization's run_python programs run as.

The app is `capabilities` (its migrations): capabilities/models.py imports these so Django registers them.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class JailIdentity(models.Model):
    """The host uid an organization's `run_python` programs run as: RUN_PYTHON_UID_BASE + this row's id.

    One row per organization, made by its first program; never deleted and no foreign key on purpose: a uid is
    never given to another organization, even after this one is gone (capabilities/code_execution/identity.py).
    """

    id = models.BigAutoField(primary_key=True)
    organization_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.organization_id} → +{self.id}"
