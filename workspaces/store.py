"""Stored workspaces (capability `sandbox`, backend `state`): files in this database, one row per path.

Not pydantic-ai-backend's `StateWorkspace`/`StateBackend`, on purpose: those keep a workspace as one JSON
document the host loads before a run and saves after it. Two runs sharing a workspace (scopes channel,
user, agent) would each save their stale copy of the whole document over the other's files, and a run that
dies loses every write since the load. One row per file avoids both; the backend below is a pydantic-ai
`WorkspaceBackend` like theirs (it passes pydantic-ai's conformance suite), and the file tools on top are
pydantic-ai-backend's own.

Layout: the working directory is `/workspace`; files a person attached land in `/workspace/uploads/`,
bound skills are materialized in `/workspace/skills/<name>/`, tool results too big for the context are spilled
to `/workspace/tool_output/<run>/` and kept until their run has finished. Writes past `SANDBOX_STATE_MAX_BYTES`
are refused with a readable error; a write under a bound skill's folder also records a skill proposal.
"""

from __future__ import annotations

import mimetypes
import posixpath
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone
from pydantic_ai.workspaces import FileEntry, WorkspaceRef, WorkspaceUnavailableError

from agenticos.tenancy import parse_uuid
from workspaces.models import Workspace, WorkspaceFile, WorkspaceUse

if TYPE_CHECKING:
    from agents.models import Run

PROVIDER = "agenticos-state"
WORKDIR = "/workspace"
UPLOADS = f"{WORKDIR}/uploads"
SKILLS = f"{WORKDIR}/skills"
# Tool results too big for the context (capability tool_output_limits): files of the run that spilled them.
SPILLS = f"{WORKDIR}/tool_output"
# The working directory and its ancestors always exist and cannot be removed.
_FIXED_DIRS = ("/", WORKDIR)
SCOPES = ("run", "conversation", "channel", "user", "agent")
# The run's scratch key under which the sandbox capability leaves the run's workspace backend, for what else
# writes there during the run (spilled tool results).
SCRATCH_BACKEND = "workspace_backend"


class WorkspaceFull(OSError):
    """A write would pass the stored workspace's byte cap."""


def normal(path: str) -> str:
    """An absolute, collapsed POSIX path (relative paths are taken from the working directory)."""
    joined = path if path.startswith("/") else posixpath.join(WORKDIR, path)
    result = posixpath.normpath(joined)
    return "/" + result.lstrip("/")


def _ancestors(path: str) -> list[str]:
    out = []
    parent = posixpath.dirname(path)
    while parent and parent != "/":
        out.append(parent)
        parent = posixpath.dirname(parent)
    return out


# ------------------------------------------------------------------ who shares a workspace


@dataclass(frozen=True)
class Placement:
    scope: str
    key: str
    label: str
    conversation_id: str | None = None


def placement(run: Run, scope: str) -> Placement:
    """Where this run's files live for `scope`; a scope the run cannot have narrows, never widens.

    - run: a new workspace each turn; conversation: everyone in this chat (a Slack thread is a chat);
    - channel: every thread of one chat channel (a DM has its own chat id); outside channels = conversation;
    - user: one person on every surface — a linked chat account is that person; an unlinked chat sender is
      their chat account (they run under the binding creator's authority, whose files they must not see);
      a visitor without an account narrows to the conversation;
    - agent: everyone who talks to this agent in the organization.
    """
    conversation_id = str(run.conversation_id) if run.conversation_id else None
    channel = (run.options or {}).get("channel") or {}
    if scope == "agent":
        return Placement("agent", "", "Shared by everyone who talks to this agent")
    if scope == "user":
        if channel and not channel.get("linked", True):
            account = run.chat_account or "unknown"
            return Placement("user", f"chat:{channel.get('platform', '')}:{account}", f"Files of {account}")
        if run.user_id is not None and not run.embed_id and not run.api_key_id:
            return Placement("user", f"user:{run.user_id}", "Your files with this agent")
        scope = "conversation"
    if scope == "channel":
        if channel.get("chat_id"):
            key = f"{channel.get('platform', '')}:{channel.get('bot_id', '')}:{channel['chat_id']}"
            return Placement("channel", key, "Shared by everyone in this channel")
        scope = "conversation"
    if scope == "conversation" and conversation_id:
        return Placement("conversation", conversation_id, "Files of this conversation", conversation_id)
    return Placement("run", str(run.pk), "Files of this turn only", conversation_id)


