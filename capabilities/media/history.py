"""Both directions of media externalization for a stored message history, with pydantic-ai-harness's walkers
(`externalize_media` / `restore_media`) on the organization's store (store.py).

The runner calls these from its DB threads (sync code, no event loop there), so each walk runs in a loop of
its own. Both fail softly (catalog "Imágenes fuera del historial"): a store that cannot take the bytes leaves
the history inline, as it was, and the failure is logged; a reference that cannot be read back is logged and
becomes a line saying so — a marker nobody restores is an image handed to the model in a language it does
not read, and losing the whole history over one blob is worse.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai_harness.media import MediaContext, externalize_media, restore_media

from capabilities.media.store import OrganizationMediaStore, scope_for

logger = logging.getLogger(__name__)

URI_SCHEME = "media+sha256://"
UNREADABLE = "[A file of this conversation could not be read back from storage.]"
_UNREADABLE_BYTES = UNREADABLE.encode()
_UNREADABLE_B64 = {base64.b64encode(_UNREADABLE_BYTES).decode(), base64.urlsafe_b64encode(_UNREADABLE_BYTES).decode()}

T = TypeVar("T")


def _walk(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def store_for(*, organization_id: object, conversation_id: object | None, run_id: object) -> OrganizationMediaStore:
    return OrganizationMediaStore(organization_id, scope_for(conversation_id=conversation_id, run_id=run_id))


def offload(messages: list[ModelMessage], *, threshold_bytes: int | None, organization_id: object,
            conversation_id: object | None, run_id: object) -> tuple[Any, bool]:
    """The history as the JSON tree to store, and whether the walker wrote it: with every part of
    `threshold_bytes` or more moved to the store behind a `media+sha256://` reference, or whole (False) when the
    run has no media binding (None) or the store failed. Only a tree the walker wrote is read back with
    `restore`: the walker escapes caller data shaped like its markers, which a tree stored whole never had."""
    return offload_tree(ModelMessagesTypeAdapter.dump_python(messages, mode="json"), threshold_bytes=threshold_bytes,
                        organization_id=organization_id, conversation_id=conversation_id, run_id=run_id)


def offload_tree(tree: Any, *, threshold_bytes: int | None, organization_id: object, conversation_id: object | None,
                 run_id: object) -> tuple[Any, bool]:
    """`offload` of a history already dumped to its JSON tree."""
    if threshold_bytes is None:
        return tree, False
    try:
        store = store_for(organization_id=organization_id, conversation_id=conversation_id, run_id=run_id)
        return _walk(externalize_media(tree, media_store=store, threshold_bytes=threshold_bytes)), True
    except Exception:
        logger.warning("run %s: its history's media could not be stored; the history is kept inline", run_id,
                       exc_info=True)
        return tree, False


def has_references(node: Any) -> bool:
    if isinstance(node, str):
        return node.startswith(URI_SCHEME)
    if isinstance(node, list):
        return any(has_references(item) for item in node)
    if isinstance(node, dict):
        return any(has_references(value) for value in node.values())
    return False


def restore(tree: Any, *, organization_id: object, conversation_id: object | None, run_id: object) -> Any:
    """The stored JSON tree with every reference put back, from this organization's store only (the
    organization and conversation come from the run, never from the reference). Called for every history
    `offload` wrote, whether the agent is still bound or not: one whose agent lost the binding since still
    holds references."""
    if not has_references(tree):
        return tree
    store = store_for(organization_id=organization_id, conversation_id=conversation_id, run_id=run_id)
    try:
        return _walk(restore_media(tree, media_store=store))
    except Exception:
        logger.warning("run %s: a media reference in its history could not be read back", run_id, exc_info=True)
    lenient = _Lenient(store)
    return _unreadable_to_text(_walk(restore_media(tree, media_store=lenient)))


class _Lenient:
    """The store, except that a reference it cannot read comes back as the UNREADABLE line's bytes."""

    def __init__(self, store: OrganizationMediaStore) -> None:
        self.store = store

    async def get(self, uri: str, *, context: MediaContext | None = None) -> bytes:
        try:
            return await self.store.get(uri)
        except Exception:
            return _UNREADABLE_BYTES

    async def put(self, data: bytes, *, context: MediaContext | None = None) -> str:
        return await self.store.put(data)

    async def exists(self, uri: str, *, context: MediaContext | None = None) -> bool:
        return await self.store.exists(uri)

    async def public_url(self, uri: str, *, context: MediaContext | None = None) -> str | None:
        return None

    async def get_metadata(self, uri: str, *, context: MediaContext | None = None) -> Mapping[str, str]:
        return await self.store.get_metadata(uri)


def _unreadable_to_text(node: Any) -> Any:
    """A binary part whose bytes could not be read becomes the UNREADABLE line (a text marker already reads
    as that line): an image of those bytes would be a broken file sent to the provider."""
    if isinstance(node, list):
        return [_unreadable_to_text(item) for item in node]
    if isinstance(node, dict):
        if node.get("kind") == "binary" and node.get("data") in _UNREADABLE_B64:
            return UNREADABLE
        return {key: _unreadable_to_text(value) for key, value in node.items()}
    return node
