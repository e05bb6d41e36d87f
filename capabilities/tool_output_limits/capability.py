"""Tool output limits: the harness's `ToolOutputLimits`, one action at one threshold (spec "Límites de
resultados de herramientas"). Spills go to a store built for the run and discarded with it (an agent
without a workspace backend), so a spill never lands on shared disk. Custom REST tools reuse the same
store and reader for their big responses (`limits_for_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai_harness.tool_output_limits import (
    READ_TOOL_NAME,
    Band,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
)

from capabilities.base import BuildContext, Built, Capability, ToolDecl, tool_text


@dataclass
class RunMemoryStore:
    """An `OverflowStore` that lives exactly as long as the run's deps (never written to disk)."""

    payloads: dict[str, bytes] = field(default_factory=dict)

    async def write(self, key: str, data: bytes) -> str:
        self.payloads[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        try:
            return self.payloads[handle]
        except KeyError:
            raise FileNotFoundError(handle) from None


def run_store(deps: Any) -> RunMemoryStore:
    return deps.scratch.setdefault("tool_output_store", RunMemoryStore())


class ToolOutputLimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["spill", "truncate", "summarize"] = "spill"
    threshold: int | None = Field(default=None, ge=1000, le=10_000_000,
                                  description="Size from which a return is reduced (60000; 15000 with over_tokens).")
    over_tokens: bool = False
    max_chars: int | None = Field(default=None, ge=100, le=1_000_000)
    truncation_strategy: Literal["head", "tail", "head_tail"] = "head_tail"
    strip_ansi: bool = False
    summary_prompt: str | None = Field(default=None, max_length=4000)

    @model_validator(mode="after")
    def _prompt(self) -> ToolOutputLimitsConfig:
        if self.summary_prompt is not None and not all(k in self.summary_prompt for k in ("{tool_name}", "{output}")):
            raise ValueError("summary_prompt must contain {tool_name} and {output}")
        return self

    def effective_threshold(self) -> int:
        return self.threshold or (15_000 if self.over_tokens else 60_000)


def limits_for_run(deps: Any, config: ToolOutputLimitsConfig, tool_filter: Any = "all",
                   serializer: Any = None) -> ToolOutputLimits:
    threshold = config.effective_threshold()
    max_chars = min(config.max_chars or 20_000, threshold)
    truncate = Truncate(strategy=TruncationStrategy(config.truncation_strategy), max_chars=max_chars)
    if config.action == "truncate":
        action: Any = truncate
    elif config.action == "summarize":
        action = Summarize(then=Spill(then=truncate))
    else:
        action = Spill(then=truncate)
    kwargs: dict[str, Any] = {}
    if config.summary_prompt:
        kwargs["summary_prompt"] = config.summary_prompt
    if serializer is not None:
        kwargs["serializer"] = serializer
    return ToolOutputLimits(
        bands=[Band(over=threshold, action=action)],
        over_tokens=config.over_tokens,
        strip_ansi=config.strip_ansi,
        store=run_store(deps),
        tool_filter=tool_filter,
        **kwargs,
    )


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ToolOutputLimitsConfig)
    return [limits_for_run(ctx.deps, ctx.config)]


CAPABILITY = Capability(
    id="tool_output_limits",
    name="Tool output limits",
    category="utility",
    description="Keeps an oversized tool result out of the context: spilled with a preview and read in slices.",
    offers="big tool results kept out of the context and read in slices",
    tools=(
        ToolDecl(
            id=READ_TOOL_NAME,
            description=tool_text(
                what="Read a slice of a tool result that was too big to show whole.",
                when="Use it with the handle an oversized result gave you, to page or grep through it.",
                returns="The requested lines of the stored result.",
            ),
        ),
    ),
    config_model=ToolOutputLimitsConfig,
    advanced=True,
    build=build,
)
