"""The `custom_tools` capability: each assigned CustomTool becomes one function tool named by its alias.

Which tools: the spec's `custom_tool_ids` plus the binding's `config.tool_ids`. Approval is per stable tool
id — the alias — through `config.tool_approval[alias]`, falling back to the binding's `approval`; the gate
is an `ApprovalRequiredToolset` inside this capability, so the runner parks the call like any other.
Credentials are revealed while the run is assembled (on the run's DB thread) and live only in the
closures of this run's tools; the model sees the tool's credential *id* nowhere but its own description.

A big response reaches the model as a preview and a handle for `read_tool_result`, which this capability
declares (the same declaration as tool_output_limits'), so a binding gates or renames it like any other tool.
With tool_output_limits bound too, its reader is the one offered: both read the same run store.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.tools import Tool
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability
from capabilities.custom_tools import runtime
from capabilities.custom_tools.schema import Definition, json_schema, warnings_text
from capabilities.tool_output_limits.capability import READ_TOOL

ApprovalMode = Any


class CustomToolsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_ids: list[str] = Field(default_factory=list, description="Custom tools this agent may call (ids).")
    tool_approval: dict[str, str] = Field(
        default_factory=dict, description="Per tool alias: required | never | default (overrides `approval`)."
    )
    spill_over_chars: int = Field(default=20_000, ge=2_000, le=1_000_000,
                                  description="Responses longer than this reach the agent as a preview + handle.")


def definition_of(tool: Any) -> Definition:
    return Definition.model_validate({
        "name": tool.name, "alias": tool.alias, "description": tool.description, "usage_notes": tool.usage_notes,
        "method": tool.method, "url": tool.url, "parameters": tool.parameters, "auth": tool.auth or {},
        "tags": tool.tags, "timeout_secs": tool.timeout_secs,
    })


def agent_description(definition: Definition, warnings: list[dict[str, Any]], credential_id: str | None) -> str:
    parts = [definition.description.strip() or definition.name]
    if definition.usage_notes.strip():
        parts.append(definition.usage_notes.strip())
    text = warnings_text(warnings)
    if text:
        parts.append(text)
    parts.append(f"Makes one {definition.method} request to {definition.url}."
                 + (f" Authenticated with credential {credential_id} (you never see its value)."
                    if credential_id else ""))
    parts.append("Returns {status, body}; a big body arrives as a preview and a handle for read_tool_result.")
    return "\n\n".join(parts)


def _tool_ids(ctx: BuildContext, config: CustomToolsConfig) -> list[uuid.UUID]:
    from agents.models import AgentVersion

    raw = list(config.tool_ids)
    try:
        version_pk = uuid.UUID(str(ctx.deps.version_id))
    except ValueError:
        version_pk = None
    if version_pk is not None:
        spec = (AgentVersion.objects.filter(pk=version_pk, agent__organization_id=ctx.organization_id)
                .values_list("spec", flat=True).first()) or {}
        raw += list(spec.get("custom_tool_ids") or [])
    ids = []
    for value in raw:
        try:
            ids.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return list(dict.fromkeys(ids))


def _make_call(definition: Definition, secret: str | None):
    async def call(ctx: RunContext[Any], **args: Any) -> Any:
        outcome = await runtime.invoke(definition, args, secret)
        if outcome.kind == "ok":
            return outcome.for_model()
        if outcome.kind == "retry":
            return failures.retry(ctx, outcome.message)
        if outcome.kind == "transient":
            return failures.transient(ctx, outcome.message)
        if outcome.kind == "refuse":
            return failures.refuse(outcome.message)
        return failures.bad_news(outcome.message)

    return call


def build(ctx: BuildContext) -> list[Built]:
    from pydantic_ai_harness.tool_output_limits import indented_json

    from agenticos import vault
    from capabilities.models import CustomTool
    from capabilities.tool_output_limits.capability import ToolOutputLimitsConfig, limits_for_run

    assert isinstance(ctx.config, CustomToolsConfig)
    ids = _tool_ids(ctx, ctx.config)
    if not ids:
        return []
    rows = list(CustomTool.objects.filter(organization_id=ctx.organization_id, pk__in=ids)
                .select_related("credential").order_by("alias"))
    tools: list[Tool[Any]] = []
    for row in rows:
        definition = definition_of(row)
        secret = vault.reveal(row.credential) if row.credential_id else None
        tool = Tool.from_schema(
            _make_call(definition, secret),
            name=row.alias,
            description=agent_description(definition, row.warnings, str(row.credential_id or "") or None),
            json_schema=json_schema(definition),
            takes_ctx=True,
        )
        # A GET only reads: a run resumed after its worker died calls it again rather than telling the model
        # it may not have happened (agents/runner/checkpoint.py). Every other method may act, so it is not.
        tool.metadata = {"read_only": definition.method == "GET"}
        tools.append(tool)
    if not tools:
        return []
    approvals = dict(ctx.config.tool_approval)
    default = ctx.binding.approval

    def needs_approval(run_ctx: RunContext[Any], tool_def: Any, args: dict[str, Any]) -> bool:
        return approvals.get(tool_def.name, default) == "required"

    toolset = ApprovalRequiredToolset(FunctionToolset(tools, max_retries=2, id="custom_tools"),
                                      approval_required_func=needs_approval)
    limits = limits_for_run(
        ctx.deps,
        ToolOutputLimitsConfig(action="spill", threshold=ctx.config.spill_over_chars,
                               max_chars=ctx.config.spill_over_chars),
        tool_filter=[t.name for t in tools],
        # JSON one value per line, so read_tool_result can page and grep a spilled response by line.
        serializer=indented_json,
        offer_reader=not _reader_offered_elsewhere(ctx),
        id="custom_tools_output_limits",
    )
    return [toolset, limits]


def _reader_offered_elsewhere(ctx: BuildContext) -> bool:
    """Whether tool_output_limits, bound and enabled in this spec, offers the reader under the name this binding
    gives it (one tool, and it reads the same run store); under another name each binding offers its own."""
    def name(binding: Any) -> str:
        override = binding.tool_overrides.get(READ_TOOL.id)
        return override.name if override is not None and override.name else READ_TOOL.name

    return ctx.spec is not None and any(b.id == "tool_output_limits" and name(b) == name(ctx.binding)
                                        for b in ctx.spec.enabled_bindings())


CAPABILITY = Capability(
    id="custom_tools",
    name="Custom tools",
    category="utility",
    description="Calls the REST tools defined for this organization, with their stored credentials.",
    offers="calls to your own REST APIs defined as named tools",
    examples=(
        "Look up the customer in our CRM",
        "Create a ticket in our tracker",
        "Check the shipping status of order 4512.",
    ),
    never_does=(
        "It never shows the agent a credential's value (it is removed from responses too), calls only this "
        "organization's tools, and never reaches cloud-metadata addresses, or private ones unless an "
        "operator allowed that host."
    ),
    tools=(READ_TOOL,),
    tools_note=("Its tools are this organization's custom tools assigned to the agent, each named and described "
                "by its own definition, plus one that reads a response too big to show whole."),
    config_model=CustomToolsConfig,
    build=build,
)
