"""Building delegates: a published agent's frozen spec, an inline specialist, or one the model writes.

Every delegate is built here rather than by the library, because a delegate the library compiled for itself
would sit outside this deployment's model profiles, its vault and the run's budget guard. Each one is a
pydantic-ai `Agent` assembled the way the runner assembles a run (`registry.build_for_run`, the model
profile, `ApprovalGate` with the delegate's own approval table) with a `DelegateGuard` in place of the run's
`BudgetGuard`: every request checks the parent run's caps (and the delegate's own), and its spend goes into
the parent run's ledger and totals — one run row — with the ledger row attributed to the delegate's agent.

Synchronous: called from the capability's `build`, on the run's assembly (DB) thread.
"""

from __future__ import annotations

import copy
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

from agents.run_handle import RunDeps
from governance import budgets, pricing

if TYPE_CHECKING:
    from agents.spec import AgentSpec
    from capabilities.lifecycle import RunHandle

logger = logging.getLogger(__name__)

# The delegation a model request belongs to (task id, depth): set by the toolset around each delegation, so
# the guard can add a request's tokens and cost to that delegation's panel. Context variables follow the
# delegation into its run (sync: the same task; background: copied into the task the library creates).
CURRENT_TASK: ContextVar[str | None] = ContextVar("agenticos_delegation_task", default=None)
CURRENT_DEPTH: ContextVar[int] = ContextVar("agenticos_delegation_depth", default=0)
# Whether the delegation being run is in the background: its gated tools then refuse instead of parking.
BACKGROUND: ContextVar[bool] = ContextVar("agenticos_delegation_background", default=False)

BACKGROUND_GATED = (
    "Not run: {tool} needs a person's approval, and a delegation running in the background cannot stop to "
    "ask for one. Say so in your answer: the agent that delegated this should delegate it with mode=\"sync\"."
)


class UnmeteredDelegation(Exception):  # noqa: N818 (a refusal with a reason)
    """A delegate asked for a model request outside a run: nothing could meter it, so nothing is sent."""


class DelegateCapExceeded(budgets.BudgetExceeded):
    """The delegate's own monthly cap bound (not the run's): the parent is told, and goes on."""


@dataclass
class DelegateUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost: Decimal = Decimal("0")
    partial: bool = False


@dataclass
class DelegateGuard(AbstractCapability[Any]):
    """The run's budget guard, for a delegate's model requests (see the module docstring)."""

    execution: RunHandle | None = field(repr=False)
    agent_id: str | None
    agent_label: str
    agent_budget: Decimal | None
    free: bool
    # task id → what that delegation spent (the panels read it); shared by every delegate of one run.
    usage: dict[str, DelegateUsage] = field(default_factory=dict, repr=False)

    async def wrap_model_request(self, ctx, *, request_context, handler):
        ex = self.execution
        if ex is None:
            raise UnmeteredDelegation("A delegate runs only inside a run, whose budget meters it.")
        await ex.db(self._check)
        await ex.reaching_model()
        response = await handler(request_context)
        entry = self._entry(response)
        ex.unrecorded_spend.append(entry)
        # Recorded at once: the parent goes on after this delegate answers, and a worker may die meanwhile.
        await ex.db(ex.record_spend)
        task_id = CURRENT_TASK.get()
        if task_id is not None:
            spent = self.usage.setdefault(task_id, DelegateUsage())
            spent.input_tokens += entry.input_tokens
            spent.output_tokens += entry.output_tokens
            spent.requests += 1
            spent.cost += entry.cost_usd
            spent.partial = spent.partial or entry.is_partial
        return response

    def _check(self) -> None:
        ex = self.execution
        assert ex is not None
        ex.record_spend()
        run = ex.run
        caps = budgets.caps_for(organization=run.organization, agent_id=run.agent_id,
                                agent_budget=ex.spec.budget.monthly_usd, embed_id=run.embed_id)
        bound = budgets.first_exhausted(caps)
        if bound is not None:
            raise budgets.BudgetExceeded(bound)
        if self.agent_budget is not None and self.agent_id and self.agent_id != str(run.agent_id):
            own = budgets.Cap(f"the delegate {self.agent_label}'s monthly budget", Decimal(self.agent_budget),
                              budgets.agent_spent(self.agent_id))
            if own.exhausted:
                raise DelegateCapExceeded(own)

    def _entry(self, response):
        from governance.pricing import price

        ex = self.execution
        assert ex is not None
        run = ex.run
        cost, partial = price(response, free=self.free)
        usage = response.usage
        return budgets.spend_entry(
            organization_id=run.organization_id, agent_id=self.agent_id or run.agent_id, run_id=run.pk,
            embed_id=run.embed_id, surface=run.surface, kind="model_request", model=response.model_name or "",
            input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0, cost=cost,
            partial=partial,
        )


