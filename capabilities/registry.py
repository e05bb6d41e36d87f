"""The capability registry: what exists in this deployment, the publish check, and per-run assembly.

Adding a capability = one package folder + one line in `BUILTIN`.

- `catalog_json()` is what `GET /api/v1/agents/capabilities` serves.
- `validate_bindings(spec, organization=..., can_view_secret=...)` is the publish check: every problem at
  once, each with its field path.
- `build_for_run(spec, deps, organization_id)` turns a frozen spec's bindings into pydantic-ai toolsets and
  capabilities, applies tool overrides by stable id, and says which approval gate each visible tool name has.
"""

from __future__ import annotations

import importlib
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from django.conf import settings
from pydantic import BaseModel, ValidationError
from pydantic_ai.capabilities import AbstractCapability, WrapperCapability
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, DynamicToolset, PreparedToolset, RenamedToolset

from capabilities.base import BuildContext, Capability, NotBuilt, ToolDecl

if TYPE_CHECKING:
    from agenticos.models import Organization
    from agents.run_handle import RunDeps
    from agents.spec import AgentSpec, ApprovalMode, CapabilityBinding

# One line per capability: its package, or its `capability` module where the package keeps models (their
# __init__ imports nothing, see capabilities/models.py); each exposes `CAPABILITY`.
BUILTIN: tuple[str, ...] = (
    "capabilities.clock",
    "capabilities.thinking",
    "capabilities.charts",
    "capabilities.code_execution.capability",
    "capabilities.planning",
    "capabilities.ask_user",
    "capabilities.custom_tools.capability",
    "capabilities.custom_tools.builder",
    "capabilities.db_connections.capability",
    "capabilities.mcp.capability",
    "capabilities.tool_search",
    "capabilities.tool_output_limits.capability",
    "capabilities.guardrails",
    "capabilities.system_reminders",
    "capabilities.compaction",
    "capabilities.media",
    "capabilities.web_research",
    "capabilities.web_fetch",
    "capabilities.browser",
    "capabilities.knowledge",
    "capabilities.skills",
    "capabilities.context",
    "capabilities.memory_files",
    "capabilities.memory_mem0",
    "capabilities.conversation_search",
    "capabilities.sandbox.capability",
    "capabilities.subagents",
    "capabilities.channel_tools",
    "capabilities.follow_ups",
    "capabilities.architect",
    "capabilities.artifacts",
    "capabilities.visuals",
    "capabilities.image_generation",
    "capabilities.text_to_speech",
    "capabilities.video_generation",
    "capabilities.coding_agent",
)

# A name every provider accepts for a function tool.
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_registry: dict[str, Capability] = {}
_loaded = False
_lock = threading.Lock()


class UnknownCapability(KeyError):
    pass


# ------------------------------------------------------------------ the registry itself


def register(cap: Capability) -> Capability:
    """Add a capability. Registering a second, different one under an existing id is a bug."""
    existing = _registry.get(cap.id)
    if existing is not None and existing is not cap:
        raise ValueError(f"capability {cap.id!r} is already registered")
    ids = [t.id for t in cap.tools]
    if len(ids) != len(set(ids)):
        raise ValueError(f"capability {cap.id!r} declares a tool id twice")
    for tool in cap.tools:
        if not TOOL_NAME_RE.match(tool.name):
            raise ValueError(f"capability {cap.id!r}: default tool name {tool.name!r} is not callable")
    _registry[cap.id] = cap
    return cap


def unregister(capability_id: str) -> None:
    """For tests that register a throwaway capability."""
    _ensure_loaded()
    _registry.pop(capability_id, None)


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        for module_path in BUILTIN:
            register(importlib.import_module(module_path).CAPABILITY)
        _loaded = True


def get(capability_id: str) -> Capability:
    _ensure_loaded()
    try:
        return _registry[capability_id]
    except KeyError:
        raise UnknownCapability(capability_id) from None


def find(capability_id: str) -> Capability | None:
    _ensure_loaded()
    return _registry.get(capability_id)


def all_capabilities() -> list[Capability]:
    _ensure_loaded()
    return list(_registry.values())


def granted_scopes() -> frozenset[str]:
    """Scopes this deployment grants (per-organization scope management is roadmap work)."""
    return frozenset(settings.DEFAULT_GRANTED_SCOPES)