def open_for_run(run: Run, scope: str, *, backend: str = "state", host: str = "") -> Workspace:
    """The stored workspace this run works in (created on first use), marked as used now.

    `host` names where a `service` workspace runs (its connection's id): a workspace on another connection,
    or on stored files, is another workspace, so changing either starts an empty one (the old one stays)."""
    where = placement(run, scope)
    key = f"{host}|{where.key}" if host else where.key
    defaults = {"label": where.label, "conversation_id": where.conversation_id}
    try:
        with transaction.atomic():
            workspace, created = Workspace.objects.get_or_create(
                organization_id=run.organization_id, agent_id=run.agent_id, backend=backend, scope=where.scope,
                key=key, defaults=defaults)
    except IntegrityError:  # a concurrent first run of the same scope created it
        workspace = Workspace.objects.get(organization_id=run.organization_id, agent_id=run.agent_id,
                                          backend=backend, scope=where.scope, key=key)
        created = False
    now = timezone.now()
    if not created:
        Workspace.objects.filter(pk=workspace.pk).update(last_used_at=now)
    if run.conversation_id:
        WorkspaceUse.objects.update_or_create(workspace=workspace, conversation_id=run.conversation_id,
                                              defaults={"last_used_at": now})
    return workspace


def for_conversation(conversation_id: Any) -> Workspace | None:
    """The workspace this conversation's latest run worked in (None: its agent keeps no files)."""
    use = (WorkspaceUse.objects.select_related("workspace").filter(conversation_id=conversation_id)
           .order_by("-last_used_at").first())
    return use.workspace if use is not None else None


def listing(workspace: Workspace) -> list[dict[str, Any]]:
    return [
        {"path": path, "size": size, "updated_at": updated_at}
        for path, size, updated_at in WorkspaceFile.objects.filter(workspace=workspace, is_dir=False)
        .order_by("path").values_list("path", "size", "updated_at")
    ]


# ------------------------------------------------------------------ synchronous file operations


def used_bytes(workspace_id: Any, *, excluding: str | None = None) -> int:
    rows = WorkspaceFile.objects.filter(workspace_id=workspace_id, is_dir=False)
    if excluding is not None:
        rows = rows.exclude(path=excluding)
    return int(rows.aggregate(total=Sum("size"))["total"] or 0)


def _row(workspace_id: Any, path: str) -> WorkspaceFile | None:
    return WorkspaceFile.objects.filter(workspace_id=workspace_id, path=path).only("id", "is_dir", "size").first()


def _is_dir(workspace_id: Any, path: str) -> bool:
    if path in _FIXED_DIRS:
        return True
    return WorkspaceFile.objects.filter(
        Q(path=path, is_dir=True) | Q(path__startswith=path + "/"), workspace_id=workspace_id
    ).exists()


def _file_in_parents(workspace_id: Any, path: str) -> str | None:
    parents = _ancestors(path)
    if not parents:
        return None
    hit = WorkspaceFile.objects.filter(workspace_id=workspace_id, path__in=parents, is_dir=False).values_list(
        "path", flat=True).first()
    return hit


def read(workspace_id: Any, path: str) -> bytes:
    path = normal(path)
    row = WorkspaceFile.objects.filter(workspace_id=workspace_id, path=path).only("is_dir", "data").first()
    if row is not None and not row.is_dir:
        return bytes(row.data)
    if row is not None or _is_dir(workspace_id, path):
        raise IsADirectoryError(path)
    if _file_in_parents(workspace_id, path):
        raise NotADirectoryError(path)
    raise FileNotFoundError(path)


