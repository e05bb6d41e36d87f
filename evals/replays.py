"""Replays: recorded runs replayed against a target (the draft, a version, or a version on another model profile).

- **The recording** is the transcript the platform already keeps (`recording_of`): the prompt and the person's
  attachments, the history the model saw (rebuilt by the runner's own `assembly.turn_and_history`), every tool
  call with its arguments and result (`ToolCall`), the version with its model profile and settings, and the
  models that answered (the ledger). Nothing more is written while a run runs; the replay keeps its copy in its
  result (`ReplayResult.recording`), which goes with the recorded run — and so with its conversation — and with
  the organization's transcript period (`sweep_expired`).
- **Reading** is guarded like transcripts: the runs a person may pick are those `agents.chat.member_run` would
  show them (their own, or any with `runs:view`) of an agent they may edit; another organization's run is 404.
- **Replaying** starts each run as a real run of the target on surface `eval` (evals/replay_driver.py), whose
  tool calls are answered from the recording (evals/replay_tools.py); its model spend is the replay run's, in the
  ledger, on the cap the person set.
"""

from __future__ import annotations

import random
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from agenticos import audit
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, parse_uuid
from agents.models import Agent, AgentVersion, Feedback, ModelProfile, Run, RunStatus, Surface, ToolCall
from agents.runner.gate import call_key
from agents.spec import AgentSpec, dump_spec, load_spec
from evals import run_tags
from evals.models import ReplayResult, ReplaySet, RunTag, SuiteRun
from evals.replay_tools import NOT_IN_REPLAY
from governance.grants import EDIT, VIEW, require_agent_access

MAX_REPLAY_RUNS = 200
FEEDBACK_CHOICES = ("down", "up", "rated", "down_first")
DEFAULT_CAP_USD = Decimal("1")
# The surfaces whose runs are real traffic (an evaluation's or a replay's own runs are not recordings).
RECORDED_SURFACES = tuple(value for value in Surface.values if value != Surface.EVAL)


# Without a suite, a replayed run passes when it completes.
DEFAULT_CHECKS: list[dict[str, Any]] = [{"kind": "status", "status": RunStatus.COMPLETED.value, "label": ""}]


def checks_for(suite: Any) -> list[dict[str, Any]]:
    """The checks a replay naming `suite` judges each run by (a snapshot: the suite may change afterwards)."""
    checks = list(suite.replay_checks or []) if suite is not None else []
    return checks or [dict(check) for check in DEFAULT_CHECKS]


