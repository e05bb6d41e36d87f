"""What a capability declares: the unit an author switches on, its tools, its config, its needs.

A declaration is data the catalog endpoint and the publish check read without building anything;
`build` is the only part that runs, once per run, and returns pydantic-ai toolsets/capabilities.

Tool descriptions follow one shape everywhere (spec: "Qué le dice una herramienta al modelo"): the one
pydantic-ai renders from a docstring, `<summary>` prose then a `<returns>` block. A tool written here
declares itself from its own function (`ToolDecl.from_function`) so declaration and offer cannot drift;
a library tool gets its text through `tool_text`, which draws the same shape.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from capabilities.lifecycle import NO_HOOKS, RunHooks

if TYPE_CHECKING:
    from agents.run_handle import RunDeps
    from agents.spec import AgentSpec, CapabilityBinding

Category = Literal["knowledge", "research", "analysis", "reasoning", "utility", "channels"]
# How a capability takes part in a voice call (catalog field `voice`).
Voice = Literal["live", "hand_off", "never"]

Built = AbstractToolset[Any] | AbstractCapability[Any]


class NotBuilt(Exception):  # noqa: N818 (a signal with a reason, not an error)
    """Raised by `build` when a bound capability has nothing to offer in this run; the message says why.

    The registry leaves it out and "Your setup" tells the model it is bound but skipped, and why, instead
    of listing it among the capabilities someone would have to enable.
    """


def tool_text(*, what: str, when: str, args: str = "", returns: str) -> str:
    """A description in the shape pydantic-ai gives a docstring tool: four parts, summary + returns.

    `what` is one sentence (the Builder shows it next to the approval box), `when` says when to use it
    and when to use something else, `args` each argument with its default and cap, and `returns` the
    shape of the answer, what a failure looks like and where it is a truncated slice.
    """
    summary = "\n\n".join(part.strip() for part in (what, when, args) if part.strip())
    return (
        f"<summary>{summary}</summary>\n<returns>\n<description>{returns.strip()}</description>\n</returns>"
    )


@dataclass(frozen=True)
class ToolDecl:
    """One tool a capability may offer. `id` is stable: approvals and overrides reference it, never
    the name the model sees (a rename must not drop an approval gate)."""

    id: str
    description: str
    name: str = ""  # default name the model sees; empty = the id
    side_effecting: bool = False
    # Executed by the model provider (a native tool): nothing runs here, so nothing can be gated.
    provider_executed: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.id)

    @classmethod
    def from_function(
        cls, function: Callable[..., Any], *, id: str | None = None, side_effecting: bool = False
    ) -> ToolDecl:
        """Declare a tool written in this repository from its own docstring (Args/Returns sections)."""
        tool_id = id or function.__name__
        tool = Tool(function, name=tool_id)
        return cls(id=tool_id, description=tool.tool_def.description or "", side_effecting=side_effecting)

    def summary(self) -> str:
        """The first sentence of the description (what the Builder shows beside the approval box)."""
        text = self.description.removeprefix("<summary>").split("</summary>")[0]
        return text.split("\n\n")[0].strip()


@dataclass(frozen=True)
class KeyRequirement:
    """A secret the binding must name (`secret_id`) when `required_when(config)` holds."""

    kind: str  # agenticos.models.SecretKind value
    description: str
    required_when: Callable[[BaseModel], bool] = lambda config: True
    # Shown in the catalog: "always" or a sentence saying when.
    when: str = "always"
    # Other kinds its picker offers too (the coding agent's Codex takes a ChatGPT sign-in as well as a key).
    also: tuple[str, ...] = ()

    @property
    def kinds(self) -> tuple[str, ...]:
        return (self.kind, *self.also)

    def applies(self, config: BaseModel) -> bool:
        return bool(self.required_when(config))


class NoConfig(BaseModel):
    """For capabilities without settings: anything but an empty object is a publish error."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class BuildContext:
    """What `build` gets for one run. Identifiers only, plus a lazy way to the bound secret.

    `secret_value` reveals the bound secret from the vault when called (sync ORM: from async code wrap it
    in `sync_to_async`). It is None when the binding names no secret. Never log or return its result.
    `build` runs synchronously on the run's assembly thread, so it may read the database (org-scoped).
    """

    binding: CapabilityBinding
    config: BaseModel
    deps: RunDeps
    organization_id: str
    secret_value: Callable[[], str] | None = None
    granted_scopes: frozenset[str] = frozenset()
    # The frozen spec being assembled (collections, context files, skills it references).
    spec: AgentSpec | None = None


