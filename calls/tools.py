"""The tools a call runs itself: the agent's `live` capabilities (capability-catalog, "La columna Voz").

They are built by the one registry exactly as for a text run (`capabilities.registry.build_for_run`: config,
scopes, keys, renames, each tool's approval rule) and called through the same gate the text runner puts around
its toolset (`agents.runner.gate.ApprovalGate`), so a tool that needs a person's approval raises the same
`ApprovalRequired` here as there. What differs is only what a call is:

- its tools are fixed when it connects, so their definitions go into the `session.update` and `tool_search`
  is dropped (the catalog's "descartada"): MCP tools are given directly, never deferred;
- skills are "adaptada": a skill's instructions load on demand through `load_skill`, without their read tool
  (a call has no loaded-capability state for `read_skill_resource` to read from);
- `thinking` is "mapeada" (the realtime model's reasoning setting, calls.service), `guardrails` screens the
  call's transcripts and tool results (calls.consumers), `ask_user` is the call view's card;
- `hand_off` and `never` capabilities are not built here at all.

A call is a run (calls.service.start_call_run): the tools see the call's run id, written before the model can
call any of them, the caller as their person, and the call's conversation — so a tool that reads its run (its
agent, its person, its environment), meters on its ledger or files what it makes under it (an image, a clip, a
page) works in a call as in a text run. Each call of a tool is a `ToolCall` row of that run (calls.consumers).

Hand-written around the toolset rather than through `pydantic_ai.Agent`: a realtime call's model is not a
pydantic-ai model (calls.realtime), so there is no agent run whose tool manager would validate and call; what
the tool manager does for one call — validate the arguments, call the toolset, turn `ModelRetry` into a message
for the model — is the few lines of `ToolBox.call`.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry
from pydantic_ai.messages import ToolReturn
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_ai.usage import RunUsage
from pydantic_core import to_json

from agenticos.errors import Invalid
from agenticos.tenancy import Actor, parse_uuid
from agents.models import ModelProfile, Surface
from agents.providers import build_model
from agents.run_handle import RunDeps
from agents.runner.gate import ApprovalGate
from agents.spec import AgentSpec
from calls.realtime import CallTool
from capabilities import registry
from knowledge import skills as skill_store

logger = logging.getLogger(__name__)

LOAD_SKILL = "load_skill"
# Live capabilities a call treats apart (above): never built into the call's toolset.
TREATED_APART = frozenset({"thinking", "guardrails", "ask_user", "skills"})
MAX_OUTPUT_CHARS = 16_000  # what one function output may carry back into the realtime conversation
TOOL_FAILED = "The tool failed; tell the person it did not work this time."


@dataclass(frozen=True)
class Outcome:
    """One tool call's end: `done` (output for the model), `approval` (waits for a person), `error`."""

    status: str
    output: str = ""


def live_spec(spec: AgentSpec) -> AgentSpec:
    """The spec as a call builds it: only its `live` capabilities, less those a call treats apart."""
    kept = []
    for binding in spec.capabilities:
        capability = registry.find(binding.id)
        if capability is None or capability.voice != "live" or binding.id in TREATED_APART:
            continue
        kept.append(binding)
    custom = registry.find("custom_tools")
    custom_ids = spec.custom_tool_ids if custom is not None and custom.voice == "live" else []
    return spec.model_copy(update={"capabilities": kept, "custom_tool_ids": custom_ids})


