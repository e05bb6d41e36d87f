"""Sandbox: a workspace that survives between turns — ls, read_file, glob, grep, write_file, edit_file
(and execute, on a backend with a shell).

Backend `state` keeps the files in this database (`store.py`), capped at `SANDBOX_STATE_MAX_BYTES`, with no
shell: `execute` is not offered there. Backend `service` runs commands on a sandbox connection (a sandboxd,
`connections.py`; null takes the organization's default, the deployment's own sandboxd registered the first
time it is needed) with the same stored files as its source of truth (`service.py`); `execute` is offered
there unless `include_execute` is off. Publish refuses `service` without a connection, with one that no
longer exists, or with one that has no credential, each by name.

Who shares the workspace is `session_scope` (run | conversation | channel | user | agent), which a chat
bot binding may override for runs through it. The file tools come from pydantic-ai-backend's console
toolset working in the run's pydantic-ai workspace; credentials and system paths are refused whatever the
approval policy says, and grep drops matches inside them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.workspaces import WorkspaceRef
from pydantic_ai_backends import ConsoleCapability
from pydantic_ai_backends.permissions.presets import SYSTEM_PATTERNS, deny_rules
from pydantic_ai_backends.permissions.types import OperationPermissions, PermissionRuleset

from capabilities.base import BuildContext, Built, Capability, ToolDecl, enum_labels, tool_text
from workspaces import store

logger = logging.getLogger(__name__)

# The spec's credential paths, refused for read, write and edit (and hidden from grep), plus the system tree.
CREDENTIAL_PATTERNS = ["**/.env", "**/*.pem", "**/*.key", "**/credentials*", "**/.ssh/**", "**/.aws/**"]
_DENIED = (deny_rules(CREDENTIAL_PATTERNS, "credential files are never read, written or edited here")
           + deny_rules(SYSTEM_PATTERNS, "system paths are outside your workspace"))
RULESET = PermissionRuleset(
    default="allow",
    read=OperationPermissions(default="allow", rules=_DENIED),
    write=OperationPermissions(default="allow", rules=_DENIED),
    edit=OperationPermissions(default="allow", rules=_DENIED),
    glob=OperationPermissions(default="allow"),
    grep=OperationPermissions(default="allow"),
    ls=OperationPermissions(default="allow"),
    execute=OperationPermissions(default="allow"),
)

def is_withheld(path: str) -> bool:
    """Whether the content at `path` is refused (credentials, the system tree) whoever asks for it."""
    from pydantic_ai_backends.permissions.checker import PermissionChecker

    return PermissionChecker(ruleset=RULESET).check_sync("read", path) == "deny"


SCOPE_LABELS = {
    "run": "Nobody: a new workspace every turn",
    "conversation": "Everyone in this chat (a Slack thread is a chat)",
    "channel": "Every thread of one chat channel",
    "user": "One person, on every surface",
    "agent": "Everyone who talks to this agent, organization-wide",
}


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["state", "service"] = Field(
        default="state", description="state: files in this database, no shell. service: a registered sandbox "
                                     "connection running containers.",
        json_schema_extra=enum_labels({"state": "Stored files (no shell)", "service": "Sandbox service"}))
    connection_id: str | None = Field(default=None, description="Only for service: a registered sandbox "
                                                                "connection; empty takes the organization's default.")
    session_scope: Literal["run", "conversation", "channel", "user", "agent"] = Field(
        default="conversation", description="Who shares the workspace. A chat bot binding can override it.",
        json_schema_extra=enum_labels(SCOPE_LABELS))
    runtime: str | None = Field(default=None, description="Only for service: a runtime alias the connection allows.")
    include_execute: bool = Field(default=True, description="Off removes the shell entirely instead of gating it. "
                                                            "The state backend has no shell either way.")

    @model_validator(mode="after")
    def _service_only_settings(self) -> SandboxConfig:
        # Accepting them on stored files would read as a choice that does nothing.
        for name in ("connection_id", "runtime"):
            if getattr(self, name) is not None and self.backend != "service":
                raise ValueError(f"{name} applies to a service workspace only; stored files ('state') have none.")
        return self


def _tool(tool_id: str, what: str, when: str, args: str, returns: str, *, side_effecting: bool = False) -> ToolDecl:
    return ToolDecl(id=tool_id, description=tool_text(what=what, when=when, args=args, returns=returns),
                    side_effecting=side_effecting)


TOOLS = (
    _tool("ls", "List the files and folders directly inside one folder of your workspace, with sizes.",
          "To see what a folder holds. To find files by name anywhere below a folder use glob instead.",
          "path: the folder (default: the working directory /workspace).",
          "One line per entry, folders ending in '/', files with their size in bytes. A missing folder and an "
          "empty one answer alike."),
    _tool("read_file", "Read a text file from your workspace, a slice of lines at a time.",
          "Before editing a file, or to use a file someone attached (they are in /workspace/uploads/) or a "
          "skill's file (/workspace/skills/<name>/). Read large files in slices.",
          "path: the file. offset: first line, 0-based (default 0). limit: lines to read (default 2000).",
          "The lines, numbered. A missing path is a request to call again with an existing one. Credentials "
          "(.env, *.pem, *.key, credentials*, .ssh, .aws) and system paths are refused, and you can go on."),
    _tool("glob", "Find files in your workspace whose path matches a pattern, searching every folder below.",
          "To locate files by name or extension ('**/*.csv'). To search inside files use grep.",
          "pattern: a glob such as '**/*.md'. path: where to start (default: /workspace).",
          "The matching paths, at most a few hundred, or a sentence saying there are none."),
    _tool("grep", "Search the text of the files in your workspace for a regular expression.",
          "To find where something is written. Matches inside credential files are never returned.",
          "pattern: a regular expression. path: where to search (default: /workspace). glob_pattern: only files "
          "matching it. output_mode: files_with_matches (default), content or count.",
          "The files (or lines, or a count) that match, cut with a note when there are many; 'No matches' "
          "when nothing does."),
    _tool("write_file", "Create or replace a file in your workspace with the text you give.",
          "To save work that must outlive this turn: notes, data, a draft, a script. To change part of an "
          "existing file use edit_file. A file written under /workspace/skills/ becomes a proposal a person "
          "reviews; the skill itself does not change.",
          "path: the file (folders are created). content: the whole new text.",
          "A confirmation with the path. A full workspace, a credential or system path, or a path where a "
          "folder stands comes back as an error saying so."),
    _tool("edit_file", "Replace an exact piece of text in a file of your workspace.",
          "For a small change to a file you have read. Read it first: the old text must match exactly once "
          "unless you replace every occurrence.",
          "path: the file. old_string: the exact text to replace. new_string: its replacement. replace_all: "
          "replace every occurrence (default false).",
          "A confirmation with the number of replacements. Text that is missing or not unique is a request to "
          "call again with a longer old_string."),
    _tool("execute", "Run a shell command in your workspace's container.",
          "To run a script, convert a file or use a command-line tool. Only on a workspace with a shell.",
          "command: the command line. timeout: seconds (default 120).",
          "What the command printed and its exit code; a non-zero exit is a result, not a failure.",
          side_effecting=True),
)


@dataclass
class StoredWorkspace(AbstractCapability[Any]):
    """Supplies the run's stored workspace to pydantic-ai (ctx.workspace), whatever ref the history names."""

    backend: store.DatabaseWorkspaceBackend
    label: str = ""
    skills: list[str] = field(default_factory=list)
    shell: bool = False

    def get_workspace(self, ctx: RunContext[Any], *, ref: WorkspaceRef | None) -> Any:
        if ref is not None and ref != self.backend.ref:
            return None
        return self.backend

    def get_instructions(self) -> str:
        lines = [
            "## Your workspace",
            f"You have files that outlive this turn ({self.label.lower()}). Work in /workspace with ls, "
            "read_file, glob, grep, write_file and edit_file. " + (
                "execute runs a shell command in /workspace, in an isolated sandbox without network access; "
                "what it writes in /workspace is kept with your files, anything elsewhere is gone after the "
                "command." if self.shell else
                "There is no shell here: you cannot run commands or programs in this workspace."),
            "Files people attach to their messages are in /workspace/uploads/.",
        ]
        if self.skills:
            lines.append("Your skills are also files, in /workspace/skills/<name>/ ("
                         + ", ".join(self.skills) + "). Changing one there records a proposal that someone "
                         "who edits skills accepts or discards; the skill stays as it is until then."
                         + (" A skill's scripts run from there with execute." if self.shell else ""))
        return "\n".join(lines)


