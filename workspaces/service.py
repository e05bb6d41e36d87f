"""Backend `service`: a stored workspace with a shell on a sandbox service (sandboxd).

The files people see stay where stored workspaces keep them — one row per path in this database — so the
Files panel, a channel's files out and `session_scope` work exactly as on `state`. The sandbox's own
directory is a working copy of them: the first command of a run brings it up to date (every stored file
whose content differs is written there), a file tool's write or removal goes to both, and after each
command the files it created, changed or deleted come back (a file past the stored workspace's cap stays
only in the sandbox, and the command's result says so). What a command installs outside /workspace is gone
with the command: only the workspace is writable there.

What makes a command safe is sandboxd's isolation (bubblewrap: no network, the workspace the only
writable tree, limits, timeout), not this module. The command text is still checked here for credential
and system paths (pydantic-ai-backend's guard, with the spec's rules, before `run` is reached) — defence
in depth, since a shell reaches a file in ways string inspection cannot see.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from pydantic_ai.workspaces import (
    CommandResult,
    WorkspaceCommand,
    WorkspaceTimeoutError,
    WorkspaceUnavailableError,
)

from workspaces import store
from workspaces.client import SandboxdClient, SandboxdError
from workspaces.models import WorkspaceFile

log = logging.getLogger(__name__)
PREFIX = store.WORKDIR + "/"


def remote_path(path: str) -> str | None:
    """The sandbox-relative path of a stored path, or None when it lies outside /workspace."""
    full = store.normal(path)
    return full[len(PREFIX):] if full.startswith(PREFIX) else None


def _written_since(workspace_id: str, mark: Any) -> dict[str, bytes]:
    if mark is None:
        return {}
    return {path: bytes(data) for path, data in WorkspaceFile.objects.filter(
        workspace_id=workspace_id, is_dir=False, path__startswith=PREFIX, updated_at__gt=mark,
    ).values_list("path", "data")}


def _stored_files(workspace_id: str) -> dict[str, bytes]:
    return {path: bytes(data) for path, data in WorkspaceFile.objects.filter(
        workspace_id=workspace_id, is_dir=False, path__startswith=PREFIX).values_list("path", "data")}


@dataclass
class ServiceWorkspaceBackend(store.DatabaseWorkspaceBackend):
    """Files from this database (the inherited operations), commands on sandboxd (`run`)."""

    client: SandboxdClient | None = field(default=None, repr=False)
    runtime: str | None = None
    _synced: bool = field(default=False, repr=False)
    # When the sandbox last matched the stored files: rows written after it by something other than this
    # backend (a generated image, speech or video landing in /workspace/output) are copied before a command.
    _synced_mark: Any = field(default=None, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def remote_id(self) -> str:
        return str(self.workspace_id).replace("-", "")

    def _sandbox(self) -> SandboxdClient:
        if self.client is None:
            raise WorkspaceUnavailableError("this workspace has no sandbox service")
        return self.client

    async def _ensure(self) -> None:
        """Open the sandbox workspace and bring its files up to date with the stored ones (once per run; after
        that only the rows written since, by anything but this backend's own write-through)."""
        if self._synced:
            await self._catch_up()
            return
        async with self._lock:
            if self._synced:
                return
            sandbox = self._sandbox()
            self._synced_mark = timezone.now()
            try:
                await sandbox.open(self.remote_id, self.runtime)
                present = {item["path"]: item.get("sha256") for item in
                           await sandbox.files(self.remote_id, with_hash=True)}
                stored = await sync_to_async(_stored_files)(self.workspace_id)
                for path, data in stored.items():
                    rel = remote_path(path)
                    if rel is not None and present.get(rel) != hashlib.sha256(data).hexdigest():
                        await sandbox.write(self.remote_id, rel, data)
            except SandboxdError as exc:
                raise WorkspaceUnavailableError(f"The sandbox service is unavailable: {exc}") from None
            self._synced = True

    async def _catch_up(self) -> None:
        mark = timezone.now()
        written = await sync_to_async(_written_since)(self.workspace_id, self._synced_mark)
        try:
            for path, data in written.items():
                rel = remote_path(path)
                if rel is not None:
                    await self._sandbox().write(self.remote_id, rel, data)
        except SandboxdError:
            self._synced = False  # the next command copies everything over
            return
        self._synced_mark = mark

    # ------------------------------------------------------------------ file tools write through

    async def write_bytes(self, path: str, data: bytes) -> None:
        await super().write_bytes(path, data)
        rel = remote_path(path)
        if self._synced and rel is not None:
            try:
                await self._sandbox().write(self.remote_id, rel, bytes(data))
            except SandboxdError:
                self._synced = False  # the next command copies it over

    async def remove(self, path: str) -> None:
        await super().remove(path)
        rel = remote_path(path)
        if self._synced and rel:
            try:
                await self._sandbox().remove(self.remote_id, rel)
            except SandboxdError as exc:
                if exc.status != 404:
                    self._synced = False

    async def realpath(self, path: str) -> str:
        """Stored files hold no symbolic links, so a path is its own real path (without this, pydantic-ai
        would ask the sandbox's shell with `readlink` before every file operation). A link a command makes
        is never brought back: sandboxd lists regular files only."""
        return store.normal(path)

    # ------------------------------------------------------------------ commands

    async def run(self, command: WorkspaceCommand, *, shell: bool = False, env: Mapping[str, str] | None = None,
                  timeout: float | None = None) -> CommandResult:
        import shlex

        if shell and not isinstance(command, str):
            raise TypeError("a shell command is a string")
        if not shell and isinstance(command, str):
            raise TypeError("an argv command is a sequence of strings")
        line = command if isinstance(command, str) else shlex.join(command)
        ceiling = float(settings.SANDBOX_EXECUTE_MAX_TIMEOUT)
        seconds = min(float(timeout), ceiling) if timeout else min(60.0, ceiling)
        await self._ensure()
        try:
            answer = await self._sandbox().execute(self.remote_id, line, timeout=seconds, env=dict(env or {}))
        except SandboxdError as exc:
            if exc.status == 404:  # sandboxd lost the workspace (restarted, closed): open it again next time
                self._synced = False
            raise WorkspaceUnavailableError(f"The sandbox service could not run the command: {exc}") from None
        notes = await self._bring_back(answer)
        stdout, stderr = self._capped(answer, notes)
        if answer.get("timed_out"):
            raise WorkspaceTimeoutError(f"the command ran past its {seconds:g}-second timeout and was stopped",
                                        stdout=stdout, stderr=stderr)
        if answer.get("disk_full"):
            stderr += "\n[sandbox] The command was stopped: the workspace passed its disk cap."
        return CommandResult(exit_code=int(answer.get("exit_code", 1)), stdout=stdout, stderr=stderr)

    def _capped(self, answer: dict[str, Any], notes: list[str]) -> tuple[str, str]:
        cap = int(settings.SANDBOX_EXECUTE_OUTPUT_CHARS)
        stdout, stderr = str(answer.get("stdout") or ""), str(answer.get("stderr") or "")
        lost = int(answer.get("stdout_truncated") or 0) + int(answer.get("stderr_truncated") or 0)
        if len(stdout) + len(stderr) > cap:
            lost += len(stdout) + len(stderr) - cap
            stderr = stderr[: max(cap // 4, cap - len(stdout))]
            stdout = stdout[: max(cap - len(stderr), 0)]
        if lost:
            notes.append(f"{lost:,} more characters of output were not kept.")
        if notes:
            stderr = (stderr + "\n" if stderr else "") + "\n".join(f"[sandbox] {note}" for note in notes)
        return stdout, stderr

    async def _bring_back(self, answer: dict[str, Any]) -> list[str]:
        """Copy what the command created or changed into the stored workspace; drop what it deleted."""
        sandbox = self._sandbox()
        notes: list[str] = []
        not_kept: list[str] = []
        for rel in answer.get("changed") or []:
            path = PREFIX + str(rel)
            try:
                data = await sandbox.read(self.remote_id, str(rel))
            except SandboxdError:
                not_kept.append(str(rel))  # a link, or past the service's read size: it stays in the sandbox
                continue
            try:
                await store.DatabaseWorkspaceBackend.write_bytes(self, path, data)
            except (OSError, ValueError):
                not_kept.append(str(rel))
        for rel in answer.get("deleted") or []:
            try:
                await store.DatabaseWorkspaceBackend.remove(self, PREFIX + str(rel))
            except (FileNotFoundError, ValueError):
                continue
        if not_kept:
            shown = ", ".join(not_kept[:10]) + (f" and {len(not_kept) - 10} more" if len(not_kept) > 10 else "")
            notes.append(f"Not kept with your files (the workspace is full, or they are links or too large): "
                         f"{shown}. They exist in the sandbox for now.")
        return notes
