"""The full content behind a spilled tool result's handle, kept with its run.

The app is `capabilities` (its migrations): capabilities/models.py imports these so Django registers them.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class SpilledOutput(models.Model):
    """The full content behind a spilled tool result's handle, kept with its run so a handle still reads after
    the run parks for an approval or an answer and resumes in another worker. Deleted with the run, and
    swept once the run has finished (`capabilities.tasks.sweep_spilled_outputs`)."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="+")
    handle = models.CharField(max_length=500)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "handle"], name="spilled_output_handle_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.handle} ({self.size} bytes)"
