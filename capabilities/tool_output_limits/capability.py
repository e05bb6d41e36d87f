"""Tool output limits: the harness's `ToolOutputLimits`, one action at one threshold (spec "Límites de
resultados de herramientas"). Custom REST tools reuse the same store and reader for their big responses
(`limits_for_run`), and declare the reader too, so a binding gates or renames it like any other tool.

Where a spill goes ("Un volcado va al propio backend del agent"):
- an agent whose run has a workspace (capability `sandbox`) spills into it, as the file
  `/workspace/tool_output/<run id>/<call>.<retry>`: the handle is that path, so the agent's own `read_file` and
  `grep` reach it as well as `read_tool_result`. It is written through the run's own workspace backend, so it
  is the organization's, counts against the workspace's byte cap (a full workspace makes the harness fall
  back to truncating) and lives with the workspace; it never outlives its run either (swept once the run has
  finished, by the run that wrote it, never by sweeping the prefix: `workspaces.store.sweep_finished_spills`);
- an agent without one gets a store built for the run, so a spill never lands on shared disk: payloads are
  kept in memory for the worker that runs the turn and written through to `SpilledOutput` rows of the run,
  because a run that parks for an approval or an answer resumes in another Celery task, and the handles in
  its history must still read. The rows are deleted with the run and swept after it finishes.

`summarize` spends provider credit, so its summary goes through the platform's one metered path
(`governance.metered`) instead of the agent the harness builds for it (which no budget guard wraps): every
cap is checked before the call, the call is priced and written to the run's ledger as `tool_output_summary`
after it, and a used-up cap (or a provider failure) falls back to spilling, as the harness does on any
failure of the summary.
"""

from __future__ import annotations

import re
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
from capabilities.base import BuildContext, Built, Capability, ToolDecl, enum_labels, tool_text
from workspaces import store as workspace_store


def _save(run_id: str, organization_id: str, handle: str, data: bytes) -> None:
    from capabilities.models import SpilledOutput

    SpilledOutput.objects.update_or_create(run_id=run_id, handle=handle, defaults={
        "organization_id": organization_id, "content": data, "size": len(data)})


def _load(run_id: str, organization_id: str, handle: str) -> bytes | None:
    from capabilities.models import SpilledOutput

    content = (SpilledOutput.objects.filter(organization_id=organization_id, run_id=run_id, handle=handle)
               .values_list("content", flat=True).first())
    return bytes(content) if content is not None else None


def spill_path(key: str, run_id: str | None = None) -> str:
    """The workspace file of a spill: `/workspace/tool_output/<run>/<call>.<retry>`, of safe segments. The
    harness's key starts with pydantic-ai's own run id, which a resumed run changes: the folder is our run's."""
    if run_id:
        key = f"{run_id}/{key.partition('/')[2] or key}"
    segments = [re.sub(r"[^A-Za-z0-9._-]+", "_", part) for part in key.split("/") if part.strip(".")]
    return "/".join([workspace_store.SPILLS, *(segments or ["_"])])


def is_spill_path(path: object) -> bool:
    return isinstance(path, str) and workspace_store.normal(path).startswith(workspace_store.SPILLS + "/")


