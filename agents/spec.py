"""AgentSpec: an agent as data. References, never secret values.

Evolution is additive: every new field gets a default so an old frozen version still loads.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agenticos.money import MAX_MONTHLY_USD  # re-exported: the spec's budget ceiling is the kernel's

SPEC_VERSION = 1

ApprovalMode = Literal["default", "required", "never"]


class _Strict(BaseModel):
    # Unknown fields are refused so a typo in YAML does not silently vanish.
    model_config = ConfigDict(extra="forbid")


class ToolOverride(_Strict):
    name: str | None = None
    description: str | None = None


class CapabilityBinding(_Strict):
    id: str
    config: dict[str, Any] = Field(default_factory=dict)
    approval: ApprovalMode = "default"
    tool_approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    tool_overrides: dict[str, ToolOverride] = Field(default_factory=dict)
    secret_id: str | None = None
    enabled: bool = True


class ModelSettingsSpec(_Strict):
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=200_000)
    top_p: float | None = Field(default=None, ge=0, le=1)
    timeout_secs: float | None = Field(default=None, gt=0, le=600)


# The largest amount every budget column holds (DecimalField(max_digits=12, decimal_places=4)): an agent's cap
# is compared with the same ledger sums, and 1E+400 is not a budget.


class BudgetSpec(_Strict):
    # allow_inf_nan is pydantic's default for Decimal; stated because NaN would compare false with every spend.
    monthly_usd: Decimal | None = Field(default=None, ge=0, le=MAX_MONTHLY_USD, allow_inf_nan=False)


class SubagentSpec(_Strict):
    """A published agent of the same organization this agent may delegate to (capability `subagents`)."""

    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    agent_id: str
    # Overrides the delegation's mode for this delegate (a slow researcher is worth running in the background).
    mode: Literal["sync", "async", "auto"] | None = None


class ExternalAgentSpec(_Strict):
    """A remote agent registered in Connections → Remote agents (A2A), delegated to like a sub-agent."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")
    description: str = Field(default="", max_length=1000)
    remote_agent_id: str
    mode: Literal["sync", "async", "auto"] | None = None


class AgentSpec(_Strict):
    spec_version: int = SPEC_VERSION
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=2000)
    instructions: str = Field(default="", max_length=100_000)
    model_profile_id: str | None = None
    # The realtime voice model profile its calls use (calls.service); unset: the organization's first.
    realtime_profile_id: str | None = None
    model_settings: ModelSettingsSpec = Field(default_factory=ModelSettingsSpec)
    capabilities: list[CapabilityBinding] = Field(default_factory=list)
    collection_ids: list[str] = Field(default_factory=list)
    context_ids: list[str] = Field(default_factory=list)
    skill_ids: list[str] = Field(default_factory=list)
    custom_tool_ids: list[str] = Field(default_factory=list)
    subagents: list[SubagentSpec] = Field(default_factory=list)
    external_agents: list[ExternalAgentSpec] = Field(default_factory=list, max_length=20)
    max_steps: int = Field(default=20, ge=1, le=200)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    # Shown on an empty chat as prompts a person clicks to start (issue 45 §7); never sent to the model.
    starter_prompts: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(default_factory=list, max_length=6)

    def binding(self, capability_id: str) -> CapabilityBinding | None:
        for binding in self.capabilities:
            if binding.id == capability_id:
                return binding
        return None

    def enabled_bindings(self) -> list[CapabilityBinding]:
        return [b for b in self.capabilities if b.enabled]


def load_spec(data: dict[str, Any]) -> AgentSpec:
    """Load a stored spec. Raises pydantic.ValidationError."""
    return AgentSpec.model_validate(data)


def dump_spec(spec: AgentSpec) -> dict[str, Any]:
    return spec.model_dump(mode="json")


def problems_from_validation_error(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    """Every problem at once, each with its field path ("capabilities.0.config.timeout_secs")."""
    problems = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        problems.append({"field": path, "message": err["msg"]})
    return problems