def _problem(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def _record(actor: Actor, action: str, target=None, **details: Any) -> None:
    if actor.api_key is not None:
        details["api_key"] = actor.api_key.prefix
    audit.record(actor=actor.user, organization=actor.organization, action=action, target=target, details=details,
                 ip_address=actor.extra.get("ip"))


# ------------------------------------------------------------------ the recording


def _history_turns(history: list[Any]) -> list[dict[str, str]]:
    """The model's history (pydantic-ai messages) as the turns it says: what was said, as the runner gives it."""
    turns = []
    for message in history:
        if isinstance(message, ModelRequest):
            text = "".join(p.content for p in message.parts if isinstance(p, UserPromptPart)
                           and isinstance(p.content, str))
            role = "user"
        elif isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            role = "assistant"
        else:
            continue
        if text:
            turns.append({"role": role, "content": text})
    return turns


def recording_of(run: Run) -> dict[str, Any]:
    """What a replay needs of a run, read from its transcript and the ledger (sync, DB)."""
    from agents.runner import assembly
    from governance.models import SpendEntry

    current, history = assembly.turn_and_history(run)
    spec = load_spec(run.version.spec)
    calls = [
        {"tool_call_id": c.tool_call_id, "tool_name": c.tool_name, "args": c.args, "result": c.result,
         "status": c.status}
        for c in ToolCall.objects.filter(run=run).order_by("id")
    ]
    models = sorted(set(SpendEntry.objects.filter(run=run, kind="model_request").values_list("model", flat=True)))
    options = run.options or {}
    return {
        "prompt": run.prompt,
        "attachments": list((current or {}).get("attachments") or []),
        "history": _history_turns(history),
        "tool_calls": calls,
        "version": {"id": str(run.version_id), "number": run.version.number},
        "model_profile_id": spec.model_profile_id,
        "model_settings": spec.model_settings.model_dump(mode="json") if hasattr(spec.model_settings, "model_dump")
        else spec.model_settings,
        "models": [m for m in models if m],
        "extra_instructions": options.get("extra_instructions") or "",
        "can_ask_user": bool(options.get("can_ask_user")),
        "surface": run.surface,
    }


# ------------------------------------------------------------------ loading


def readable_runs(actor: Actor, agent: Agent) -> QuerySet[Run]:
    """The agent's recorded runs this person may read, as `member_run` decides for one."""
    runs = Run.objects.filter(organization=actor.organization, agent=agent, surface__in=RECORDED_SURFACES)
    if not actor.has("runs:view"):
        runs = runs.filter(user_id=actor.user_id)
    return runs


def replay_set_for(actor: Actor, replay_set_id: Any, *, level: str = VIEW) -> ReplaySet:
    """One replay set of the actor's organization on an agent they may see at `level` (404 otherwise)."""
    from evals.services import on_visible_agent

    return on_visible_agent(actor, ReplaySet, replay_set_id, level=level, missing="Replay not found.")


def agent_replay_sets(actor: Actor, agent: Agent) -> QuerySet[ReplaySet]:
    require_agent_access(actor, agent, VIEW)
    return ReplaySet.objects.filter(organization=actor.organization, agent=agent).select_related("version")


# ------------------------------------------------------------------ choosing runs


def _when(raw: Any, field: str, problems: list[dict[str, str]]) -> datetime | None:
    if raw in (None, ""):
        return None
    value = parse_datetime(str(raw))
    if value is None or timezone.is_naive(value):
        problems.append(_problem(field, "An ISO 8601 date and time with its offset."))
        return None
    return value


def select_runs(actor: Actor, agent: Agent, selection: dict[str, Any]) -> tuple[list[Run], dict[str, Any]]:
    """The completed runs a selection names, newest first: by ids, version, surface, time range, a tag a person
    put on them (evals/run_tags.py), the 👍/👎 their answer got (`feedback`, see `_by_feedback`), the newest N (`last`), then a sample of N. Returns them and the
    selection as understood. Raises Invalid naming each bad field."""
    problems: list[dict[str, str]] = []
    runs = readable_runs(actor, agent).filter(status=RunStatus.COMPLETED)
    understood: dict[str, Any] = {}
    ids = selection.get("run_ids")
    if ids not in (None, []):
        given = [parse_uuid(str(i)) for i in ids] if isinstance(ids, list) else [None]
        parsed = [i for i in given if i is not None]
        if not given or len(parsed) != len(given) or len(parsed) > MAX_REPLAY_RUNS:
            problems.append(_problem("run_ids", f"A list of at most {MAX_REPLAY_RUNS} run ids."))
        else:
            # A run the person may not read — another organization's, another agent's, someone else's without
            # runs:view — is not found, as the run endpoints say.
            if readable_runs(actor, agent).filter(pk__in=parsed).count() != len(set(parsed)):
                raise NotFound("Run not found.")
            runs = runs.filter(pk__in=parsed)
            understood["run_ids"] = [str(i) for i in parsed]
    version = selection.get("version")
    if version not in (None, ""):
        digits = str(version).removeprefix("v")
        if not digits_only(digits):
            problems.append(_problem("version", "A version number."))
        else:
            runs = runs.filter(version__number=int(digits))
            understood["version"] = int(digits)
    surface = selection.get("surface")
    if surface not in (None, ""):
        if surface not in RECORDED_SURFACES:
            problems.append(_problem("surface", f"One of {', '.join(RECORDED_SURFACES)}."))
        else:
            runs = runs.filter(surface=surface)
            understood["surface"] = surface
    since, until = _when(selection.get("since"), "since", problems), _when(selection.get("until"), "until", problems)
    if since:
        runs, understood["since"] = runs.filter(created_at__gte=since), since.isoformat()
    if until:
        runs, understood["until"] = runs.filter(created_at__lt=until), until.isoformat()
    tag = selection.get("tag")
    if tag not in (None, ""):
        name = run_tags.clean_tag(tag)
        if name is None:
            problems.append(_problem("tag", run_tags.TAG_RULE))
        else:
            runs = runs.filter(Exists(RunTag.objects.filter(run=OuterRef("pk"), name=name)))
            understood["tag"] = name
    feedback = selection.get("feedback")
    if feedback not in (None, ""):
        if feedback not in FEEDBACK_CHOICES:
            problems.append(_problem("feedback", f"One of {', '.join(FEEDBACK_CHOICES)}."))
        else:
            understood["feedback"] = feedback
    last = selection.get("last")
    if last not in (None, ""):
        if not isinstance(last, int) or isinstance(last, bool) or not 1 <= last <= MAX_REPLAY_RUNS:
            problems.append(_problem("last", f"A whole number from 1 to {MAX_REPLAY_RUNS}."))
        else:
            understood["last"] = last
    sample = selection.get("sample")
    if sample not in (None, ""):
        if not isinstance(sample, int) or isinstance(sample, bool) or not 1 <= sample <= MAX_REPLAY_RUNS:
            problems.append(_problem("sample", f"A whole number from 1 to {MAX_REPLAY_RUNS}."))
        else:
            understood["sample"] = sample
    if problems:
        raise Invalid("The selection of runs is not valid.", details={"problems": problems})
    runs, order = _by_feedback(runs, understood.get("feedback"))
    chosen = list(runs.select_related("version").order_by(*order, "-created_at")[
        :understood.get("last") or MAX_REPLAY_RUNS * 5])
    if understood.get("sample") and len(chosen) > understood["sample"]:
        keep = {run.pk for run in random.sample(chosen, understood["sample"])}  # noqa: S311 - a sample, not a secret
        chosen = [run for run in chosen if run.pk in keep]  # in the order chosen (👎 first, then newest)
    return chosen[:MAX_REPLAY_RUNS], understood


def _by_feedback(runs: QuerySet[Run], feedback: str | None) -> tuple[QuerySet[Run], list[Any]]:
    """Runs by the 👍/👎 their answer got: "down" (only 👎), "up", "rated" (either), "down_first" (every run,
    the 👎 ones first). Without it the order is only newest first."""
    down = Exists(Feedback.objects.filter(run=OuterRef("pk"), rating=Feedback.Rating.DOWN))
    if feedback == "down":
        return runs.filter(down), []
    if feedback == "up":
        return runs.filter(Exists(Feedback.objects.filter(run=OuterRef("pk"), rating=Feedback.Rating.UP))), []
    if feedback == "rated":
        runs = runs.filter(Exists(Feedback.objects.filter(run=OuterRef("pk"))))
    if feedback in ("rated", "down_first"):
        return runs.annotate(thumbs_down=down), [F("thumbs_down").desc()]
    return runs, []


# ------------------------------------------------------------------ the target


def _on_profile(actor: Actor, agent: Agent, version: AgentVersion, profile_id: Any) -> tuple[str, AgentVersion]:
    """The version's spec on another of the organization's chat profiles, as a replay snapshot (number 0)."""
    wanted = parse_uuid(str(profile_id))
    profile = (ModelProfile.objects.filter(organization=actor.organization, pk=wanted, kind=ModelProfile.Kind.CHAT)
               .first() if wanted else None)
    if profile is None:
        raise NotFound("Model profile not found.")
    spec = AgentSpec.model_validate(version.spec).model_copy(update={"model_profile_id": str(profile.pk)})
    dumped = dump_spec(spec)
    same = AgentVersion.objects.filter(agent=agent, number=0, spec=dumped).order_by("-created_at").first()
    snapshot = same or AgentVersion.objects.create(
        agent=agent, number=0, spec=dumped, published_by=actor.user,
        note=f"Replay snapshot: v{version.number or 'draft'} on {profile.label}"[:200])
    return profile.label, snapshot


def resolve_target(actor: Actor, agent: Agent, target: Any, model_profile_id: Any) -> tuple[str, AgentVersion]:
    from evals import services

    label, version = services.resolve_target(actor, agent, target)
    if model_profile_id not in (None, ""):
        name, version = _on_profile(actor, agent, version, model_profile_id)
        label = f"{label}@{name}"
    return label[:160], version


# ------------------------------------------------------------------ starting, cancelling


def _cap(raw: Any) -> Decimal:
    if raw in (None, ""):
        return DEFAULT_CAP_USD
    try:
        cap = Decimal(str(raw))
    except InvalidOperation:
        cap = Decimal("-1")
    if not cap.is_finite() or cap <= 0 or cap > Decimal("10000"):
        raise Invalid("The replay's cap is not valid.",
                      details={"problems": [_problem("cap_usd", "An amount in USD above 0 and at most 10000.")]})
    return cap


def start_replay(*, actor: Actor, agent: Agent, data: dict[str, Any], enqueue: bool = True,
                 purpose: str = SuiteRun.Purpose.MANUAL) -> ReplaySet:
    """A replay set (queued) with a pending result per chosen run, each holding its recording; its driver is
    enqueued after commit. Editors replay (it spends like running), with the run right. `suite_id` names the
    suite whose replay checks give each run its verdict."""
    from evals import services

    require_agent_access(actor, agent, EDIT)
    actor.require("agents:run")
    suite = (services.suite_for(actor, agent, data["suite_id"]) if data.get("suite_id") not in (None, "")
             else None)
    mode = data.get("on_mismatch") or ReplaySet.OnMismatch.REFUSE
    if mode not in ReplaySet.OnMismatch.values:
        raise Invalid("Unknown on_mismatch.", details={"problems": [
            _problem("on_mismatch", f"One of {', '.join(ReplaySet.OnMismatch.values)}.")]})
    cap = _cap(data.get("cap_usd"))
    selection = data.get("selection") or {}
    if not isinstance(selection, dict):
        raise Invalid("The selection is an object.", details={"problems": [_problem("selection", "An object.")]})
    runs, understood = select_runs(actor, agent, selection)
    if not runs:
        raise Invalid("No recorded run matches the selection.",
                      details={"problems": [_problem("selection", "No completed run of this agent matches.")]})
    with transaction.atomic():
        label, version = resolve_target(actor, agent, data.get("target") or "draft", data.get("model_profile_id"))
        replay_set = ReplaySet.objects.create(
            organization=actor.organization, agent=agent, target=label, version=version, selection=understood,
            on_mismatch=mode, cap_usd=cap, started_by=actor.user, acting_role=actor.role or "", total=len(runs),
            purpose=purpose, suite=suite, checks=checks_for(suite))
        results = []
        for index, run in enumerate(runs):
            recording = recording_of(run)
            results.append(ReplayResult(
                replay_set=replay_set, position=index, original=run, recording=recording,
                recorded_output=run.output, recorded_input_tokens=run.input_tokens,
                recorded_output_tokens=run.output_tokens, recorded_cost_usd=run.cost_usd))
        ReplayResult.objects.bulk_create(results)
        _record(actor, "replay.started", target=replay_set, agent_id=str(agent.pk), target_version=label,
                runs=len(runs), on_mismatch=mode, cap_usd=str(cap), purpose=purpose,
                suite=suite.name if suite else "")
        if enqueue:
            from evals.tasks import run_replay_set

            transaction.on_commit(lambda: run_replay_set.delay(str(replay_set.pk)))
    return replay_set


def cancel_replay(*, actor: Actor, replay_set: ReplaySet) -> ReplaySet:
    """Ask the driver to stop: runs in flight are stopped, those not started are skipped."""
    require_agent_access(actor, replay_set.agent, EDIT)
    actor.require("agents:run")
    with transaction.atomic():
        ReplaySet.objects.filter(pk=replay_set.pk).update(cancel_requested=True)
        # One never taken by a driver ends here.
        if ReplaySet.objects.filter(pk=replay_set.pk, status=ReplaySet.Status.QUEUED).update(
                status=ReplaySet.Status.CANCELLED, finished_at=timezone.now()):
            ReplayResult.objects.filter(replay_set=replay_set, status=ReplayResult.Status.PENDING).update(
                status=ReplayResult.Status.SKIPPED, reason="The replay was cancelled.", finished_at=timezone.now())
        _record(actor, "replay.cancelled", target=replay_set, agent_id=str(replay_set.agent_id))
    replay_set.refresh_from_db()
    return replay_set


# ------------------------------------------------------------------ side by side


def _answered_by(call: ToolCall | dict[str, Any], verdict: str) -> str:
    status = call.status if isinstance(call, ToolCall) else call.get("status")
    result = call.result if isinstance(call, ToolCall) else call.get("result")
    if verdict == "same":
        return "recording"
    if status in (ToolCall.Status.PARKED, ToolCall.Status.UNFINISHED) and result is None:
        return "stopped"  # parked for a person, then ended with its run
    if result == NOT_IN_REPLAY:
        return "refused"
    return "executed"


def side_by_side(recorded: list[dict[str, Any]], replayed: list[ToolCall]) -> list[dict[str, Any]]:
    """The replay's tool calls against the recording's: same tool and arguments (`same`), same tool with other
    arguments (`different_arguments`), a tool the recording did not call (`new`), a recorded call the replay
    did not make (`missing`)."""
    left = list(recorded)
    rows: list[dict[str, Any]] = []
    unmatched: list[ToolCall] = []
    for call in replayed:
        key = call_key(call.tool_name, call.args)
        index = next((i for i, r in enumerate(left) if call_key(r["tool_name"], r.get("args") or {}) == key), None)
        if index is None:
            unmatched.append(call)
            continue
        left.pop(index)
        rows.append({"tool_name": call.tool_name, "verdict": "same", "recorded_args": call.args,
                     "replayed_args": call.args, "answered_by": "recording"})
    for call in unmatched:
        index = next((i for i, r in enumerate(left) if r["tool_name"] == call.tool_name), None)
        verdict = "new" if index is None else "different_arguments"
        before = left.pop(index).get("args") if index is not None else None
        rows.append({"tool_name": call.tool_name, "verdict": verdict, "recorded_args": before,
                     "replayed_args": call.args, "answered_by": _answered_by(call, verdict)})
    rows.extend({"tool_name": r["tool_name"], "verdict": "missing", "recorded_args": r.get("args"),
                 "replayed_args": None, "answered_by": ""} for r in left)
    return rows


def _normalized(text: str) -> str:
    return " ".join(text.split())


def compare(result: ReplayResult, run: Run) -> None:
    """Fill a result from its finished replay run (not saved)."""
    calls = list(ToolCall.objects.filter(run=run).order_by("id"))
    result.tool_calls = side_by_side(result.recording.get("tool_calls") or [], calls)
    result.tools_changed = any(row["verdict"] != "same" for row in result.tool_calls)
    result.replayed_output = run.output
    result.answer_changed = _normalized(run.output) != _normalized(result.recorded_output)
    result.run_status = run.status
    result.replayed_input_tokens, result.replayed_output_tokens = run.input_tokens, run.output_tokens
    result.replayed_cost_usd = run.cost_usd


# ------------------------------------------------------------------ a replayed run → an evaluation case


def make_case(*, actor: Actor, result: ReplayResult, suite_id: Any, name: str = "") -> Any:
    """A case of one of the agent's suites from a replayed run: its prompt and history, its answer as expected
    (`contains` the replayed answer's first line) and each tool it called (`tool_called`)."""
    from evals import services
    from evals.models import Case

    agent = result.replay_set.agent
    suite = services.suite_for(actor, agent, suite_id, level=EDIT)
    recording = result.recording
    checks: list[dict[str, Any]] = [{"kind": "status", "status": "completed"}]
    first_line = next((line.strip() for line in result.replayed_output.splitlines() if line.strip()), "")
    if first_line:
        checks.append({"kind": "contains", "value": first_line[:200]})
    for row in result.tool_calls:
        if row["verdict"] != "missing" and isinstance(row["replayed_args"], dict):
            check = {"kind": "tool_called", "tool": row["tool_name"], "args": row["replayed_args"]}
            if check not in checks:
                checks.append(check)
    history = (recording.get("history") or [])[-services.MAX_HISTORY_TURNS:]
    raw = {"name": (name or f"Replayed {str(result.original_id)[:8]}")[:120], "prompt": recording.get("prompt") or "",
           "history": history, "checks": checks}
    problems: list[dict[str, str]] = []
    case = services.clean_case(actor, raw, "case", problems)
    if problems or case is None:
        raise Invalid("This replayed run cannot become a case.", details={"problems": problems})
    if suite.cases.filter(name=case["name"]).exists():
        raise Conflict(f"The suite already has a case named {case['name']!r}.")
    with transaction.atomic():
        position = suite.cases.count()
        row = Case.objects.create(suite=suite, position=position, **{k: v for k, v in case.items() if k != "id"})
        suite.updated_at = timezone.now()
        suite.save(update_fields=["updated_at"])
        _record(actor, "replay.case_made", target=suite, agent_id=str(agent.pk), result=result.pk, case=row.name)
    return row


def readable_results(actor: Actor, replay_set: ReplaySet) -> QuerySet[ReplayResult]:
    """The set's results whose recorded run this person may read (`readable_runs`): a replay quotes the recorded
    conversation, so an agent's viewer reads the rest of a set only as verdicts and counts (`redact`)."""
    results = ReplayResult.objects.filter(replay_set=replay_set)
    if not actor.has("runs:view"):
        results = results.filter(original__user_id=actor.user_id)
    return results


REDACTED = "Hidden: the recorded run is not one you may read."


def redact(result: ReplayResult) -> ReplayResult:
    """The result without what quotes the conversation (answers, arguments, reasons; not saved): its status,
    verdict, what changed, tokens and cost stay."""
    result.redacted = True  # type: ignore[attr-defined]
    result.recorded_output = result.replayed_output = ""
    result.reason = REDACTED
    result.recording = {}
    result.tool_calls = [{**row, "recorded_args": None, "replayed_args": None} for row in result.tool_calls]
    result.checks = [{**check, "reason": ""} for check in result.checks]
    return result


def results_for_reader(actor: Actor, replay_set: ReplaySet) -> list[ReplayResult]:
    """The set's results in order, those on runs this person may not read redacted."""
    readable = set(readable_results(actor, replay_set).values_list("pk", flat=True))
    return [result if result.pk in readable else redact(result)
            for result in replay_set.results.order_by("position", "id")]


def result_for(actor: Actor, replay_set: ReplaySet, result_id: Any) -> ReplayResult:
    try:
        wanted = int(str(result_id))
    except ValueError:
        wanted = 0
    # Only a result on a run this person may read: a case copies the recorded prompt and history.
    result = (readable_results(actor, replay_set).filter(pk=wanted).select_related("replay_set__agent").first())
    if result is None:
        raise NotFound("Replayed run not found.")
    return result


# ------------------------------------------------------------------ retention


def forget_replay_conversation(sender: Any, instance: ReplayResult, **kwargs: Any) -> None:
    """A result goes with its recorded run (its conversation deleted, the transcript period passed): the replay's
    own conversation — the copied prompt, history and answer — goes with it."""
    from agents.models import Conversation

    if instance.replay_conversation_id:
        Conversation.objects.filter(pk=instance.replay_conversation_id, surface=Surface.EVAL).delete()


def sweep_expired(now: datetime | None = None) -> int:
    """Replay results past the organization's transcript period (they quote the recorded conversation)."""
    from governance import retention

    def select(org: Q, cutoff: datetime) -> int:
        return retention.delete_in_batches(ReplayResult.objects.filter(org, created_at__lt=cutoff))

    return retention._by_policy("replay_results", "transcript_days", "replay_set__organization", now, select)


def summary(replay_set: ReplaySet) -> dict[str, Any]:
    return {
        "total": replay_set.total, "done": replay_set.done, "changed_answers": replay_set.changed_answers,
        "changed_tools": replay_set.changed_tools, "recorded_cost_usd": f"{replay_set.recorded_cost_usd:f}",
        "replayed_cost_usd": f"{replay_set.replayed_cost_usd:f}",
        "cost_delta_usd": f"{replay_set.replayed_cost_usd - replay_set.recorded_cost_usd:f}",
        "recorded_tokens": replay_set.recorded_tokens, "replayed_tokens": replay_set.replayed_tokens,
        "passed": replay_set.passed, "failed": replay_set.failed,
        "judge_cost_usd": f"{replay_set.judge_cost_usd:f}",
    }
