"""Where a stranger's bytes are stored: logos and hosted-page uploads. Types are sniffed (agenticos.uploads), never
trusted."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings

from agenticos import images

# Logos are images people upload for others to see: one set of rules for all of them.
LOGO_MAX_BYTES = images.MAX_BYTES
sniff_image = images.sniff
store = images.store
remove_stored = images.remove


def logo_path_for(embed_id: object, ext: str) -> str:
    # The name is minted from the sniffed type: never the caller's file name.
    return f"embeds/{embed_id}/logo.{ext}"


def upload_path_for(embed_id: object, ext: str) -> str:
    return f"embeds/{embed_id}/files/{uuid.uuid4().hex}.{ext}"


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)
