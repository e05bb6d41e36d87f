"""The replay driver: one replay set's recorded runs replayed as real runs of the target, as one Celery job
(`evals.tasks.run_replay_set`, default queue); the runs execute on the `runs` workers like any other.

Each recorded run gets a conversation of its own (surface `eval`) holding the history the model saw, the
person's attachments copied beside it (the replay's files go with the replay, never the recording's), and a run
of the target whose options name the replay (evals/replay_tools.py answers its tool calls). At most
`EVAL_MAX_CONCURRENT` run at once; progress is written per run. Cancelling stops the runs in flight and skips the
rest; the replay's cap (checked before each run starts and before each model request) stops it the same way,
ending `budget_stopped`. A run stopped for a person (`on_mismatch: stop`) is recorded stopped and ended, so no
replay waits in anybody's approvals.
"""

from __future__ import annotations

import asyncio
import logging
import time
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db.models import F
from django.utils import timezone

from agents.models import Conversation, Message, Run, RunStatus
from agents.run_handle import on_db_thread
from agents.runs import request_stop, start_run
from evals import replay_verdicts, replays
from evals.driver import PARKED, _in_own_loop
from evals.models import ReplayResult, ReplaySet
from evals.replay_tools import replay_spent
from evals.services import TERMINAL_OR_PARKED

logger = logging.getLogger(__name__)


def _copy_attachments(replay_set: ReplaySet, result: ReplayResult) -> list[dict[str, Any]]:
    files = []
    for index, item in enumerate(result.recording.get("attachments") or []):
        path = item.get("path")
        if not path or not default_storage.exists(path):
            continue  # removed by retention since: the replay runs without it
        with default_storage.open(path, "rb") as handle:
            data = handle.read()
        name = str(item.get("name") or f"file-{index}").replace("/", "_")
        copied = default_storage.save(
            f"replays/{replay_set.organization_id}/{replay_set.pk}/{result.pk}/{index}-{name}", ContentFile(data))
        files.append({**item, "path": copied, "size": len(data)})
    return files


def _stopping(replay_set_id: Any) -> str:
    """Why no more runs start: "" to go on, else the result's reason."""
    replay_set = ReplaySet.objects.only("cancel_requested", "cap_usd").get(pk=replay_set_id)
    if replay_set.cancel_requested:
        return "The replay was cancelled."
    if replay_spent(replay_set_id) >= replay_set.cap_usd:
        return f"Not replayed: the replay's cap of ${replay_set.cap_usd:.2f} is used up."
    return ""


def _start(replay_set: ReplaySet, result_id: int) -> str | None:
    """Start one recorded run's replay (sync), or record why not and return None."""
    result = ReplayResult.objects.get(pk=result_id)
    reason = _stopping(replay_set.pk)
    if reason:
        _skip(result, reason)
        return None
    recording = result.recording
    history = recording.get("history") or []
    conversation = Conversation.objects.create(
        organization_id=replay_set.organization_id, agent_id=replay_set.agent_id, owner=None, surface="eval",
        title=f"Replay of run {str(result.original_id)[:8]}", external_key=f"replay:{result.pk}")
    Message.objects.bulk_create([
        Message(conversation=conversation, version_id=replay_set.version_id, role=turn["role"],
                content=turn["content"], parts=[{"type": "text", "text": turn["content"]}])
        for turn in history
    ])
    options: dict[str, Any] = {
        "can_ask_user": bool(recording.get("can_ask_user")), "history_limit": len(history) or 1,
        "replay": {"set": str(replay_set.pk), "result": result.pk, "original": str(result.original_id),
                   "on_mismatch": replay_set.on_mismatch},
    }
    if recording.get("extra_instructions"):
        options["extra_instructions"] = recording["extra_instructions"]
    run = start_run(agent=replay_set.agent, version=replay_set.version, surface="eval",
                    prompt=recording.get("prompt") or "", user=replay_set.started_by,
                    acting_role=replay_set.acting_role, conversation=conversation,
                    attachments=_copy_attachments(replay_set, result), options=options)
    ReplayResult.objects.filter(pk=result.pk).update(
        replay_run=run, replay_conversation_id=conversation.pk, status=ReplayResult.Status.RUNNING)
    return str(run.pk)


def _skip(result: ReplayResult, reason: str) -> None:
    ReplayResult.objects.filter(pk=result.pk, status=ReplayResult.Status.PENDING).update(
        status=ReplayResult.Status.SKIPPED, reason=reason, finished_at=timezone.now())


def _status(run_id: str) -> str:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).get()


def _cancel_requested(replay_set_id: Any) -> bool:
    return ReplaySet.objects.filter(pk=replay_set_id, cancel_requested=True).exists()


def _stop(run_id: str) -> None:
    request_stop(Run.objects.get(pk=run_id))