class _FileTools(ConsoleCapability):
    """The console toolset without its own prompt (which promises a shell the stored backend lacks).

    Paths are checked once, by the toolset's own guard, which answers a refused path with readable text the
    model can act on; the capability-level check would raise instead and end the run."""

    def get_instructions(self) -> str:  # type: ignore[override]
        return ""

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any,
                                  args: dict[str, Any]) -> dict[str, Any]:
        return args


def _proposal_recorder(ctx: BuildContext, skills_by_name: dict[str, Any]):
    from knowledge import skills as skill_store

    def on_write(path: str, data: bytes) -> None:
        found = store.skill_for_path(path, skills_by_name)
        if found is None:
            return
        skill, inner = found
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            return  # a skill is text: bytes that are not cannot become a proposal (the write itself stands)
        skill_store.propose_edit(organization_id=ctx.organization_id, skill_id=str(skill.pk), path=inner,
                                 content=content, run_id=ctx.deps.run_id)

    return on_write


def _scope(run: Any, config: SandboxConfig) -> str:
    scope = str((run.options or {}).get("workspace_scope") or config.session_scope)
    return scope if scope in store.SCOPES else config.session_scope


def _bound_skills(ctx: BuildContext) -> list[Any]:
    if ctx.spec is not None and ctx.spec.skill_ids and any(
            b.id == "skills" and b.enabled for b in ctx.spec.capabilities):
        from knowledge import skills as skill_store

        return skill_store.bound_skills(ctx.organization_id, list(ctx.spec.skill_ids))
    return []


