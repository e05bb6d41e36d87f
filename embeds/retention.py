"""A hosted page's uploaded files hang off the messages they were sent with, in rows of their own (EmbedFile):
when governance.retention deletes messages it asks this finder for their files (registered in EmbedsConfig.ready())."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models

from embeds.models import EmbedFile


def page_files(messages: models.QuerySet) -> Iterable[tuple[Any, str]]:
    """(organization_id, path) of every hosted-page file sent with `messages`; their rows go now (the caller
    queues the stored files for removal in the same transaction)."""
    rows = EmbedFile.objects.filter(message__in=messages.values("pk"))
    found = list(rows.values_list("organization_id", "path"))
    rows.delete()
    return found