def catalog_json() -> dict[str, Any]:
    """The catalog as the API serves it: every capability with its JSON Schema and flags."""
    granted = granted_scopes()
    entries = []
    for cap in all_capabilities():
        entry = cap.catalog_entry()
        entry["available"] = all(scope in granted for scope in cap.scopes)
        entries.append(entry)
    return {"capabilities": entries, "granted_scopes": sorted(granted)}


# ------------------------------------------------------------------ shared helpers


def effective_approval(binding: CapabilityBinding, tool_id: str) -> ApprovalMode:
    """`tool_approval[tool id]` overrides the binding's `approval` for that one tool."""
    return binding.tool_approval.get(tool_id, binding.approval)


def effective_name(binding: CapabilityBinding, tool: ToolDecl) -> str:
    override = binding.tool_overrides.get(tool.id)
    return override.name if override is not None and override.name else tool.name


def effective_description(binding: CapabilityBinding, tool: ToolDecl) -> str:
    override = binding.tool_overrides.get(tool.id)
    return override.description if override is not None and override.description else tool.description


def validate_config(cap: Capability, binding: CapabilityBinding) -> BaseModel:
    """Raises pydantic.ValidationError."""
    return cap.config_model.model_validate(binding.config)


# ------------------------------------------------------------------ publish check


def validate_bindings(
    spec: AgentSpec,
    *,
    organization: Organization,
    can_view_secret: Callable[[str], bool],
) -> list[dict[str, str]]:
    """Every problem with the spec's capability bindings, all at once, each as {"field", "message"}.

    Refuses: an unknown capability, a config its schema rejects, unknown tool ids in `tool_approval` /
    `tool_overrides`, override names no model could call or that collide with another tool, a missing or
    foreign secret (indistinguishable on purpose) or one the publisher cannot view when the key requirement
    applies, scopes the deployment does not grant, approval required on a provider-executed tool, and what a
    capability's `publish_check` refuses in its config (a mem0 server outside MEM0_ALLOWED_HOSTS).
    Disabled bindings keep their config, so it is checked too; they claim no tool names and need no scope or
    key until switched on (a secret they do name must still be this organization's).
    """
    from agenticos.models import Secret

    problems: list[dict[str, str]] = []
    granted = granted_scopes()
    seen: dict[str, int] = {}
    # visible tool name -> field path of whoever claims it, for collisions among enabled bindings
    names: dict[str, str] = {}
    # visible tool name -> its declaration: one declaration shared by two capabilities under one name is one
    # tool, offered once (read_tool_result, from tool_output_limits and from custom_tools' big responses)
    declarations: dict[str, ToolDecl] = {}

    def problem(path: str, message: str) -> None:
        problems.append({"field": path, "message": message})

    for i, binding in enumerate(spec.capabilities):
        base = f"capabilities.{i}"
        cap = find(binding.id)
        if cap is None:
            problem(f"{base}.id", f"Unknown capability {binding.id!r}.")
            continue
        if binding.id == "channel_tools":
            problem(f"{base}.id", "Channel lookups are granted per bot binding (Availability), not in a spec.")
            continue
        if binding.id in seen:
            problem(
                f"{base}.id",
                f"Capability {binding.id!r} is bound twice (also at capabilities.{seen[binding.id]}).",
            )
            continue
        seen[binding.id] = i

        config: BaseModel | None = None
        try:
            config = validate_config(cap, binding)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"])
                problem(f"{base}.config" + (f".{loc}" if loc else ""), err["msg"])

        if cap.binding_check is not None and config is not None:
            for message in cap.binding_check(binding, config):
                problem(f"{base}.approval", message)
        if cap.publish_check is not None and config is not None:
            for config_field, message in cap.publish_check(config):
                problem(f"{base}.config.{config_field}", message)
        if cap.organization_check is not None and config is not None and binding.enabled:
            for config_field, message in cap.organization_check(config, organization):
                problem(f"{base}.config.{config_field}", message)

        declared = cap.tool_ids()
        for tool_id, mode in binding.tool_approval.items():
            tool = cap.tool(tool_id)
            if tool is None:
                problem(f"{base}.tool_approval.{tool_id}", _unknown_tool(cap, tool_id, declared))
            elif mode == "required" and tool.provider_executed:
                problem(
                    f"{base}.tool_approval.{tool_id}",
                    f"{tool_id!r} runs at the model provider, so nothing here can stop it for approval.",
                )
        if binding.approval == "required":
            for tool in cap.tools:
                if tool.provider_executed and tool.id not in binding.tool_approval:
                    problem(
                        f"{base}.approval",
                        f"{tool.id!r} runs at the model provider, so nothing here can stop it for approval; "
                        f'set tool_approval.{tool.id} to "never" or "default".',
                    )

        for tool_id, override in binding.tool_overrides.items():
            if cap.tool(tool_id) is None:
                problem(f"{base}.tool_overrides.{tool_id}", _unknown_tool(cap, tool_id, declared))
            elif override.name is not None and not TOOL_NAME_RE.match(override.name):
                problem(
                    f"{base}.tool_overrides.{tool_id}.name",
                    f"{override.name!r} is not a name a model can call: use 1-64 letters, digits, '_' or '-'.",
                )
            if override.description is not None and not override.description.strip():
                problem(f"{base}.tool_overrides.{tool_id}.description", "A tool description cannot be empty.")

        if binding.enabled:
            for tool in cap.tools:
                name = effective_name(binding, tool)
                path = (
                    f"{base}.tool_overrides.{tool.id}.name"
                    if tool.id in binding.tool_overrides
                    else f"{base}.id"
                )
                if name in names and declarations.get(name) is not tool:
                    problem(path, f"Tool name {name!r} is already used by another tool ({names[name]}).")
                else:
                    names.setdefault(name, path)
                    declarations[name] = tool

        # A disabled binding only keeps its config: it needs no scope and no key until it is switched on.
        missing_scopes = [s for s in cap.scopes if s not in granted] if binding.enabled else []
        if missing_scopes:
            problem(
                f"{base}.id",
                f"{cap.name} needs the scope(s) {', '.join(missing_scopes)}, which this deployment does not grant.",
            )

        needs_key = binding.enabled and cap.key is not None and config is not None and cap.key.applies(config)
        if binding.secret_id or needs_key:
            _check_secret(problem, base, cap, binding, organization, can_view_secret, Secret)
    return problems