def _write(replay_set_id: Any, result_id: int, run_id: str, status: str, reason: str,
           judged: tuple[str, list[dict[str, Any]], Decimal]) -> None:
    result = ReplayResult.objects.select_related("replay_set").get(pk=result_id)
    run = Run.objects.get(pk=run_id)
    replays.compare(result, run)
    result.verdict, result.checks, result.judge_cost_usd = judged
    result.run_status = status  # what the replay saw (a stopped run is then cancelled)
    if status in PARKED:
        result.status, result.reason = ReplayResult.Status.STOPPED, reason or "A tool call not in the recording " \
            "was stopped for a person; the run was ended."
    elif status == RunStatus.COMPLETED:
        result.status, result.reason = ReplayResult.Status.DONE, reason
    else:
        result.status = ReplayResult.Status.ERROR
        result.reason = reason or str((run.error or {}).get("message") or f"The replay ended {status}.")[:1000]
    result.finished_at = timezone.now()
    result.save()
    ReplaySet.objects.filter(pk=replay_set_id).update(
        done=F("done") + 1,
        changed_answers=F("changed_answers") + int(result.answer_changed),
        changed_tools=F("changed_tools") + int(result.tools_changed),
        recorded_cost_usd=F("recorded_cost_usd") + result.recorded_cost_usd,
        replayed_cost_usd=F("replayed_cost_usd") + result.replayed_cost_usd,
        recorded_tokens=F("recorded_tokens") + result.recorded_input_tokens + result.recorded_output_tokens,
        replayed_tokens=F("replayed_tokens") + result.replayed_input_tokens + result.replayed_output_tokens,
        passed=F("passed") + int(result.verdict == "passed"),
        failed=F("failed") + int(result.verdict == "failed"),
        judge_cost_usd=F("judge_cost_usd") + result.judge_cost_usd,
    )


async def replay_one(replay_set: ReplaySet, result_id: int) -> None:
    run_id = await on_db_thread(_start, replay_set, result_id)
    if run_id is None:
        return
    deadline = time.monotonic() + settings.EVAL_CASE_TIMEOUT_SECONDS
    reason = ""
    while True:
        status = await on_db_thread(_status, run_id)
        if status in TERMINAL_OR_PARKED:
            break
        if time.monotonic() > deadline:
            reason = f"Not finished within {settings.EVAL_CASE_TIMEOUT_SECONDS} s; the run was stopped."
            break
        if await on_db_thread(_cancel_requested, replay_set.pk):
            reason = "The replay was cancelled while this run ran."
            break
        await asyncio.sleep(settings.EVAL_POLL_SECONDS)
    if status not in TERMINAL_OR_PARKED or status in PARKED:
        await on_db_thread(_stop, run_id)
    recorded = await on_db_thread(_recorded, result_id)
    judged = await replay_verdicts.judge(replay_set, run_id=run_id, status=status, **recorded)
    await on_db_thread(_write, replay_set.pk, result_id, run_id, status, reason, judged)


def _recorded(result_id: int) -> dict[str, str]:
    result = ReplayResult.objects.only("recording", "recorded_output").get(pk=result_id)
    return {"prompt": str(result.recording.get("prompt") or ""), "recorded_output": result.recorded_output}


def _claim(replay_set_id: Any) -> ReplaySet | None:
    if not ReplaySet.objects.filter(pk=replay_set_id, status=ReplaySet.Status.QUEUED).update(
            status=ReplaySet.Status.RUNNING, started_at=timezone.now()):
        return None
    return ReplaySet.objects.select_related("organization", "agent", "version", "started_by").get(pk=replay_set_id)


def _finish(replay_set_id: Any, error: str = "") -> None:
    replay_set = ReplaySet.objects.get(pk=replay_set_id)
    reason = error or "The replay ended before this run was replayed."
    ReplayResult.objects.filter(replay_set_id=replay_set_id, status__in=[
        ReplayResult.Status.PENDING, ReplayResult.Status.RUNNING]).update(
        status=ReplayResult.Status.ERROR if error else ReplayResult.Status.SKIPPED, reason=reason,
        finished_at=timezone.now())
    budget = ReplayResult.objects.filter(replay_set_id=replay_set_id).filter(
        run_status=RunStatus.BUDGET_EXCEEDED).exists() or ReplayResult.objects.filter(
        replay_set_id=replay_set_id, reason__startswith="Not replayed: the replay's cap").exists()
    if error:
        status = ReplaySet.Status.ERROR
    elif replay_set.cancel_requested:
        status = ReplaySet.Status.CANCELLED
    elif budget:
        status = ReplaySet.Status.BUDGET_STOPPED
    else:
        status = ReplaySet.Status.COMPLETED
    ReplaySet.objects.filter(pk=replay_set_id).update(status=status, error=error[:2000], finished_at=timezone.now())


def run_replay_set(replay_set_id: Any) -> None:
    """Replay a queued set to its end (a no-op for one already taken or cancelled)."""
    replay_set = _claim(replay_set_id)
    if replay_set is None:
        return
    ids = list(ReplayResult.objects.filter(replay_set=replay_set).order_by("position").values_list("pk", flat=True))
    limit = max(1, settings.EVAL_MAX_CONCURRENT)

    async def replay_all() -> None:
        gate = asyncio.Semaphore(limit)

        async def one(result_id: int) -> None:
            async with gate:
                try:
                    await replay_one(replay_set, result_id)
                except Exception:  # one run's bookkeeping must not abort the set
                    logger.exception("replay of result %s failed", result_id)

        await asyncio.gather(*(one(result_id) for result_id in ids))

    try:
        _in_own_loop(replay_all)
    except Exception as exc:
        logger.exception("replay set %s failed", replay_set_id)
        _finish(replay_set_id, error=f"The replay failed: {type(exc).__name__}.")
        return
    _finish(replay_set_id)