def _service_backend(ctx: BuildContext, run: Any, config: SandboxConfig) -> tuple[Any, Any] | None:
    """(workspace row, backend) on the binding's sandbox connection, or None when none is usable now."""
    from agenticos.models import Organization
    from workspaces import connections
    from workspaces.service import ServiceWorkspaceBackend

    organization = Organization.objects.get(pk=ctx.organization_id)
    try:
        connection = connections.for_run(organization, config.connection_id)
        client = connections.client_for(connection)
    except connections.ConnectionUnavailable as exc:
        logger.warning("sandbox run %s gets no service workspace: %s", ctx.deps.run_id, exc)
        return None
    workspace = store.open_for_run(run, _scope(run, config), backend="service", host=str(connection.pk))
    backend = ServiceWorkspaceBackend(str(workspace.pk), run_id=str(run.pk), client=client, runtime=config.runtime)
    return workspace, backend


def build(ctx: BuildContext) -> list[Built]:
    from agents.models import Run

    assert isinstance(ctx.config, SandboxConfig)
    run = Run.objects.filter(pk=ctx.deps.run_id, organization_id=ctx.organization_id).first()
    if run is None:
        return []
    shell = False
    if ctx.config.backend == "service":
        found = _service_backend(ctx, run, ctx.config)
        if found is None:
            return []
        workspace, backend = found
        shell = ctx.config.include_execute
    else:
        workspace = store.open_for_run(run, _scope(run, ctx.config))
        backend = store.DatabaseWorkspaceBackend(str(workspace.pk), run_id=str(run.pk))
    bound = _bound_skills(ctx)
    store.materialize_skills(str(workspace.pk), bound)  # also clears the folders of skills no longer bound
    skills_by_name = {skill.name: skill for skill in bound}
    if skills_by_name:
        backend.on_write = _proposal_recorder(ctx, skills_by_name)
    ctx.deps.scratch["workspace_id"] = str(workspace.pk)
    ctx.deps.scratch[store.SCRATCH_BACKEND] = backend  # spilled tool results go here (tool_output_limits)
    return [
        StoredWorkspace(backend=backend, label=workspace.label, skills=sorted(skills_by_name), shell=shell),
        _FileTools(include_execute=shell, permissions=RULESET, profile="agent"),
    ]


def organization_check(config: Any, organization: Any) -> list[tuple[str, str]]:
    """Publish's refusals that need the organization: a `service` binding without a usable connection."""
    from workspaces.connections import publish_problems

    return publish_problems(config, organization)



CAPABILITY = Capability(
    id="sandbox",
    name="Sandbox",
    category="analysis",
    description="A workspace of files that survives between turns: read, search, write and edit them.",
    offers="a workspace whose files outlive the turn (notes, data, drafts)",
    examples=(
        "Keep a running list of open questions in notes.md.",
        "Read the CSV I attached and save a cleaned copy.",
        "Draft the report in report.md and refine it next time.",
    ),
    never_does=(
        "It never reads, writes, greps or runs a command naming credential files (.env, *.pem, *.key, "
        "credentials*, .ssh, .aws) or system paths; its commands never reach the network or files outside "
        "the workspace, and stored files have no shell. A skill's edit is a proposal a person decides."
    ),
    tools=TOOLS,
    scopes=("sandbox:execute",),
    config_model=SandboxConfig,
    voice="hand_off",
    recommended=True,
    build=build,
    organization_check=organization_check,
)