def _unknown_tool(cap: Capability, tool_id: str, declared: set[str]) -> str:
    known = ", ".join(sorted(declared)) or "none"
    return f"{cap.name} has no tool with id {tool_id!r} (its tools: {known})."


def _check_secret(problem, base, cap, binding, organization, can_view_secret, secret_model) -> None:
    path = f"{base}.secret_id"
    if not binding.secret_id:
        from agenticos.models import SecretKind

        # The kind by its name for people ("API key"), never its stored value ("api_key"): the Builder shows this.
        kind = dict(SecretKind.choices).get(cap.key.kind, cap.key.kind) if cap.key else "key"
        problem(path, f"{cap.name} needs a key from the vault ({kind}): choose one of this organization's secrets.")
        return
    try:
        secret_pk = uuid.UUID(str(binding.secret_id))
    except ValueError:  # a malformed id is just "not found"
        exists = False
    else:
        exists = secret_model.objects.filter(pk=secret_pk, organization=organization).exists()
    if not exists:
        # Missing and foreign read the same, so a spec cannot probe another organization's secrets.
        problem(path, "No such secret in this organization.")
    elif not can_view_secret(str(binding.secret_id)):
        problem(path, "You cannot use this secret: ask someone who can view it to publish.")


# ------------------------------------------------------------------ per-run assembly


@dataclass(frozen=True)
class ToolRoute:
    """One visible tool name → where it comes from and its approval gate.

    `approval` is the binding's effective mode for that stable tool id: "required" (park for a person),
    "never" (run without asking), "default" (run without asking; reserved for a policy default).
    A renamed tool keeps its gate because this is keyed by the name the model calls and resolved from the
    stable id.
    """

    name: str
    capability_id: str
    tool_id: str
    approval: ApprovalMode
    side_effecting: bool
    provider_executed: bool

    @property
    def requires_approval(self) -> bool:
        return self.approval == "required"


@dataclass
class BuiltCapabilities:
    """Everything `build_for_run` assembled. Pass `toolsets` and `capabilities` to `pydantic_ai.Agent`,
    add `instructions` to the run's instructions, and gate tool calls with `tools[name]`."""

    toolsets: list[AbstractToolset[Any]] = field(default_factory=list)
    capabilities: list[AbstractCapability[Any]] = field(default_factory=list)
    # visible tool name → route (every declared tool of every built capability, renamed names applied)
    tools: dict[str, ToolRoute] = field(default_factory=dict)
    # "Your setup": what this agent has, and what it lacks and what enabling it would give
    instructions: str = ""
    # capability ids that contributed something to this run
    active: list[str] = field(default_factory=list)
    # capability id → why a bound, enabled capability was left out of this run
    skipped: dict[str, str] = field(default_factory=dict)

    def route(self, tool_name: str) -> ToolRoute | None:
        return self.tools.get(tool_name)

    def approval_for(self, tool_name: str) -> ApprovalMode:
        """The gate for a visible tool name; a tool no capability declares (custom tools, MCP) → "default"."""
        route = self.tools.get(tool_name)
        return route.approval if route is not None else "default"