@dataclass
class DelegateGate(AbstractCapability[Any]):
    """The run's approval gate for a delegate (its own spec's table). In a sync delegation a gated call
    parks the whole run like the parent's own would; in a background one it is refused with a tool result,
    because by the time it asks, the tool call that started it has returned and nothing is left to park."""

    approval: dict[str, str] = field(default_factory=dict)

    def get_wrapper_toolset(self, toolset):
        return _DelegateApproval(toolset, approval_required_func=self._needs_approval)

    def _needs_approval(self, ctx, tool_def, tool_args) -> bool:
        return self.approval.get(tool_def.name) == "required"


class _DelegateApproval(ApprovalRequiredToolset[Any]):
    async def call_tool(self, name, tool_args, ctx, tool):
        if BACKGROUND.get() and not ctx.tool_call_approved and self.approval_required_func(ctx, tool.tool_def,
                                                                                           tool_args):
            return BACKGROUND_GATED.format(tool=name)
        return await super().call_tool(name, tool_args, ctx, tool)


@dataclass
class BuiltDelegate:
    """One delegate ready for the library: its agent, its own deps, what the prompt says about it."""

    name: str
    description: str
    agent: Agent[RunDeps, Any]
    deps: RunDeps
    kind: str  # "agent" | "inline" | "dynamic" | "remote" (an A2A remote agent, capabilities/remote_agents)
    mode: str | None = None
    agent_id: str | None = None
    max_steps: int = 10
    # Gated tool names of this delegate (a background delegation refuses them instead of parking).
    gated: frozenset[str] = frozenset()
    tool_ids: dict[str, str] = field(default_factory=dict)
    tool_capabilities: dict[str, str] = field(default_factory=dict)

    def clone_deps(self) -> RunDeps:
        # A new instance per delegation (the library's protocol asks for one); build-time scratch (a workspace
        # id, a spill store) is the delegate's and is shared.
        return copy.copy(self.deps)


@dataclass
class DelegationContext:
    """What building delegates of one run needs: the run (or nothing outside a run), the parent's deps."""

    execution: RunHandle | None
    parent_deps: RunDeps
    organization_id: str
    # Levels of delegation left under the delegates built here (0: they are built without delegation).
    levels_left: int
    usage: dict[str, DelegateUsage] = field(default_factory=dict)
    # capability id → the parent's binding, lent to every delegate (share_with_delegates).
    shared: list[Any] = field(default_factory=list)


def _delegate_deps(dctx: DelegationContext, *, agent_id: str, version_id: str) -> RunDeps:
    parent = dctx.parent_deps
    scratch: dict[str, Any] = {
        "delegation_levels_left": dctx.levels_left,
        "delegation_usage": dctx.usage,
    }
    # No conversation: a delegate's planning, memory or conversation search must not read or write the
    # parent's conversation as if it were its own. It cannot ask the person directly (ask_parent is its way).
    return RunDeps(run_id=parent.run_id, organization_id=parent.organization_id, agent_id=agent_id,
                   version_id=version_id, surface=parent.surface, conversation_id=None, user_id=parent.user_id,
                   can_ask_user=False, scratch=scratch, execution=dctx.execution)


def _run_for_profile(dctx: DelegationContext) -> Any:
    return dctx.execution.run if dctx.execution is not None else SimpleNamespace(organization_id=dctx.organization_id)


def build_agent(dctx: DelegationContext, spec: AgentSpec, *, name: str, description: str, kind: str,
                agent_id: str | None, version_id: str, mode: str | None = None) -> BuiltDelegate:
    """A delegate from a spec (a published version's, or one made from an inline specialist)."""
    from agents.run_handle import model_source
    from capabilities import registry

    spec = _with_shared(spec, dctx.shared)
    deps = _delegate_deps(dctx, agent_id=agent_id or dctx.parent_deps.agent_id, version_id=version_id)
    assembly = model_source()
    profile = assembly.model_profile(_run_for_profile(dctx), spec)
    model = assembly.build_model(profile)
    built = registry.build_for_run(spec, deps, dctx.organization_id)
    approval: dict[str, str] = {route_name: route.approval for route_name, route in built.tools.items()}
    guard = DelegateGuard(execution=dctx.execution, agent_id=agent_id, agent_label=name,
                          agent_budget=spec.budget.monthly_usd, free=pricing.is_free(model), usage=dctx.usage)
    sections = [part for part in (spec.instructions.strip(), built.instructions) if part]
    agent: Agent[RunDeps, Any] = Agent(
        model,
        output_type=[str, DeferredToolRequests],
        instructions="\n\n".join(sections),
        deps_type=RunDeps,
        toolsets=built.toolsets,
        capabilities=[guard, DelegateGate(approval=approval), *built.capabilities],
        model_settings=assembly.model_settings(profile, spec),
        retries=2,
        name=name,
    )
    return BuiltDelegate(
        name=name, description=description, agent=agent, deps=deps, kind=kind, mode=mode, agent_id=agent_id,
        max_steps=spec.max_steps, gated=frozenset(n for n, mode_ in approval.items() if mode_ == "required"),
        tool_ids={n: r.tool_id for n, r in built.tools.items()},
        tool_capabilities={n: r.capability_id for n, r in built.tools.items()},
    )