@dataclass
class RunSpillStore:
    """An `OverflowStore` for one run: its workspace when it has one (`scratch[workspaces.store.SCRATCH_BACKEND]`, set by the
    sandbox capability whenever it builds, in whatever order), else a memory cache in front of the run's
    `SpilledOutput` rows.

    A write is persisted before the handle is handed out (a failed write makes the harness fall back to
    truncation, never to a handle that would not read). A deps object without a run row behind it (a
    run id that is not a UUID) keeps payloads in memory only.
    """

    run_id: str | None = None
    organization_id: str | None = None
    payloads: dict[str, bytes] = field(default_factory=dict)
    scratch: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def persisted(self) -> bool:
        return parse_uuid(self.run_id) is not None and parse_uuid(self.organization_id) is not None

    @property
    def workspace(self) -> Any:
        return self.scratch.get(workspace_store.SCRATCH_BACKEND)

    async def write(self, key: str, data: bytes) -> str:
        backend = self.workspace
        if backend is not None:
            path = spill_path(key, self.run_id)
            await backend.write_bytes(path, data)  # the workspace's cap and tenancy apply; a refusal raises
            return path
        if self.persisted:
            await sync_to_async(_save)(str(self.run_id), str(self.organization_id), key, data)
        self.payloads[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        if is_spill_path(handle):
            # Only ever this run's own workspace, and only its spill folder (a "../" cannot leave it).
            backend = self.workspace
            if backend is None:
                raise FileNotFoundError(handle)  # no workspace in this run: the harness says it is gone
            return bytes(await backend.read_bytes(workspace_store.normal(handle)))
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
        # A workspace read of a spill is the spill (or a page of it): reducing it again would spill the spill.
        # The harness knows this only for its own workspace store, by its own folder.
        if is_spill_path((kwargs.get("args") or {}).get("path")):
            return kwargs.get("result")
        if self.summarizer is not None:
            self.summarizer.model = ctx.model
        return await super().after_tool_execute(ctx, **kwargs)

    def _read_hint(self, ctx: Any, handle: str) -> str:
        # The harness names its workspace readers only for its own store; a spill in the run's workspace is
        # a file there too, which the model may page with read_file or search with grep.
        hint = super()._read_hint(ctx, handle)
        if is_spill_path(handle):
            hint += " It is also a file in your workspace: read_file and grep reach it by that path."
        return hint


@dataclass
class ReducerOnly(MeteredToolOutputLimits):
    """The same reductions into the run's store, without a second `read_tool_result` (another binding offers it)."""

    def get_toolset(self):  # type: ignore[override]
        return None


def run_store(deps: Any) -> RunSpillStore:
    store = deps.scratch.get("tool_output_store")
    if store is None:
        store = deps.scratch["tool_output_store"] = RunSpillStore(
            run_id=getattr(deps, "run_id", None), organization_id=getattr(deps, "organization_id", None),
            scratch=deps.scratch)
    return store


class ToolOutputLimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["spill", "truncate", "summarize"] = Field(default="spill", json_schema_extra=enum_labels({
        "spill": "Set it aside in a file the agent reads in slices", "truncate": "Cut it short",
        "summarize": "Summarise it with a model"}))
    threshold: int | None = Field(default=None, ge=1000, le=10_000_000,
                                  description="Size from which a result is reduced; empty: 60000 characters, or "
                                              "15000 tokens when sizes are counted in tokens.")
    over_tokens: bool = False
    max_chars: int | None = Field(default=None, ge=100, le=1_000_000)
    truncation_strategy: Literal["head", "tail", "head_tail"] = Field(default="head_tail", json_schema_extra=enum_labels(
        {"head": "Keep the start", "tail": "Keep the end", "head_tail": "Keep the start and the end"}))
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
                   serializer: Any = None, *, offer_reader: bool = True, id: str | None = None) -> ToolOutputLimits:
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
    limits = MeteredToolOutputLimits if offer_reader else ReducerOnly
    return limits(
        bands=[Band(over=threshold, action=action)],
        over_tokens=config.over_tokens,
        strip_ansi=config.strip_ansi,
        store=run_store(deps),
        tool_filter=tool_filter,
        id=id,  # pydantic-ai refuses two capabilities of one id in a run (custom_tools' own limits has its own)
        **kwargs,
    )


# Declared here and by custom_tools, whose big responses bring the same reader: a binding gates or renames it
# like any other tool.
READ_TOOL = ToolDecl(
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
        "It never keeps a set-aside result beyond its run: it is deleted shortly after the run ends. With a "
        "workspace it is a file in its tool output folder, which other runs sharing that workspace can see "
        "until then."
    ),
    tools=(READ_TOOL,),
    config_model=ToolOutputLimitsConfig,
    advanced=True,
    build=build,
)


def sweep_finished_spills(grace: timedelta = timedelta(minutes=10)) -> int:
    """Delete spilled content of runs that finished more than `grace` ago: no handle of theirs is read again
    (the rows of runs without a workspace, and the files runs wrote in their workspace's spill folder)."""
    from capabilities.models import SpilledOutput

    cutoff = timezone.now() - grace
    deleted, _ = SpilledOutput.objects.filter(run__finished_at__lt=cutoff).delete()
    return deleted + workspace_store.sweep_finished_spills(cutoff)