def build_for_run(spec: AgentSpec, deps: RunDeps, organization_id: str | None = None) -> BuiltCapabilities:
    """Assemble the run's capabilities from a frozen spec. Synchronous: call it from sync code (the run's
    assembly/DB thread) — builds may read the database, always scoped to `organization_id`.

    For each enabled binding: validate its config (an invalid one is skipped, with the reason, rather than
    failing the run), check scopes and key requirement, call `build`, apply `tool_overrides` (rename and
    redescribe by stable id) and record each visible tool's approval gate. A binding `build` cannot turn into
    anything (it raised `NotBuilt`, or returned nothing) is skipped with the reason, so "Your setup" never
    tells the model to ask for a capability that is bound.

    A binding its capability's `binding_check` refuses (approval required on a provider-executed method)
    refuses the whole run with `AssemblyError`: nothing revalidates a frozen version, and leaving the tool
    out — or running it ungated — would change what the author published without anyone noticing.
    """
    org_id = str(organization_id or deps.organization_id)
    granted = granted_scopes()
    built = BuiltCapabilities()
    bindings = list(spec.enabled_bindings())
    if spec.custom_tool_ids and not any(b.id == "custom_tools" for b in spec.capabilities):
        # Tools assigned by id need no separate switch: `custom_tool_ids` is the assignment.
        from agents.spec import CapabilityBinding

        bindings.append(CapabilityBinding(id="custom_tools"))
    for binding in bindings:
        cap = find(binding.id)
        if cap is None:
            built.skipped[binding.id] = "this deployment has no such capability"
            continue
        try:
            config = validate_config(cap, binding)
        except ValidationError:
            built.skipped[cap.id] = "its saved settings are no longer valid; republish the agent"
            continue
        missing = [s for s in cap.scopes if s not in granted]
        if missing:
            built.skipped[cap.id] = f"this deployment does not grant {', '.join(missing)}"
            continue
        if cap.key is not None and cap.key.applies(config) and not binding.secret_id:
            built.skipped[cap.id] = f"it needs a {cap.key.kind} secret and none is bound"
            continue
        if cap.binding_check is not None:
            refused = cap.binding_check(binding, config)
            if refused:
                _refuse_run(cap, refused)
        ctx = BuildContext(
            binding=binding,
            config=config,
            deps=deps,
            organization_id=org_id,
            secret_value=_lazy_secret(org_id, binding.secret_id) if binding.secret_id else None,
            granted_scopes=granted,
            spec=spec,
        )
        try:
            items = cap.build(ctx)
        except NotBuilt as exc:
            built.skipped[cap.id] = str(exc).rstrip(".") or NOTHING_TO_OFFER
            continue
        if not items:
            built.skipped[cap.id] = NOTHING_TO_OFFER
            continue
        built.active.append(cap.id)
        renames = {
            t.name: effective_name(binding, t) for t in cap.tools if effective_name(binding, t) != t.name
        }
        descriptions = {t.name: effective_description(binding, t) for t in cap.tools}
        for item in items:
            if isinstance(item, AbstractToolset):
                built.toolsets.append(_override_toolset(item, renames, descriptions))
            else:
                built.capabilities.append(
                    _ToolOverrides(wrapped=item, renames=renames, descriptions=descriptions)
                    if cap.tools
                    else item
                )
        for tool in cap.tools:
            name = effective_name(binding, tool)
            approval = effective_approval(binding, tool.id)
            shared = built.tools.get(name)
            if shared is not None and shared.requires_approval:
                approval = shared.approval  # a tool two bindings declare is gated when either gates it
            built.tools[name] = ToolRoute(
                name=name,
                capability_id=cap.id,
                tool_id=tool.id,
                approval=approval,
                side_effecting=tool.side_effecting,
                provider_executed=tool.provider_executed,
            )
    built.instructions = your_setup(built.active, built.skipped)
    return built


