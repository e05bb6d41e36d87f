"""Background tasks: a command started in a workspace's jail that outlives the request starting it (a coding
agent's harness runs for minutes, past a command's `max_timeout`), read while it runs and stopped on demand.

- Its stdout goes to a file sandboxd keeps outside the workspace (`<root>/tasks/<id>/out`), read from an offset
  (GET …/tasks/{task}?offset=): the platform follows the event stream without reaching into the workspace while
  something inside could change it. The tail of its stderr is kept beside it.
- It holds the workspace's lock for its whole life, as a command does, so no file is read or written on the
  host's behalf while a process inside could swap a path under the check; the files it changed come with its end.
- The same jail and limits as a command; its wall-clock timeout (at most SANDBOXD_MAX_TASK_TIMEOUT) and a stop
  kill its whole process group. One task at a time per workspace.
- Egress: none, unless it names upstreams on the operator's SANDBOXD_EGRESS_ALLOW (egress.py).
- A private home (`home_files`): a folder of the task's own outside the workspace (`<root>/tasks/<id>/home`, the
  workspace's uid's alone, 0700), seeded with the files the caller sends and mounted read-write at `/home/task`
  in the task's jail only — a sign-in a coding CLI reads (Codex's `auth.json` in its CODEX_HOME). Nothing else
  mounts it: a command or a file read in the same workspace, and every other workspace's jail, never see it, and
  the file API only reaches inside the workspace. When the task ends, however it ends, the seeded files that
  changed (a CLI that refreshed its tokens rewrote them) are read back — regular files only, never through a link
  the task left — and the folder is removed. What changed is answered in the finished task's state
  (`home_changed`) for `HOME_KEPT_SECONDS`, in memory only, so the caller can seal it again; then it is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandboxd import jail
from sandboxd.config import Config, Runtime
from sandboxd.egress import Egress
from sandboxd.workspaces import Refused, Registry, Workspace, changes

WATCH_SECONDS = 0.25
STDERR_TAIL = 8192
READ_CAP = 1024 * 1024
HOME_MOUNT = "/home/task"
HOME_FILE_CAP = 64 * 1024
HOME_KEPT_SECONDS = 600


class Busy(RuntimeError):
    pass


@dataclass
class Task:
    id: str
    workspace_id: str
    folder: Path
    timeout: float
    started: float = field(default_factory=time.monotonic)
    process: subprocess.Popen | None = None
    exit_code: int | None = None
    timed_out: bool = False
    stopped: bool = False
    disk_full: bool = False
    disk_ceiling: int = 0
    duration_ms: int = 0
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # The private home's seeded files (name → what was sent) while it runs; what changed once it ended.
    home_sent: dict[str, bytes] = field(default_factory=dict)
    home_changed: dict[str, str] = field(default_factory=dict)
    ended_at: float = 0.0

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def err(self) -> Path:
        return self.folder / "err"

    def status(self, offset: int = 0) -> dict[str, Any]:
        output, size = b"", 0
        with contextlib.suppress(OSError), open(self.out, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            stream.seek(max(min(offset, size), 0))
            output = stream.read(READ_CAP)
        stderr = b""
        with contextlib.suppress(OSError), open(self.err, "rb") as stream:
            stream.seek(max(os.fstat(stream.fileno()).st_size - STDERR_TAIL, 0))
            stderr = stream.read()
        finished = self.done.is_set()
        if finished and self.home_changed and time.monotonic() - self.ended_at > HOME_KEPT_SECONDS:
            self.home_changed = {}  # a sign-in held in memory no longer than the caller needs to seal it again
        return {
            "id": self.id, "state": "finished" if finished else "running", "exit_code": self.exit_code,
            "timed_out": self.timed_out, "stopped": self.stopped, "disk_full": self.disk_full,
            "duration_ms": self.duration_ms if finished else int((time.monotonic() - self.started) * 1000),
            "output": output.decode("utf-8", "replace"), "offset": offset + len(output), "size": size,
            "stderr_tail": stderr.decode("utf-8", "replace"),
            "changed": self.changed if finished else [], "deleted": self.deleted if finished else [],
            "home_changed": dict(self.home_changed) if finished else {},
        }


class Tasks:
    def __init__(self, config: Config, registry: Registry) -> None:
        self.config = config
        self.registry = registry
        self.items: dict[str, Task] = {}
        self.folder = config.root / "tasks"
        shutil.rmtree(self.folder, ignore_errors=True)  # a restart killed every task it had
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o755)  # noqa: S103 — the jail's uid reaches a task's egress folder

    def get(self, workspace_id: str, task_id: str) -> Task:
        from sandboxd.workspaces import NotFound

        task = self.items.get(task_id)
        if task is None or task.workspace_id != workspace_id:
            raise NotFound(f"No task {task_id[:64]!r} in this workspace.")
        return task

    def running_in(self, workspace_id: str) -> list[Task]:
        return [t for t in self.items.values() if t.workspace_id == workspace_id and not t.done.is_set()]

    async def start(self, workspace: Workspace, runtime: Runtime, command: str, *, timeout: float,
                    env: dict[str, str], upstreams: list[tuple[str, int]],
                    home_files: dict[str, str] | None = None) -> Task:
        if self.running_in(workspace.id):
            raise Busy("A task is already running in this workspace; wait for it or stop it.")
        allowed = self.config.egress_allow
        refused = [f"{h}:{p}" for h, p in upstreams if (h, p) not in allowed]
        if refused:
            raise Refused(f"Egress to {', '.join(refused)} is not on this service's allow-list "
                          "(SANDBOXD_EGRESS_ALLOW).")
        if upstreams and not shutil.which("node", path="/usr/local/bin:/usr/bin"):
            raise Refused("Egress needs node in the runtime for its relay, and this host has none.")
        task_id = secrets.token_hex(8)
        task = Task(id=task_id, workspace_id=workspace.id, folder=self.folder / task_id, timeout=timeout)
        task.folder.mkdir()
        await workspace.lock.acquire()
        try:
            owner = (workspace.uid, workspace.uid) if workspace.uid is not None else None
            binds: tuple[tuple[str, str], ...] = ()
            if home_files is not None:
                _seed_home(task, home_files, owner)
                binds = ((str(task.home), HOME_MOUNT),)
            egress = await Egress.open(task.folder / "egress", upstreams,
                                       base_hosts=(self.config.root / "etc" / "hosts").read_text(),
                                       owner=owner) if upstreams else None
            before = await asyncio.to_thread(self.registry.manifest, workspace, with_hash=False)
            used = jail.disk_usage(workspace.path)
            room = max(self.config.disk_bytes - used, 0)
            task.disk_ceiling = max(self.config.disk_bytes, used)  # over its cap already: it may only shrink (jail.run)
            cmd = jail.argv(self.config, workspace.path, runtime, egress.wrap(command) if egress else command,
                            file_bytes=min(self.config.file_bytes, room),
                            hosts=egress.hosts if egress else None, binds=egress.binds if egress else (),
                            rw_binds=binds)
            demote: dict[str, Any] = {}
            if owner is not None:
                demote = {"user": owner[0], "group": owner[1], "extra_groups": []}
            with open(task.out, "wb") as out, open(task.err, "wb") as err:
                task.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                                start_new_session=True, close_fds=True,
                                                env=jail.environment(runtime, env), **demote)
        except BaseException:
            shutil.rmtree(task.home, ignore_errors=True)
            workspace.lock.release()
            raise
        workspace.running += 1
        workspace.note("task", task=task_id, command=command[:200], timeout=timeout)
        self.items[task_id] = task
        asyncio.get_running_loop().create_task(self._supervise(task, workspace, before, egress))
        return task

    async def _supervise(self, task: Task, workspace: Workspace, before: list[dict[str, Any]],
                         egress: Egress | None) -> None:
        process = task.process
        assert process is not None
        try:
            while process.poll() is None:
                await asyncio.sleep(WATCH_SECONDS)
                if time.monotonic() - task.started >= task.timeout:
                    task.timed_out = True
                    jail.kill(process)
                elif jail.disk_usage(workspace.path) > task.disk_ceiling:
                    task.disk_full = True
                    jail.kill(process)
            code = process.returncode
            task.exit_code = 128 - code if code < 0 else code
        finally:
            jail.kill(process)  # nothing of its group outlives it, whatever ended it
            task.duration_ms = int((time.monotonic() - task.started) * 1000)
            if egress is not None:
                await egress.close()
            if task.home_sent:
                task.home_changed = await asyncio.to_thread(_take_home, task)
            task.ended_at = time.monotonic()
            with contextlib.suppress(OSError, LookupError, ValueError):  # a workspace closed under it: no changes
                after = await asyncio.to_thread(self.registry.manifest, workspace, with_hash=False)
                task.changed, task.deleted = changes(before, after)
            workspace.running -= 1
            workspace.note("task_end", task=task.id, exit_code=task.exit_code, timed_out=task.timed_out,
                           stopped=task.stopped, duration_ms=task.duration_ms)
            workspace.lock.release()
            task.done.set()

    async def stop(self, task: Task) -> None:
        if not task.done.is_set() and task.process is not None:
            task.stopped = True
            jail.kill(task.process)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(task.done.wait(), 10)

    async def stop_workspace(self, workspace_id: str) -> None:
        for task in self.running_in(workspace_id):
            await self.stop(task)


def _seed_home(task: Task, files: dict[str, str], owner: tuple[int, int] | None) -> None:
    """The task's private home, the workspace's uid's alone, with the caller's files in it (0600)."""
    task.home.mkdir(mode=0o700)
    if owner is not None:
        os.chown(task.home, *owner)
    for name, text in files.items():
        data = text.encode()
        fd = os.open(task.home / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if owner is not None:
            os.chown(task.home / name, *owner)
        task.home_sent[name] = data


def _take_home(task: Task) -> dict[str, str]:
    """The seeded files that changed, read back after every process of the task is dead (nothing can swap a path
    under the read), each a regular file opened without following a link — a task that left `auth.json` as a link
    to a host file gets nothing back — then the folder goes, whatever was read."""
    changed: dict[str, str] = {}
    try:
        for name, sent in task.home_sent.items():
            try:
                fd = os.open(task.home / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # removed or replaced by a link: nothing to hand back
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    continue
                data = handle.read(HOME_FILE_CAP + 1)
            if data != sent and 0 < len(data) <= HOME_FILE_CAP:
                with contextlib.suppress(UnicodeDecodeError):
                    changed[name] = data.decode("utf-8")
    finally:
        task.home_sent = {}
        shutil.rmtree(task.home, ignore_errors=True)
    return changed