@dataclass
class ToolBox:
    """The call's own tools, built once when it connects (sync: `build_toolbox`), opened on the call's loop
    (`open`), called one function call at a time (`call`)."""

    toolset: AbstractToolset[Any] | None
    context: RunContext[Any] | None
    approval: dict[str, str] = field(default_factory=dict)
    capability_of: dict[str, str] = field(default_factory=dict)
    skills: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (description, instructions)
    tools: dict[str, ToolsetTool[Any]] = field(default_factory=dict)
    _entered: bool = False

    async def open(self) -> None:
        if self.toolset is None or self.context is None:
            return
        await self.toolset.__aenter__()
        self._entered = True
        self.tools = await self.toolset.get_tools(self.context)

    async def close(self) -> None:
        if self._entered and self.toolset is not None:
            self._entered = False
            await self.toolset.__aexit__(None, None, None)

    def session_tools(self) -> tuple[CallTool, ...]:
        tools = [CallTool(name=name, description=tool.tool_def.description or "",
                          parameters=tool.tool_def.parameters_json_schema)
                 for name, tool in self.tools.items()]
        if self.skills:
            listed = "; ".join(f"{name}: {description}" for name, (description, _) in sorted(self.skills.items()))
            tools.append(CallTool(
                name=LOAD_SKILL,
                description="Load one of your skills' instructions when the conversation needs it, then follow "
                            f"them. Your skills: {listed}",
                parameters={"type": "object", "properties": {"name": {"type": "string", "enum": sorted(self.skills)}},
                            "required": ["name"]}))
        return tuple(tools)

    def has(self, name: str) -> bool:
        return name in self.tools or (name == LOAD_SKILL and bool(self.skills))

    def needs_approval(self, name: str) -> bool:
        return self.approval.get(name) == "required"

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, approved: bool = False) -> Outcome:
        if name == LOAD_SKILL and self.skills:
            skill = self.skills.get(str(arguments.get("name") or ""))
            if skill is None:
                return Outcome("error", _error(f"There is no skill of that name; yours: {', '.join(self.skills)}."))
            return Outcome("done", json.dumps({"instructions": skill[1][:MAX_OUTPUT_CHARS]}))
        tool = self.tools.get(name)
        if tool is None or self.toolset is None or self.context is None:
            return Outcome("error", _error(f"There is no tool {name!r}."))
        ctx = replace(self.context, tool_call_id=call_id, tool_name=name, tool_call_approved=approved,
                      max_retries=tool.max_retries, retry=0)
        try:
            validated = tool.args_validator.validate_python(arguments, context=ctx.validation_context)
            result = await self.toolset.call_tool(name, validated, ctx, tool)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                                 for e in exc.errors(include_url=False)[:5])
            return Outcome("error", _error(f"Call again with correct arguments ({problems})."))
        except ApprovalRequired:
            return Outcome("approval")
        except ModelRetry as exc:
            return Outcome("error", _error(str(exc)))
        except CallDeferred:
            return Outcome("error", _error("That tool cannot run inside a call."))
        except Exception as exc:  # a tool's own failure ends this call of it, never the voice call
            logger.warning("call tool %s failed: %s", name, type(exc).__name__)
            return Outcome("error", _error(TOOL_FAILED))
        return Outcome("done", as_output(result))


def _error(message: str) -> str:
    return json.dumps({"error": message})


def as_output(result: Any) -> str:
    """A tool's return value as the text of a `function_call_output`."""
    if isinstance(result, ToolReturn):
        result = result.return_value
    text = result if isinstance(result, str) else to_json(result, fallback=str).decode()
    return text[:MAX_OUTPUT_CHARS]


def _call_skills(organization_id: str, spec: AgentSpec) -> dict[str, tuple[str, str]]:
    if not any(b.id == "skills" and b.enabled for b in spec.capabilities):
        return {}
    return {skill.name: (skill.description, skill.body)
            for skill in skill_store.bound_skills(organization_id, list(spec.skill_ids))}


def build_toolbox(*, actor: Actor, spec: AgentSpec, agent_id: Any, version_id: Any, conversation_id: Any,
                  call_id: uuid.UUID) -> ToolBox:
    """The call's live tools, built by the one registry. Sync (ORM, vault): from the consumer through
    `database_sync_to_async`."""
    org_id = str(actor.organization.pk)
    deps = RunDeps(run_id=str(call_id), organization_id=org_id, agent_id=str(agent_id), version_id=str(version_id),
                   surface=Surface.WEB, conversation_id=str(conversation_id),
                   user_id=actor.user.pk if actor.user is not None else None,
                   can_ask_user=False)
    skills = _call_skills(org_id, spec)
    built = registry.build_for_run(live_spec(spec), deps, org_id)
    toolsets = list(built.toolsets)
    for capability in built.capabilities:
        toolset = capability.get_toolset()
        if isinstance(toolset, AbstractToolset):
            toolsets.append(toolset)
    if not toolsets:
        return ToolBox(toolset=None, context=None, skills=skills)
    approval: dict[str, str] = {name: route.approval for name, route in built.tools.items()}
    gated = ApprovalGate(approval=approval).get_wrapper_toolset(CombinedToolset(toolsets))
    context = RunContext(deps=deps, model=build_model(text_profile(actor, spec)), usage=RunUsage(),
                         run_id=str(call_id), conversation_id=str(conversation_id))
    return ToolBox(toolset=gated, context=context, approval=approval,
                   capability_of={name: route.capability_id for name, route in built.tools.items()}, skills=skills)


def text_profile(actor: Actor, spec: AgentSpec) -> ModelProfile:
    """The agent's text model, which a tool may use as a text run's tools do (a query's rewrite). One deleted
    since the version was published (or never a chat profile of this organization) refuses the call, readably,
    before the provider is called."""
    wanted = parse_uuid(str(spec.model_profile_id or ""))
    profile = (ModelProfile.objects.select_related("secret")
               .filter(pk=wanted, organization=actor.organization, kind=ModelProfile.Kind.CHAT).first()
               if wanted is not None else None)
    if profile is None:
        raise Invalid("The text model this agent's version names no longer exists; choose another in the "
                      "Builder and publish.", code="no_text_model")
    return profile