# Why a bound capability whose `build` returned nothing is absent (one that knows better raises NotBuilt).
NOTHING_TO_OFFER = "it is bound, but nothing it works on is attached to this agent or this run"


def _refuse_run(cap: Capability, problems: list[str]) -> None:
    """The run stops before the model is asked anything, saying what to change (the publish check's words)."""
    from agents.run_handle import AssemblyError

    raise AssemblyError(
        f"{cap.name} ({cap.id}) cannot run as this version was published: {' '.join(problems)} "
        "Edit the agent and publish again."
    )


def _lazy_secret(organization_id: str, secret_id: str) -> Callable[[], str]:
    cache: list[str] = []

    def reveal() -> str:
        if not cache:
            from agenticos import vault
            from agenticos.models import Secret

            secret = Secret.objects.get(pk=secret_id, organization_id=organization_id)
            cache.append(vault.reveal(secret))
        return cache[0]

    return reveal


def _override_toolset(
    toolset: AbstractToolset[Any], renames: dict[str, str], descriptions: dict[str, str]
) -> AbstractToolset[Any]:
    """Redescribe (by default name) then rename: the model sees the binding's name and text."""

    def prepare(ctx: Any, tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        out = []
        for tool_def in tool_defs:
            text = descriptions.get(tool_def.name)
            out.append(
                tool_def
                if text is None or text == tool_def.description
                else _with_description(tool_def, text)
            )
        return out

    wrapped: AbstractToolset[Any] = PreparedToolset(toolset, prepare) if descriptions else toolset
    if renames:
        wrapped = _VisibleNameRenamedToolset(wrapped, name_map={new: old for old, new in renames.items()})
    return wrapped


@dataclass
class _VisibleNameRenamedToolset(RenamedToolset[Any]):
    """pydantic-ai's RenamedToolset, except the call keeps the name the model used in `ctx.tool_name`.

    The stock wrapper swaps `ctx.tool_name` back to the original name; a capability-contributed tool that
    emits a capability event (Planning, AskUser) then cannot be found under that name in the tool manager,
    which is keyed by the visible name, and the emit fails the run. The wrapped toolset dispatches on the
    `name` argument, so only that needs the original.
    """

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        original_name = self.name_map.get(name, name)
        tool = replace(tool, tool_def=replace(tool.tool_def, name=original_name))
        return await self.wrapped.call_tool(original_name, tool_args, ctx, tool)


def _with_description(tool_def: ToolDefinition, text: str) -> ToolDefinition:
    return replace(tool_def, description=text)


@dataclass
class _ToolOverrides(WrapperCapability[Any]):
    """Applies a binding's tool overrides to a library capability's own toolset (Planning, AskUser)."""

    renames: dict[str, str] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    def get_toolset(self):  # type: ignore[override]
        toolset = super().get_toolset()
        if toolset is None:
            return None
        if not isinstance(toolset, AbstractToolset):
            toolset = DynamicToolset(toolset_func=toolset)
        return _override_toolset(toolset, self.renames, self.descriptions)


def your_setup(active: Iterable[str], skipped: dict[str, str] | None = None) -> str:
    """The "Your setup" instruction block: what this agent has and what it lacks (and what to enable)."""
    skipped = skipped or {}
    active_ids = list(active)
    lines = ["## Your setup", ""]
    have = [find(cid) for cid in active_ids]
    have_caps = [c for c in have if c is not None]
    if have_caps:
        lines.append("Capabilities you have in this agent:")
        for cap in have_caps:
            lines.append(f"- {cap.name} ({cap.id}): {cap.description}")
    else:
        lines.append("You have no capabilities beyond conversation in this agent.")
    if skipped:
        lines += ["", "Bound but skipped in this run, and why (do not claim to use them; they are already "
                      "enabled, so do not ask anyone to enable them):"]
        for cid, reason in skipped.items():
            known = find(cid)
            lines.append(f"- {known.name if known else cid} ({cid}): {reason}.")
    lacking = [
        c for c in all_capabilities() if c.selectable and c.id not in active_ids and c.id not in skipped
    ]
    if lacking:
        lines += [
            "",
            "Capabilities this agent does not have. Do not pretend to do what they do; when a request needs "
            "one, say which and that someone who can edit this agent can enable it:",
        ]
        for cap in lacking:
            lines.append(f"- {cap.name} ({cap.id}): {cap.offers or cap.description}")
    return "\n".join(lines)