@dataclass(frozen=True)
class Capability:
    """One catalog entry. Adding one touches one package folder and one line in `registry.BUILTIN`."""

    id: str
    name: str
    category: Category
    description: str
    # Required on purpose: tools=() says "no tools on purpose" (thinking) instead of omitting the argument.
    tools: tuple[ToolDecl, ...]
    build: Callable[[BuildContext], list[Built]]
    scopes: tuple[str, ...] = ()
    key: KeyRequirement | None = None
    config_model: type[BaseModel] = NoConfig
    voice: Voice = "live"
    selectable: bool = True
    # Enabled in the starter template (badge "Recommended" in the Builder).
    recommended: bool = False
    # One of the run-tuning capabilities folded under "Advanced" in the Builder.
    advanced: bool = False
    # What enabling it gives, in one line, for "Your setup" when an agent lacks it.
    offers: str = ""
    # Two or three things a person might ask that use it (the Builder card's "For example").
    examples: tuple[str, ...] = field(default=())
    # The limits a builder must know, in plain words, starting "It never": only what the code enforces.
    never_does: str = ""
    # Checks that need the binding as well as the config (e.g. approval with a provider-executed method).
    binding_check: Callable[[Any, Any], list[str]] | None = None
    # Checks of the config that only publishing makes (the run checks the same thing again when it connects):
    # (field of the config, message) pairs, e.g. a server address outside the operator's list. Unlike
    # `binding_check` it never stops a run at assembly.
    publish_check: Callable[[Any], list[tuple[str, str]]] | None = None
    # Publish's checks that need the publishing organization as well (e.g. a sandbox `service` binding with no
    # usable connection of theirs): (field of the config, message) pairs, for an enabled binding only.
    organization_check: Callable[[Any, Any], list[tuple[str, str]]] | None = None
    # Why the capability declares the tools it does, when that is not obvious: required (tests) for every
    # `tools=()` capability ("no tools on purpose", or tools that come from data such as MCP servers), and
    # for one the catalog lists without tools that still has one (clock). Served and shown on the card.
    tools_note: str = ""
    # Capabilities the Builder switches on along with this one, when the agent has no binding of theirs yet
    # (console/builder.py): Visuals brings Charts.
    binds_with: tuple[str, ...] = ()
    # What it does at the run's turning points besides its tools (capabilities/lifecycle.py): the runner calls
    # these for every registered capability and names none of them.
    hooks: RunHooks = NO_HOOKS

    def tool(self, tool_id: str) -> ToolDecl | None:
        return next((t for t in self.tools if t.id == tool_id), None)

    def tool_ids(self) -> set[str]:
        return {t.id for t in self.tools}

    def config_schema(self) -> dict[str, Any]:
        return self.config_model.model_json_schema()

    def catalog_entry(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "description": self.description,
            "offers": self.offers,
            "examples": list(self.examples),
            "never_does": self.never_does,
            "tools": [
                {
                    "id": t.id,
                    "name": t.name,
                    "summary": t.summary(),
                    "description": t.description,
                    "side_effecting": t.side_effecting,
                    "provider_executed": t.provider_executed,
                }
                for t in self.tools
            ],
            "tools_note": self.tools_note,
            "scopes": list(self.scopes),
            "key": None
            if self.key is None
            else {"kind": self.key.kind, "kinds": list(self.key.kinds), "description": self.key.description,
                  "required_when": self.key.when},
            "config_schema": self.config_schema(),
            "voice": self.voice,
            "selectable": self.selectable,
            "recommended": self.recommended,
            "advanced": self.advanced,
        }


def enum_labels(labels: dict[str, str]) -> dict[str, Any]:
    """`json_schema_extra` for a Literal field: the Builder shows these labels instead of raw values."""
    return {"x-enum-labels": dict(labels)}


# The Tools built for module-level tool functions, per process: (function, max_retries) → Tool. Building a Tool
# reads its function's signature and docstring into a JSON schema (pydantic-ai's `function_schema`), half of a
# run's assembly (~2 ms of CPU for the clock's one tool) and the same on every run. A Tool holds nothing of a run
# (the run's state travels in its RunContext), and pydantic-ai shares one Tool between agents by design. Only
# functions defined at a module's top level are kept: a closure is another function on every build.
_tools: dict[tuple[Callable[..., Any], int], Tool[Any]] = {}
_tools_lock = threading.Lock()


def _module_level(function: Callable[..., Any]) -> bool:
    return (inspect.isfunction(function) and function.__closure__ is None
            and "<locals>" not in function.__qualname__ and "<lambda>" not in function.__qualname__)


def function_toolset(
    functions: Sequence[Callable[..., Any]], *, max_retries: int = 1
) -> FunctionToolset[Any]:
    """A toolset of this repository's tool functions, each registered under its function name (= its id)."""
    functions = list(functions)
    if not all(_module_level(function) for function in functions):
        return FunctionToolset(functions, max_retries=max_retries)
    with _tools_lock:
        missing = [function for function in functions if (function, max_retries) not in _tools]
    if missing:
        # Built the way FunctionToolset builds them (its defaults, its max_retries on each Tool): a new toolset's
        # add_tool then changes nothing on the shared Tool (its max_retries is set, the toolset has no metadata).
        built = FunctionToolset(missing, max_retries=max_retries).tools.values()
        with _tools_lock:
            for function, tool in zip(missing, built, strict=True):
                _tools.setdefault((function, max_retries), tool)
    with _tools_lock:
        tools = [_tools[(function, max_retries)] for function in functions]
    return FunctionToolset(tools, max_retries=max_retries)
