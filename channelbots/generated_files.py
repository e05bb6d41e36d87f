"""Generated files out to a chat: the images, speech clips and video clips a run made, posted in its thread.

A channel bot's reply posts what the run wrote in its workspace (`channelbots.files_out`); a generated file
lives in the store instead, and reaches the workspace only when the run has a stored one. So a file that landed
in `/workspace/output` (`workspace_path` set) is left to `files_out`, which posts it with the run's other new
files, and every other file the run made is uploaded here: at most `MAX_FILES` files of the platform's size
limit, with their stored type; the rest are named in the answer (they stay in the console).
"""

from __future__ import annotations

import logging
from typing import Any

from media import store

logger = logging.getLogger(__name__)

MAX_FILES = 3


def deliver(client: Any, chat_id: str, reply_to: str, run_id: Any) -> list[str]:
    """Upload this run's generated files that `files_out` does not post; returns sentences for the answer
    about those that were not sent. `client` is a `channelbots.platforms.PlatformClient`. Sync (ORM, storage)."""
    from channelbots.platforms import MAX_CHAT_FILE_BYTES, PlatformError

    held: list[str] = []
    sent = 0
    for media in store.of_run(run_id):
        if media.workspace_path:
            continue  # posted (or named) with the workspace's files
        if media.size > MAX_CHAT_FILE_BYTES:
            held.append(f"{media.name} (over the {MAX_CHAT_FILE_BYTES // (1024 * 1024)} MB limit)")
            continue
        if sent >= MAX_FILES:
            held.append(media.name)
            continue
        try:
            client.upload(chat_id, media.name, store.read(media), media.media_type, reply_to=reply_to)
        except (PlatformError, OSError) as exc:
            logger.warning("run %s: uploading generated %s failed: %s", run_id, media.filename, type(exc).__name__)
            held.append(f"{media.name} (the upload failed)")
            continue
        sent += 1
    if not held:
        return []
    return ["Also made, not attached here (open them in the web console): " + "; ".join(held) + "."]