def write(workspace_id: Any, path: str, data: bytes, *, run_id: str | None, max_bytes: int | None = None) -> None:
    path = normal(path)
    if path in _FIXED_DIRS or _is_dir(workspace_id, path) and not _is_file(workspace_id, path):
        raise IsADirectoryError(path)
    if _file_in_parents(workspace_id, path):
        raise NotADirectoryError(path)
    cap = settings.SANDBOX_STATE_MAX_BYTES if max_bytes is None else max_bytes
    with transaction.atomic():
        # One writer at a time per workspace, so two concurrent writes cannot both slip under the cap.
        if Workspace.objects.select_for_update().filter(pk=workspace_id).values_list("pk").first() is None:
            raise WorkspaceUnavailableError(f"workspace {workspace_id} no longer exists")  # not a broken row
        used = used_bytes(workspace_id, excluding=path)
        if used + len(data) > cap:
            raise WorkspaceFull(
                f"The workspace is full: {used:,} of {cap:,} bytes are in use and this write of {len(data):,} "
                "bytes would pass the limit. Delete files you no longer need, or write less.")
        now = timezone.now()
        updated = WorkspaceFile.objects.filter(workspace_id=workspace_id, path=path, is_dir=False).update(
            data=data, size=len(data), updated_at=now)
        if not updated:
            WorkspaceFile.objects.create(workspace_id=workspace_id, path=path, data=data, size=len(data),
                                         created_by_run=run_id, created_at=now, updated_at=now)


def _is_file(workspace_id: Any, path: str) -> bool:
    return WorkspaceFile.objects.filter(workspace_id=workspace_id, path=path, is_dir=False).exists()


def stat(workspace_id: Any, path: str) -> FileEntry:
    path = normal(path)
    name = posixpath.basename(path) or "/"
    row = _row(workspace_id, path)
    if row is not None and not row.is_dir:
        return FileEntry(name=name, path=path, is_dir=False, size=row.size)
    if row is not None or _is_dir(workspace_id, path):
        return FileEntry(name=name, path=path, is_dir=True, size=None)
    if _file_in_parents(workspace_id, path):
        raise NotADirectoryError(path)
    raise FileNotFoundError(path)


def list_dir(workspace_id: Any, path: str) -> list[FileEntry]:
    path = normal(path)
    row = _row(workspace_id, path)
    if row is not None and not row.is_dir:
        raise NotADirectoryError(path)
    prefix = "/" if path == "/" else path + "/"
    rows = WorkspaceFile.objects.filter(workspace_id=workspace_id, path__startswith=prefix).values_list(
        "path", "is_dir", "size")
    children: dict[str, FileEntry] = {}
    if path == "/":
        children["workspace"] = FileEntry(name="workspace", path=WORKDIR, is_dir=True, size=None)
    for child_path, is_dir, size in rows:
        rest = child_path[len(prefix):]
        name, _, deeper = rest.partition("/")
        full = prefix + name
        if deeper or is_dir:
            children.setdefault(name, FileEntry(name=name, path=full, is_dir=True, size=None))
        else:
            children[name] = FileEntry(name=name, path=full, is_dir=False, size=size)
    if not children and row is None and path not in _FIXED_DIRS:
        if _file_in_parents(workspace_id, path):
            raise NotADirectoryError(path)
        raise FileNotFoundError(path)
    return [children[name] for name in sorted(children)]


def make_dir(workspace_id: Any, path: str) -> None:
    path = normal(path)
    if path in _FIXED_DIRS:
        return
    if _is_file(workspace_id, path):
        raise FileExistsError(path)
    if _file_in_parents(workspace_id, path):
        raise NotADirectoryError(path)
    now = timezone.now()
    with transaction.atomic():
        if Workspace.objects.select_for_update().filter(pk=workspace_id).values_list("pk").first() is None:
            raise WorkspaceUnavailableError(f"workspace {workspace_id} no longer exists")
        for directory in [path, *_ancestors(path)]:
            if directory in _FIXED_DIRS:
                continue
            WorkspaceFile.objects.get_or_create(workspace_id=workspace_id, path=directory,
                                                defaults={"is_dir": True, "created_at": now, "updated_at": now})


def remove(workspace_id: Any, path: str) -> None:
    path = normal(path)
    if path in _FIXED_DIRS:
        raise ValueError(f"refusing to remove {path}: it holds the whole workspace")
    deleted, _ = WorkspaceFile.objects.filter(
        Q(path=path) | Q(path__startswith=path + "/"), workspace_id=workspace_id).delete()
    if not deleted:
        raise FileNotFoundError(path)


