"""Tool output limits: the harness's `ToolOutputLimits`, one action at one threshold (spec "Límites de
resultados de herramientas"). Spills go to a store built for the run (an agent without a workspace
backend), so a spill never lands on shared disk: payloads are kept in memory for the worker that runs
the turn and written through to `SpilledOutput` rows of the run, because a run that parks for an
approval or an answer resumes in another Celery task, and the handles in its history must still read.
The rows are deleted with the run and swept after it finishes. Custom REST tools reuse the same store
and reader for their big responses (`limits_for_run`).

`summarize` spends provider credit, so its summary goes through the platform's one metered path
(`governance.metered`) instead of the agent the harness builds for it (which no budget guard wraps): every
cap is checked before the call, the call is priced and written to the run's ledger as `tool_output_summary`
after it, and a used-up cap (or a provider failure) falls back to spilling, as the harness does on any
failure of the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai.messages import ModelRequest, TextPart
from pydantic_ai_harness.tool_output_limits import (
    READ_TOOL_NAME,
    Band,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
)

from agenticos.tenancy import parse_uuid
from capabilities.base import BuildContext, Built, Capability, ToolDecl, tool_text


def _save(run_id: str, organization_id: str, handle: str, data: bytes) -> None:
    from capabilities.models import SpilledOutput

    SpilledOutput.objects.update_or_create(run_id=run_id, handle=handle, defaults={
        "organization_id": organization_id, "content": data, "size": len(data)})


def _load(run_id: str, organization_id: str, handle: str) -> bytes | None:
    from capabilities.models import SpilledOutput

    content = (SpilledOutput.objects.filter(organization_id=organization_id, run_id=run_id, handle=handle)
               .values_list("content", flat=True).first())
    return bytes(content) if content is not None else None


@dataclass
class RunSpillStore:
    """An `OverflowStore` for one run: a memory cache in front of the run's `SpilledOutput` rows.

    A write is persisted before the handle is handed out (a failed write makes the harness fall back to
    truncation, never to a handle that would not read). A deps object without a run row behind it (a
    run id that is not a UUID) keeps payloads in memory only.
    """

    run_id: str | None = None
    organization_id: str | None = None
    payloads: dict[str, bytes] = field(default_factory=dict)

    @property
    def persisted(self) -> bool:
        return parse_uuid(self.run_id) is not None and parse_uuid(self.organization_id) is not None

    async def write(self, key: str, data: bytes) -> str:
        if self.persisted:
            await sync_to_async(_save)(str(self.run_id), str(self.organization_id), key, data)
        self.payloads[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        data = self.payloads.get(handle)
        if data is None and self.persisted:
            data = await sync_to_async(_load)(str(self.run_id), str(self.organization_id), handle)
        if data is None:
            raise FileNotFoundError(handle)
        self.payloads[handle] = data
        return data


SUMMARY_INSTRUCTIONS = "You summarize oversized tool output."


@dataclass
class MeteredSummarizer:
    """The `Summarize` action's callable: one metered request on the run's own model (`model` is set from the
    run's context before each reduction — the model whose key the vault resolved, as the spec asks)."""

    run_id: Any
    organization_id: Any
    prompt: str
    model: Any = None

    async def __call__(self, tool_name: str, text: str) -> str:
        from governance import metered

        if self.model is None:
            raise RuntimeError("no model to summarize with")  # the harness falls back to spilling
        meter = await sync_to_async(metered.for_run)(self.run_id, self.organization_id,
                                                     kind=metered.TOOL_OUTPUT_SUMMARY)
        request = ModelRequest.user_text_prompt(self.prompt.format(tool_name=tool_name, output=text),
                                                instructions=SUMMARY_INSTRUCTIONS)
        response = await metered.model_request(meter, self.model, [request])
        summary = "".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
        if not summary:
            raise RuntimeError("the summary came back empty")
        return summary


@dataclass
class MeteredToolOutputLimits(ToolOutputLimits):
    """The harness's ToolOutputLimits, telling its metered summarizer which model the run uses."""

    summarizer: MeteredSummarizer | None = field(default=None, repr=False, kw_only=True)

    async def after_tool_execute(self, ctx, **kwargs):  # type: ignore[override]
        if self.summarizer is not None:
            self.summarizer.model = ctx.model
        return await super().after_tool_execute(ctx, **kwargs)


def run_store(deps: Any) -> RunSpillStore:
    store = deps.scratch.get("tool_output_store")
    if store is None:
        store = deps.scratch["tool_output_store"] = RunSpillStore(
            run_id=getattr(deps, "run_id", None), organization_id=getattr(deps, "organization_id", None))
    return store


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


# The library's own prompt (what the harness would have sent), read from its declared default.
DEFAULT_SUMMARY_PROMPT: str = ToolOutputLimits.__dataclass_fields__["summary_prompt"].default  # type: ignore[assignment]


def limits_for_run(deps: Any, config: ToolOutputLimitsConfig, tool_filter: Any = "all",
                   serializer: Any = None) -> ToolOutputLimits:
    threshold = config.effective_threshold()
    max_chars = min(config.max_chars or 20_000, threshold)
    truncate = Truncate(strategy=TruncationStrategy(config.truncation_strategy), max_chars=max_chars)
    kwargs: dict[str, Any] = {}
    if config.action == "truncate":
        action: Any = truncate
    elif config.action == "summarize":
        summarizer = MeteredSummarizer(run_id=getattr(deps, "run_id", None),
                                       organization_id=getattr(deps, "organization_id", None),
                                       prompt=config.summary_prompt or DEFAULT_SUMMARY_PROMPT)
        action = Summarize(summarize=summarizer, then=Spill(then=truncate))
        kwargs["summarizer"] = summarizer
    else:
        action = Spill(then=truncate)
    if config.summary_prompt:
        kwargs["summary_prompt"] = config.summary_prompt
    if serializer is not None:
        kwargs["serializer"] = serializer
    return MeteredToolOutputLimits(
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
    examples=(
        "Search the whole log export for errors.",
        "Pull the full customer list from our API and find the duplicates.",
        "Find the order id in that huge API response.",
    ),
    never_does=(
        "It never keeps a set-aside result beyond its run: only that run can read it back, and it is "
        "deleted shortly after the run ends."
    ),
    tools=(
        ToolDecl(
            id=READ_TOOL_NAME,
            description=tool_text(
                what="Read a slice of a tool result that was too big to show whole.",
                when="Use it with the handle an oversized result gave you (the text after \"stored to handle\"), "
                     "to page through it or pick lines out of it; never pass a tool call id. A result that "
                     "was shown whole needs no reading, and it only reads results of this run.",
                args="handle: the exact handle string from the oversized result. offset: matching lines to "
                     "skip, default 0. limit: lines to return, default 200, at most 1,000. from_end: count "
                     "offset and limit from the end (the last lines), default false. pattern: a literal "
                     "substring, not a regex; only lines containing it count, default none.",
                returns="A header line — the handle, how many lines match in all and how many are shown — then "
                        "those lines, cut at 50,000 characters (the header then says \"output capped\"): a "
                        "slice, so read on with a larger offset for the rest. An unknown or expired handle "
                        "returns a sentence saying so (re-run the original tool); a negative offset or a limit "
                        "below 1 comes back as a request to call again.",
            ),
        ),
    ),
    config_model=ToolOutputLimitsConfig,
    advanced=True,
    build=build,
)


def sweep_finished_spills(grace: timedelta = timedelta(minutes=10)) -> int:
    """Delete spilled content of runs that finished more than `grace` ago: no handle of theirs is read again."""
    from capabilities.models import SpilledOutput

    cutoff = timezone.now() - grace
    deleted, _ = SpilledOutput.objects.filter(run__finished_at__lt=cutoff).delete()
    return deleted