def _with_shared(spec: AgentSpec, shared: list[Any]) -> AgentSpec:
    """The delegate's own spec plus the parent's bindings named in share_with_delegates (never subagents: a
    spec stored before publish refused it cannot widen a delegate either). The delegate's own binding of a
    shared capability gives way to the parent's, which is what was lent."""
    lent = [b for b in shared if b.id != "subagents"]
    if not lent:
        return spec
    ids = {b.id for b in lent}
    return spec.model_copy(update={"capabilities": [b for b in spec.capabilities if b.id not in ids] + lent})


def published_delegates(dctx: DelegationContext, parent_spec: AgentSpec) -> tuple[list[BuiltDelegate], list[str]]:
    """The spec's `subagents`: each one's production version, of this organization only. A delegate gone
    since publish (deleted, unpublished, its version unloadable) is left out and named in the second list."""
    from agents.models import Environment
    from agents.spec import load_spec

    out: list[BuiltDelegate] = []
    missing: list[str] = []
    ids = [s.agent_id for s in parent_spec.subagents]
    envs = {
        str(env.agent_id): env
        for env in Environment.objects.filter(
            agent__organization_id=dctx.organization_id, agent_id__in=_uuids(ids), name="production"
        ).select_related("version", "agent")
    }
    for sub in parent_spec.subagents:
        env = envs.get(str(sub.agent_id))
        if env is None:
            missing.append(sub.name)
            continue
        try:
            spec = load_spec(env.version.spec)
        except Exception:  # a version that no longer loads: left out, not a failed run
            logger.warning("delegate %s: its published version does not load", sub.agent_id, exc_info=True)
            missing.append(sub.name)
            continue
        try:
            out.append(build_agent(dctx, spec, name=sub.name, description=sub.description or spec.description
                                   or env.agent.name, kind="agent", agent_id=str(env.agent_id),
                                   version_id=str(env.version_id), mode=sub.mode))
        except Exception as exc:  # its model profile is gone, say: the others still work
            logger.warning("delegate %s could not be built: %s", sub.agent_id, exc)
            missing.append(sub.name)
    return out, missing


def inline_delegates(dctx: DelegationContext, specialists: list[Any]) -> tuple[list[BuiltDelegate], list[str]]:
    from agents.spec import AgentSpec

    out: list[BuiltDelegate] = []
    missing: list[str] = []
    parent = dctx.parent_deps
    for item in specialists:
        spec = AgentSpec(name=item.name, instructions=item.instructions, model_profile_id=item.model_profile_id,
                         max_steps=item.max_steps)
        try:
            out.append(build_agent(dctx, spec, name=item.name, description=item.description, kind="inline",
                                   agent_id=None, version_id=parent.version_id, mode=item.mode))
        except Exception as exc:
            logger.warning("inline specialist %s could not be built: %s", item.name, exc)
            missing.append(item.name)
    return out, missing


@dataclass
class DynamicFactory:
    """Builds the specialists the model writes (allow_dynamic): instructions and one of the organization's
    model profiles, named by its label, and nothing else — no tools, no knowledge, no delegates. Built here
    (the library's `default_agent_factory`) so its requests are priced and counted by the run's guard."""

    dctx: DelegationContext
    # profile label → (the profile's model, whether it is free)
    profiles: dict[str, tuple[Any, bool]]

    @property
    def models(self) -> list[str]:
        return sorted(self.profiles)

    def build(self, config: Any) -> Agent[RunDeps, Any]:
        label = str(config.get("model") or "")
        model, free = self.profiles[label]  # the library checked it against `models` first
        guard = DelegateGuard(execution=self.dctx.execution, agent_id=None, agent_label=config["name"],
                              agent_budget=None, free=free, usage=self.dctx.usage)
        return Agent(model, output_type=[str, DeferredToolRequests], instructions=config["instructions"],
                     deps_type=RunDeps, capabilities=[guard, DelegateGate()], retries=2, name=config["name"])

    def deps(self) -> RunDeps:
        parent = self.dctx.parent_deps
        return _delegate_deps(self.dctx, agent_id=parent.agent_id, version_id=parent.version_id)


def dynamic_factory(dctx: DelegationContext) -> DynamicFactory | None:
    from agents.models import ModelProfile
    from agents.run_handle import model_source

    assembly = model_source()

    profiles: dict[str, tuple[Any, bool]] = {}
    rows = ModelProfile.objects.filter(organization_id=dctx.organization_id, kind=ModelProfile.Kind.CHAT)
    for row in rows.order_by("label")[:10]:
        try:
            profile = assembly.model_profile(_run_for_profile(dctx),
                                            SimpleNamespace(model_profile_id=str(row.pk)))  # type: ignore[arg-type]
            model = assembly.build_model(profile)
        except Exception as exc:  # a profile without a usable key is simply not offered
            logger.info("model profile %s not offered to dynamic specialists: %s", row.pk, exc)
            continue
        profiles[row.label] = (model, pricing.is_free(model))
    return DynamicFactory(dctx=dctx, profiles=profiles) if profiles else None


def _uuids(values: list[str]) -> list[Any]:
    import uuid

    out = []
    for value in values:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return out
