"""The organization's media store: pydantic-ai-harness's `MediaStore` protocol on default_storage (MEDIA_ROOT,
or S3/MinIO through django-storages), as media keeps its files.

Content-addressed and tenant-scoped. A blob lives at `media/<organization>/<conversation>/<sha256>`: the URI
(`media+sha256://<hex>`) is only a hash, so two organizations holding the same image compute the same URI, and
the store is built for one organization and one conversation from the run — never from the URI. Another
organization's reference therefore resolves to nothing here even when its hash is known (the bytes would have
to be this conversation's own). The conversation is the lifecycle: a hash does not record who still refers
to it, so the conversation's prefix goes with the conversation. A run outside a conversation keeps its
blobs under `run-<run id>`.

The store mints no public URL (`public_url` is always None): a URL a model provider can fetch, anyone can.
`on_conversation_delete` is the pre_delete receiver (of agents.Conversation) that sends the folder with its
conversation.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import posixpath
from collections.abc import Mapping
from types import MappingProxyType

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pydantic_ai_harness.media import MediaContext, media_uri_for, parse_media_uri

from agenticos.tenancy import parse_uuid

logger = logging.getLogger(__name__)

PREFIX = "media/"
_NO_CONTEXT = MediaContext()
_NO_METADATA: Mapping[str, str] = MappingProxyType({})


def scope_for(*, conversation_id: object | None, run_id: object) -> str:
    """The lifecycle folder: the conversation's, or the run's own when it has none."""
    return str(conversation_id) if conversation_id else f"run-{run_id}"


class OrganizationMediaStore:
    """`MediaStore` for one organization's conversation (or conversation-less run)."""

    def __init__(self, organization_id: object, scope: str) -> None:
        org = parse_uuid(str(organization_id) if organization_id else None)
        if org is None:
            raise ValueError("a media store needs the organization's id")
        if not scope or "/" in scope or scope in (".", ".."):
            raise ValueError("a media store needs a plain scope name")
        self.folder = f"{PREFIX}{org}/{scope}"

    def path_for(self, uri: str) -> str:
        # parse_media_uri accepts only 64 lowercase hex digits: nothing else reaches a storage path.
        return posixpath.join(self.folder, parse_media_uri(uri))

    # ------------------------------------------------------------- sync core (storage IO)

    def put_sync(self, data: bytes) -> str:
        uri = media_uri_for(data)
        path = self.path_for(uri)
        if not default_storage.exists(path):  # content-addressed: the same bytes are written once
            saved = default_storage.save(path, ContentFile(data))
            if saved != path:  # a concurrent writer got there first and storage picked another name
                default_storage.delete(saved)
        return uri

    def get_sync(self, uri: str) -> bytes:
        path = self.path_for(uri)
        if not default_storage.exists(path):
            raise FileNotFoundError(f"media not found: {uri}")
        with default_storage.open(path, "rb") as handle:
            data = handle.read()
        if hashlib.sha256(data).hexdigest() != parse_media_uri(uri):
            raise ValueError(f"stored media does not match its reference: {uri}")
        return bytes(data)

    def exists_sync(self, uri: str) -> bool:
        return bool(default_storage.exists(self.path_for(uri)))

    # ------------------------------------------------------------- the harness's protocol

    async def put(self, data: bytes, *, context: MediaContext = _NO_CONTEXT) -> str:
        return await asyncio.to_thread(self.put_sync, data)

    async def get(self, uri: str, *, context: MediaContext = _NO_CONTEXT) -> bytes:
        return await asyncio.to_thread(self.get_sync, uri)

    async def exists(self, uri: str, *, context: MediaContext = _NO_CONTEXT) -> bool:
        return await asyncio.to_thread(self.exists_sync, uri)

    async def public_url(self, uri: str, *, context: MediaContext = _NO_CONTEXT) -> str | None:
        return None

    async def get_metadata(self, uri: str, *, context: MediaContext = _NO_CONTEXT) -> Mapping[str, str]:
        if not await self.exists(uri):
            raise FileNotFoundError(f"media not found: {uri}")
        return _NO_METADATA  # nothing is kept beside the bytes: the history holds each part's own fields


def folder_files(organization_id: object, scope: str) -> list[str]:
    """Every blob stored for one organization's conversation (or conversation-less run)."""
    folder = OrganizationMediaStore(organization_id, scope).folder
    try:
        _, files = default_storage.listdir(folder)
    except FileNotFoundError:  # nothing was ever offloaded here (a local folder that was never made)
        return []
    return [posixpath.join(folder, name) for name in files if _is_digest(name)]


def _is_digest(name: str) -> bool:
    try:
        parse_media_uri(f"media+sha256://{name}")
    except ValueError:
        return False
    return True


def on_conversation_delete(sender: object, instance: object, **kwargs: object) -> None:
    """pre_delete of agents.Conversation: its media folder goes with it — each blob queued as a
    `governance.PendingFileRemoval` in the deleting transaction, removed by the same sweep as attachments (a
    storage that refuses keeps the row for the next sweep)."""
    from governance import retention
    from governance.models import PendingFileRemoval

    organization_id = getattr(instance, "organization_id", None)
    conversation_id = getattr(instance, "pk", None)
    if not organization_id or not conversation_id:
        return
    paths = folder_files(organization_id, str(conversation_id))
    if paths:
        PendingFileRemoval.objects.bulk_create([
            PendingFileRemoval(organization_id=organization_id, path=path, reason="conversation_deleted")
            for path in paths])
        retention._kick_after_commit()
