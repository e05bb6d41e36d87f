"""Workspaces on disk: one directory per id under `<root>/workspaces/`, its metadata and activity log.

A workspace's files are reached from here only while no command runs in it (each workspace has one lock,
held by a command for its whole life): a command's processes all die with it (jail.py), so a symlink a
command planted cannot be swapped between the check below and the open that follows it. Paths are
resolved component by component without following any symlink — a link to /etc/shadow in a workspace is
refused, never read on the host's behalf.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxd.config import Config
from sandboxd.uids import UidMap

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
ACTIVITY_KEPT = 100


class NotFound(LookupError):
    pass


class Refused(ValueError):
    pass


class Full(OSError):
    pass


@dataclass
class Workspace:
    id: str
    runtime: str
    path: Path
    opened_at: float
    last_used_at: float
    activity: deque = field(default_factory=lambda: deque(maxlen=ACTIVITY_KEPT))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    running: int = 0
    last_max_rss_kb: int = 0
    # Whose uid its commands run as (uids.py): the tenant's, or "workspace:<id>" for the service token's own.
    owner_key: str = ""
    # The host uid its commands run as and its files belong to; None when sandboxd is not root.
    uid: int | None = None

    def note(self, kind: str, **details: Any) -> None:
        self.last_used_at = time.time()
        self.activity.append({"at": self.last_used_at, "kind": kind, **details})

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "runtime": self.runtime, "opened_at": self.opened_at,
                "last_used_at": self.last_used_at, "idle_seconds": max(int(time.time() - self.last_used_at), 0),
                "running": self.running, "memory_kb": self.last_max_rss_kb}


def relative(path: str) -> str:
    """A workspace-relative POSIX path from what a client sent (`/workspace/x`, `x`, `/x`); refuses `..`."""
    if "\x00" in path:
        raise Refused("A path cannot contain a NUL byte.")
    cleaned = path.strip()
    for prefix in ("/workspace/", "/workspace"):
        if cleaned == prefix.rstrip("/") or cleaned.startswith(prefix):
            cleaned = cleaned[len(prefix):]
            break
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise Refused("A path cannot leave the workspace ('..').")
    return "/".join(parts)


class Registry:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.items: dict[str, Workspace] = {}
        config.workspaces.mkdir(parents=True, exist_ok=True)
        self.root = os.geteuid() == 0
        if self.root:
            # Searchable, not listable: a command never sees this folder (only its own workspace is mounted),
            # and this keeps one tenant's uid from listing the others' names should a wall ever fail.
            os.chmod(config.workspaces, 0o711)  # noqa: S103 - o+x only: bwrap, as the tenant's uid, must reach its own
        self.uids = UidMap(config.root / "uids.json", config.uid_base, config.uid_count)
        self._load()

    # -------------------------------------------------------------- lifecycle

    def _meta_path(self, workspace_id: str) -> Path:
        return self.config.workspaces / f"{workspace_id}.json"

    def _load(self) -> None:
        for meta in self.config.workspaces.glob("*.json"):
            try:
                data = json.loads(meta.read_text())
            except (OSError, ValueError):
                continue
            workspace_id = str(data.get("id", ""))
            folder = self.config.workspaces / workspace_id
            if ID_PATTERN.match(workspace_id) and folder.is_dir():
                # A workspace from before uids per tenant has no owner key: it gets one of its own.
                owner_key = str(data.get("owner") or f"workspace:{workspace_id}")
                workspace = Workspace(
                    id=workspace_id, runtime=str(data.get("runtime", "")), path=folder,
                    opened_at=float(data.get("opened_at", time.time())),
                    last_used_at=float(data.get("last_used_at", time.time())), owner_key=owner_key,
                    uid=self.uids.uid(owner_key) if self.root else None)
                self.items[workspace_id] = workspace
                if workspace.uid is not None and os.lstat(folder).st_uid != workspace.uid:
                    self._own_tree(workspace)  # left by a sandboxd that ran every command as one uid

    def _save(self, workspace: Workspace) -> None:
        self._meta_path(workspace.id).write_text(json.dumps(
            {"id": workspace.id, "runtime": workspace.runtime, "opened_at": workspace.opened_at,
             "last_used_at": workspace.last_used_at, "owner": workspace.owner_key}))

    def _own(self, workspace: Workspace, path: Path, *, directory: bool) -> None:
        """Files sandboxd writes belong to the workspace's uid, so its commands can change them and no other
        tenant's uid can open them; the workspace's own folder is its owner's alone (0700)."""
        if workspace.uid is not None:
            os.chown(path, workspace.uid, workspace.uid, follow_symlinks=False)
        if not os.path.islink(path):
            os.chmod(path, (0o700 if path == workspace.path else 0o755) if directory else 0o644)

    def _own_tree(self, workspace: Workspace) -> None:
        self._own(workspace, workspace.path, directory=True)
        for folder, dirs, files in os.walk(workspace.path, followlinks=False):
            for name in dirs:
                self._own(workspace, Path(folder, name), directory=True)
            for name in files:
                path = Path(folder, name)
                if workspace.uid is not None:
                    os.chown(path, workspace.uid, workspace.uid, follow_symlinks=False)

    def open(self, workspace_id: str, runtime: str, owner_key: str = "") -> tuple[Workspace, bool]:
        if not ID_PATTERN.match(workspace_id):
            raise Refused("A workspace id is 1-128 letters, digits, '-' or '_'.")
        if runtime not in self.config.runtimes:
            known = ", ".join(sorted(self.config.runtimes)) or "none"
            raise Refused(f"This service has no runtime {runtime!r} (it offers: {known}).")
        existing = self.items.get(workspace_id)
        if existing is not None:
            existing.runtime = runtime
            existing.note("attached", runtime=runtime)
            self._save(existing)
            return existing, False
        folder = self.config.workspaces / workspace_id
        folder.mkdir(exist_ok=True)
        now = time.time()
        owner_key = owner_key or f"workspace:{workspace_id}"
        workspace = Workspace(id=workspace_id, runtime=runtime, path=folder, opened_at=now, last_used_at=now,
                              owner_key=owner_key, uid=self.uids.uid(owner_key) if self.root else None)
        self._own(workspace, folder, directory=True)
        workspace.note("opened", runtime=runtime)
        self.items[workspace_id] = workspace
        self._save(workspace)
        return workspace, True

    def get(self, workspace_id: str) -> Workspace:
        workspace = self.items.get(workspace_id) if ID_PATTERN.match(workspace_id or "") else None
        if workspace is None:
            raise NotFound(f"No open workspace {workspace_id!r}.")
        return workspace

    def close(self, workspace_id: str) -> None:
        workspace = self.get(workspace_id)
        del self.items[workspace_id]
        shutil.rmtree(workspace.path, ignore_errors=True)
        self._meta_path(workspace_id).unlink(missing_ok=True)

    def idle(self) -> list[str]:
        cutoff = time.time() - self.config.idle_close_seconds
        return [w.id for w in self.items.values() if w.last_used_at < cutoff and not w.running]

    # -------------------------------------------------------------- files (call with the workspace's lock held)

    def _resolve(self, workspace: Workspace, path: str, *, final_may_be_link: bool = False) -> Path:
        rel = relative(path)
        current = workspace.path
        parts = rel.split("/") if rel else []
        for index, part in enumerate(parts):
            current = current / part
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                return workspace.path.joinpath(*parts)
            last = index == len(parts) - 1
            if stat.S_ISLNK(info.st_mode) and not (last and final_may_be_link):
                raise Refused(f"{rel} goes through a symbolic link; links are not followed here.")
        return current

    def manifest(self, workspace: Workspace, *, with_hash: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        root = workspace.path
        for folder, _dirs, files in os.walk(root, followlinks=False):
            for name in files:
                full = os.path.join(folder, name)
                try:
                    info = os.lstat(full)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                item: dict[str, Any] = {"path": os.path.relpath(full, root), "size": info.st_size,
                                        "mtime_ns": info.st_mtime_ns}
                if with_hash and info.st_size <= self.config.read_bytes:
                    item["sha256"] = _sha256(full)
                out.append(item)
        out.sort(key=lambda i: i["path"])
        return out

    def read(self, workspace: Workspace, path: str) -> bytes:
        target = self._resolve(workspace, path)
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise NotFound(f"No file {relative(path)!r} in the workspace.") from None
        except OSError as exc:
            raise Refused(f"{relative(path)} cannot be read: {exc.strerror}.") from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise Refused(f"{relative(path)} is not a regular file.")
            data = handle.read(self.config.read_bytes + 1)
        if len(data) > self.config.read_bytes:
            raise Refused(f"{relative(path)} is larger than the {self.config.read_bytes:,} bytes a read returns.")
        return data

    def write(self, workspace: Workspace, path: str, data: bytes) -> None:
        rel = relative(path)
        if not rel:
            raise Refused("The workspace itself is a folder, not a file.")
        from sandboxd.jail import disk_usage

        target = self._resolve(workspace, rel)
        previous = os.lstat(target).st_size if target.exists() else 0
        if disk_usage(workspace.path) - previous + len(data) > self.config.disk_bytes:
            raise Full(f"The workspace would pass its {self.config.disk_bytes:,}-byte disk cap.")
        folder = workspace.path
        for part in rel.split("/")[:-1]:
            folder = folder / part
            if not folder.exists():
                folder.mkdir()
                self._own(workspace, folder, directory=True)
            elif not folder.is_dir():
                raise Refused(f"{rel}: {folder.relative_to(workspace.path)} is a file, not a folder.")
        if target.is_dir():
            raise Refused(f"{rel} is a folder.")
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self._own(workspace, target, directory=False)

    def remove(self, workspace: Workspace, path: str) -> None:
        rel = relative(path)
        if not rel:
            raise Refused("Refusing to remove the whole workspace; close it instead.")
        target = self._resolve(workspace, rel, final_may_be_link=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        else:
            raise NotFound(f"No file {rel!r} in the workspace.")


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(paths created or modified, paths deleted) between two manifests."""
    old = {item["path"]: (item["size"], item["mtime_ns"]) for item in before}
    new = {item["path"]: (item["size"], item["mtime_ns"]) for item in after}
    changed = sorted(path for path, sig in new.items() if old.get(path) != sig)
    deleted = sorted(path for path in old if path not in new)
    return changed, deleted
