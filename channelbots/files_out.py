"""Files out: what the agent wrote in its workspace this turn goes to the chat with the answer.

"This turn" is the paths the run created (`workspaces.store.outputs`): not `/workspace/uploads`
(the person's own files), not `/workspace/skills` (know-how the platform materialized), not a file it
only overwrote (it existed before the turn — re-posting a script on every iteration would fill the channel),
and not one the agent already posted this turn with `send_channel_file`.
At most `MAX_FILES` files of `MAX_BYTES` each, with the type their name implies; the rest are named in the
answer and stay in the workspace. If the workspace cannot be read, nothing is posted.
"""

from __future__ import annotations

import logging
import posixpath
from typing import Any

from django.db import DatabaseError

from channelbots.platforms import MAX_CHAT_FILE_BYTES as MAX_BYTES
from channelbots.platforms import PlatformClient, PlatformError

logger = logging.getLogger(__name__)

MAX_FILES = 3


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{max(1, n // 1024)} KB"


def sent_by_tool(run_id: Any) -> set[str]:
    """Workspace paths this run posted itself with send_channel_file (channel_tools)."""
    from agents.models import ToolCall
    from capabilities.channel_tools.capability import SENT
    from workspaces import store

    calls = ToolCall.objects.filter(run_id=run_id, capability_id="channel_tools", status=ToolCall.Status.OK)
    return {store.normal(str(args["path"])) for args, result in calls.values_list("args", "result")
            if isinstance(args, dict) and args.get("path") and str(result or "").startswith(SENT)}


def deliver(client: PlatformClient, chat_id: str, reply_to: str, run_id: Any) -> list[str]:
    """Upload this run's new workspace files; returns sentences for the answer about what was not sent."""
    from workspaces import store

    try:
        already = sent_by_tool(run_id)
        files = [f for f in store.outputs(str(run_id)) if f.path not in already]
    except DatabaseError:
        logger.warning("run %s: the workspace could not be read, so no files were posted", run_id)
        return []
    notes: list[str] = []
    sent = 0
    held: list[str] = []
    for item in files:
        name = posixpath.basename(item.path)
        where = item.path
        if item.size > MAX_BYTES:
            held.append(f"{where} ({_size(item.size)}, over the {MAX_BYTES // (1024 * 1024)} MB limit)")
            continue
        if sent >= MAX_FILES:
            held.append(where)
            continue
        try:
            client.upload(chat_id, name, bytes(item.data), store.mime_for(name), reply_to=reply_to)
        except PlatformError as exc:
            logger.warning("run %s: uploading %s failed: %s", run_id, where, exc)
            held.append(f"{where} (the upload failed)")
            continue
        sent += 1
    if held:
        notes.append("Also in the workspace, not attached here: " + "; ".join(held) + ".")
    return notes
