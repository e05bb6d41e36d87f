"""How an evaluation case answers its run's deferred calls, so nobody waits on an eval run.

The runner (agents.runner.execute, surface `eval`) asks here when a run would park: every approval-gated
call is approved or rejected as the case says (by stable tool id, or the name the model sees; the case's
default for the rest), every ask_user question is answered from the case's `answers` (keyed by the
question's header; a header the case does not answer is "the person did not answer"). A case that says
`park` for a gated call leaves the run to park as on any surface — for a check on `awaiting_approval`.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied

# Deferral rounds one run may have answered before it parks like any other (a model asking forever).
MAX_ROUNDS = 10
DECISIONS = ("approve", "reject", "park")
REJECTED = "A person rejected this call; do not retry it."
NOT_ANSWERED = "The person did not answer."


def decision_for(case: dict[str, Any], tool_id: str, tool_name: str) -> str:
    approvals = case.get("approvals") or {}
    decision = approvals.get(tool_id) or approvals.get(tool_name) or case.get("default_approval") or "reject"
    return decision if decision in DECISIONS else "reject"


def question_answers(case: dict[str, Any], questions: Any) -> dict[str, list[str]] | str:
    """The ask_user tool's result shape ({header: [labels]}), from the case's answers."""
    given = case.get("answers") or {}
    result: dict[str, list[str]] = {}
    for question in questions if isinstance(questions, list) else []:
        header = str((question or {}).get("header") or (question or {}).get("question") or "")
        answer = given.get(header)
        if isinstance(answer, str):
            answer = [answer]
        if isinstance(answer, list) and answer:
            result[header] = [str(item)[:2000] for item in answer]
    return result or NOT_ANSWERED


def deferred_results(case: dict[str, Any], requests: DeferredToolRequests,
                     tool_ids: dict[str, str]) -> DeferredToolResults | None:
    """The case's answers to one round of deferred calls, or None when the run is to park."""
    approvals: dict[str, Any] = {}
    for call in requests.approvals:
        decision = decision_for(case, tool_ids.get(call.tool_name, call.tool_name), call.tool_name)
        if decision == "park":
            return None
        approvals[call.tool_call_id] = True if decision == "approve" else ToolDenied(REJECTED)
    calls: dict[str, Any] = {}
    for call in requests.calls:
        args = call.args_as_dict()
        calls[call.tool_call_id] = question_answers(case, args.get("questions", args))
    return DeferredToolResults(approvals=approvals, calls=calls)


def answer_for_case(run: Any, requests: DeferredToolRequests, tool_ids: dict[str, str]) -> DeferredToolResults | None:
    """The runner's deferred answerer for `eval` runs (registered in EvalsConfig.ready(); agents.extensions). A
    replay's run (evals/replay_tools.py) runs on the same surface and is answered by the replay."""
    if (run.options or {}).get("replay"):
        from evals.replay_tools import deferred_results as replay_results

        return replay_results(run, requests)
    return deferred_results((run.options or {}).get("eval") or {}, requests, tool_ids)
