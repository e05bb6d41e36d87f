"""How a replay's run answers its tool calls: from the recording, never by running the tool again.

Plugged into the runner as a run capability (agents.extensions.register_run_capabilities, EvalsConfig.ready()):
for a run whose options carry `replay` (evals/replays.py starts them), `ReplayTools` wraps every tool execution
(pydantic-ai's `wrap_tool_execute`, outside the tools' own toolsets and the approval gate):

- a call whose tool and arguments match a recorded call (agents.runner.gate.call_key: the name and the arguments
  in one canonical spelling) is answered with the recorded result — the tool is not called, no approval is asked;
- any other call, by the replay's `on_mismatch`: `refuse` (the model reads `NOT_IN_REPLAY`), `read_only` (a tool
  that changes nothing runs for real, the rest are refused), `stop` (the call is deferred, so the run parks for a
  person; the replay driver records it stopped and ends it).

Before each model request it also checks the replay's own cap (what the replay's runs have spent together,
from the ledger); the agent's and organization's caps are the runner's BudgetGuard's, as for any run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Sum
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

from agents.runner.gate import call_key
from governance import budgets

NOT_IN_REPLAY = ("This tool is not available in a replay: the recorded conversation made no such call, so it was "
                 "not run. Answer with what you have.")
REPLAY_CAP_LABEL = "the replay's cap"


def replay_options(run: Any) -> dict[str, Any] | None:
    replay = (getattr(run, "options", None) or {}).get("replay")
    return replay if isinstance(replay, dict) else None


def replay_spent(replay_set_id: Any) -> Decimal:
    """What the replay set's runs have spent (the ledger rows of their model requests)."""
    from evals.models import ReplayResult
    from governance.models import SpendEntry

    runs = ReplayResult.objects.filter(replay_set_id=replay_set_id, replay_run__isnull=False).values("replay_run_id")
    total = SpendEntry.objects.filter(run_id__in=runs).aggregate(total=Sum("cost_usd"))["total"]
    return total or Decimal("0")


@dataclass
class ReplayTools(AbstractCapability[Any]):
    # call_key(name, args) → the recorded result
    recorded: dict[tuple[str, str], Any] = field(default_factory=dict)
    on_mismatch: str = "refuse"
    # names of the tools of this run that change nothing (run for real under `read_only`): the runner's one rule
    # (agents.runner.checkpoint.read_only_tools: declared not side-effecting, or a custom REST tool using GET)
    read_only: frozenset[str] = frozenset()
    replay_set_id: str = ""
    cap_usd: Decimal = Decimal("0")

    async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
        key = call_key(call.tool_name, call.args)
        if key in self.recorded:
            return copy.deepcopy(self.recorded[key])
        if self.on_mismatch == "stop":
            raise ApprovalRequired()
        if self.on_mismatch == "read_only" and call.tool_name in self.read_only:
            return await handler(args)
        return NOT_IN_REPLAY

    async def wrap_model_request(self, ctx, *, request_context, handler):
        execution = getattr(ctx.deps, "execution", None)
        if execution is not None and self.replay_set_id:
            spent = await execution.db(replay_spent, self.replay_set_id)
            spent += sum((entry.cost_usd for entry in execution.unrecorded_spend), Decimal("0"))
            if spent >= self.cap_usd:
                raise budgets.BudgetExceeded(budgets.Cap(label=REPLAY_CAP_LABEL, limit=self.cap_usd, spent=spent))
        return await handler(request_context)


def run_capabilities(run: Any, read_only: frozenset[str]) -> list[Any]:
    """The runner's run-capability factory (agents.extensions): [] without a query for a run that is no replay."""
    replay = replay_options(run)
    if replay is None:
        return []
    from evals.models import ReplayResult

    result_id = replay.get("result")
    result = (ReplayResult.objects.filter(pk=int(result_id), replay_set__organization_id=run.organization_id)
              .select_related("replay_set").first() if isinstance(result_id, int) else None)
    if result is None:  # the recording went (its conversation was deleted): answer nothing from it
        return [ReplayTools(on_mismatch="refuse", cap_usd=Decimal("0"))]
    recorded: dict[tuple[str, str], Any] = {}
    for item in result.recording.get("tool_calls") or []:
        recorded.setdefault(call_key(item["tool_name"], item.get("args") or {}), item.get("result"))
    mode = result.replay_set.on_mismatch
    return [ReplayTools(
        recorded=recorded, on_mismatch=mode, replay_set_id=str(result.replay_set_id),
        cap_usd=result.replay_set.cap_usd,
        read_only=read_only if mode == "read_only" else frozenset(),
    )]


def deferred_results(run: Any, requests: DeferredToolRequests) -> DeferredToolResults | None:
    """A replay's deferred calls: stopped for a person (None: the run parks) under `stop`; otherwise nobody is
    there to approve or answer, so a gated call is refused and a question unanswered."""
    replay = replay_options(run) or {}
    if replay.get("on_mismatch") == "stop":
        return None
    return DeferredToolResults(
        approvals={call.tool_call_id: ToolDenied(NOT_IN_REPLAY) for call in requests.approvals},
        calls={call.tool_call_id: "The person did not answer." for call in requests.calls},
    )