def exists(workspace_id: Any, path: str) -> bool:
    path = normal(path)
    return path in _FIXED_DIRS or WorkspaceFile.objects.filter(
        Q(path=path) | Q(path__startswith=path + "/"), workspace_id=workspace_id).exists()


# ------------------------------------------------------------------ the pydantic-ai workspace backend


@dataclass
class DatabaseWorkspaceBackend:
    """A stored workspace as a pydantic-ai workspace backend: files only (no shell), relative paths from
    `/workspace`. `on_write(path, data)` runs after each successful write (skill proposals)."""

    workspace_id: str
    run_id: str | None = None
    max_bytes: int | None = None
    on_write: Callable[[str, bytes], None] | None = field(default=None, repr=False)

    @property
    def ref(self) -> WorkspaceRef | None:
        return WorkspaceRef(provider=PROVIDER, id=str(self.workspace_id))

    async def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await sync_to_async(function)(self.workspace_id, *args, **kwargs)

    async def working_dir(self) -> str:
        if not await sync_to_async(Workspace.objects.filter(pk=self.workspace_id).exists)():
            raise WorkspaceUnavailableError(f"workspace {self.workspace_id} no longer exists")
        return WORKDIR

    async def read_bytes(self, path: str) -> bytes:
        return await self._call(read, path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        def work(workspace_id: str) -> None:
            write(workspace_id, path, bytes(data), run_id=self.run_id, max_bytes=self.max_bytes)
            if self.on_write is not None:
                self.on_write(normal(path), bytes(data))

        await sync_to_async(work)(self.workspace_id)

    async def stat(self, path: str) -> FileEntry:
        return await self._call(stat, path)

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        return await self._call(list_dir, path)

    async def make_dir(self, path: str) -> None:
        await self._call(make_dir, path)

    async def remove(self, path: str) -> None:
        await self._call(remove, path)

    async def exists(self, path: str) -> bool:
        return bool(await self._call(exists, path))


# ------------------------------------------------------------------ what the platform puts in, and takes out


def mime_for(name: str) -> str:
    """The type a workspace file's name implies (a chart written as .png travels as an image, not a blob)."""
    guessed, _ = mimetypes.guess_type(name)
    if guessed:
        return guessed
    if name.lower().endswith((".md", ".markdown")):  # unknown to Python 3.11's table
        return "text/markdown"
    return "application/octet-stream"


def safe_name(name: str) -> str:
    """A single path segment from a person's file name (no folders, no dot-dot)."""
    base = posixpath.basename(str(name).replace("\\", "/")).strip() or "file"
    return base.lstrip(".") or "file"


def land_uploads(workspace_id: str, attachments: list[dict], *, run_id: str,
                 read_bytes: Callable[[str], bytes | None]) -> dict[str, str]:
    """Write this turn's attachments into `/workspace/uploads/`; returns storage path → workspace path.

    An attachment that cannot be read back or does not fit is left out of the mapping (the prompt then
    folds or names it as before)."""
    landed: dict[str, str] = {}
    for attachment in attachments:
        storage_path = str(attachment.get("path") or "")
        data = read_bytes(storage_path)
        if data is None:
            continue
        target = f"{UPLOADS}/{safe_name(str(attachment.get('name') or 'file'))}"
        if target in landed.values():
            stem, dot, ext = target.rpartition(".")
            target = f"{stem}-{uuid.uuid4().hex[:6]}{dot}{ext}" if dot else f"{target}-{uuid.uuid4().hex[:6]}"
        try:
            write(workspace_id, target, data, run_id=run_id)
        except OSError:  # full, or a folder already stands at that name: the prompt folds the file instead
            continue
        landed[storage_path] = target
    return landed


def materialize_skills(workspace_id: str, skills: list[Any]) -> None:
    """Each bound skill as `/workspace/skills/<name>/SKILL.md` plus its files, as the skill stands now.

    An agent's earlier edit there is put back to the skill's text: edits are proposals, not changes. The
    folder of a skill no longer bound (unbound, renamed, deleted) goes: the agent must not keep reading it."""
    from knowledge.skills import skill_md_text

    bound = {skill.name for skill in skills}
    stale = [path for path in WorkspaceFile.objects.filter(workspace_id=workspace_id, path__startswith=SKILLS + "/")
             .values_list("path", flat=True) if path[len(SKILLS) + 1:].partition("/")[0] not in bound]
    if stale:
        WorkspaceFile.objects.filter(workspace_id=workspace_id, path__in=stale).delete()
    for skill in skills:
        folder = f"{SKILLS}/{skill.name}"
        wanted = {f"{folder}/SKILL.md": skill_md_text(skill).encode()}
        for item in skill.files.all():
            wanted[normal(f"{folder}/{item.path}")] = item.content.encode()
        current = dict(WorkspaceFile.objects.filter(workspace_id=workspace_id, path__in=list(wanted), is_dir=False)
                       .values_list("path", "data"))
        for path, data in wanted.items():
            if path not in current or bytes(current[path]) != data:
                try:
                    write(workspace_id, path, data, run_id=None)
                except OSError:  # full, or the agent put a file where the skill has a folder: skip that one
                    continue


def skill_for_path(path: str, skills_by_name: dict[str, Any]) -> tuple[Any, str] | None:
    """(skill, path inside it) when `path` is under a bound skill's materialized folder."""
    if not path.startswith(SKILLS + "/"):
        return None
    name, _, inner = path[len(SKILLS) + 1:].partition("/")
    skill = skills_by_name.get(name)
    if skill is None or not inner:
        return None
    return skill, inner


def outputs(run_id: str) -> list[WorkspaceFile]:
    """Files this run created (not uploads, skills or spilled tool results), oldest first — a channel reply's files.

    A file the run only overwrote is not among them: it existed before this turn."""
    return list(
        WorkspaceFile.objects.filter(created_by_run=run_id, is_dir=False)
        .exclude(path__startswith=UPLOADS + "/")
        .exclude(path__startswith=SKILLS + "/")
        .exclude(path__startswith=SPILLS + "/")
        .order_by("created_at", "id")
    )


def fill(workspace: Workspace) -> tuple[int, int]:
    """(bytes used, byte cap) of a stored workspace."""
    return used_bytes(workspace.pk), int(settings.SANDBOX_STATE_MAX_BYTES)


def sweep_finished_spills(cutoff: Any, batch: int = 1000) -> int:
    """Delete the spilled tool results of runs that finished before `cutoff`, by the run that wrote each one —
    never by sweeping the folder, so a concurrent run sharing the workspace keeps its own in mid-flight."""
    from agents.models import Run

    finished = Run.objects.filter(finished_at__lt=cutoff).values("pk")
    doomed = list(WorkspaceFile.objects.filter(path__startswith=SPILLS + "/", created_by_run__in=finished)
                  .values_list("pk", flat=True)[:batch])
    deleted, _ = WorkspaceFile.objects.filter(pk__in=doomed).delete()
    return deleted


def sweep_turn_workspaces(grace: timedelta = timedelta(minutes=10), batch: int = 1000) -> int:
    """Delete workspaces of scope run that belong to no conversation (an API-key or trigger run) once their
    run has finished more than `grace` ago, or no longer exists. Nothing can reach them any more: no
    conversation lists them and the next turn gets a new one. A parked run keeps its files until it ends."""
    from agents.models import Run

    cutoff = timezone.now() - grace
    candidates = dict(Workspace.objects.filter(scope="run", conversation__isnull=True, last_used_at__lt=cutoff)
                      .values_list("key", "pk")[:batch])
    # A service workspace's key is "<connection>|<run id>".
    run_ids = [key.rpartition("|")[2] for key in candidates if parse_uuid(key.rpartition("|")[2]) is not None]
    keep = {str(pk) for pk in Run.objects.filter(pk__in=run_ids).filter(
        Q(finished_at__isnull=True) | Q(finished_at__gte=cutoff)).values_list("pk", flat=True)}
    doomed = [pk for key, pk in candidates.items() if key.rpartition("|")[2] not in keep]
    _, per_model = Workspace.objects.filter(pk__in=doomed).delete()
    return per_model.get(Workspace._meta.label, 0)

