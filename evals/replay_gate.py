"""The replay gate: an agent may require that its newest N recorded runs, replayed against the draft (or, for a
rollout, the candidate version), pass before it is published — beside the evaluation suites' gate, through the
same registry (agents.extensions.register_publish_gate, EvalsConfig.ready()).

The check replays inline, as the evaluation gate runs its suites: a replay set (purpose `publish_gate`) is
started and driven to its end in the publishing request (the runs execute on the `runs` workers), then judged:
it passes when it completed and at most `max_failed` of its runs failed their checks (the gate's suite's replay
checks; without a suite, a run must complete). The refusal names every run that failed and why.

An agent with no recorded traffic yet has nothing to replay: the gate lets that publish through (a first
version could never be published otherwise), audits `replay_gate.skipped` and says so on the gate.

What the gate said last (passed, refused, skipped; the target, the message and the replay set) is kept on the
gate (`ReplayGate.last_*`), so the Replays tab and GET …/replay-gate show why a publish went through or not.
A refusal is the API's error envelope: 422 `replay_failed` with `details.problems` (one per failing run:
`replays.<run id>`) and `details.replay_set` / `replay_url` (the replay to read side by side).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Forbidden, Invalid
from agenticos.tenancy import Actor
from agents.models import Agent, AgentVersion, Run, RunStatus
from evals import replays
from evals.models import ReplayGate, ReplaySet, SuiteRun
from governance.grants import EDIT, VIEW, require_agent_access

MAX_REASONS = 20


def gate_for(actor: Actor, agent: Agent) -> ReplayGate | None:
    require_agent_access(actor, agent, VIEW)
    return ReplayGate.objects.filter(agent=agent).select_related("suite").first()


def set_gate(*, actor: Actor, agent: Agent, data: dict[str, Any]) -> ReplayGate:
    """Require (or change) the agent's replay gate. Editors of the agent set it, as they mark a suite gating."""
    from evals import services

    require_agent_access(actor, agent, EDIT)
    problems: list[dict[str, str]] = []
    runs = data.get("runs", 50)
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= replays.MAX_REPLAY_RUNS:
        problems.append({"field": "runs", "message": f"A whole number from 1 to {replays.MAX_REPLAY_RUNS}."})
    surface = data.get("surface") or ""
    if surface and surface not in replays.RECORDED_SURFACES:
        problems.append({"field": "surface", "message": f"One of {', '.join(replays.RECORDED_SURFACES)}."})
    mode = data.get("on_mismatch") or ReplaySet.OnMismatch.REFUSE
    if mode not in ReplaySet.OnMismatch.values:
        problems.append({"field": "on_mismatch", "message": f"One of {', '.join(ReplaySet.OnMismatch.values)}."})
    max_failed = data.get("max_failed", 0)
    if isinstance(max_failed, bool) or not isinstance(max_failed, int) or not 0 <= max_failed <= replays.MAX_REPLAY_RUNS:
        problems.append({"field": "max_failed", "message": f"A whole number from 0 to {replays.MAX_REPLAY_RUNS}."})
    if problems:
        raise Invalid("The replay gate is not valid.", details={"problems": problems})
    cap = replays._cap(data.get("cap_usd"))
    suite = (services.suite_for(actor, agent, data["suite_id"]) if data.get("suite_id") not in (None, "")
             else None)
    with transaction.atomic():
        gate, created = ReplayGate.objects.update_or_create(agent=agent, defaults={
            "organization": actor.organization, "runs": runs, "surface": surface, "suite": suite,
            "on_mismatch": mode, "cap_usd": cap, "max_failed": max_failed, "updated_by": actor.user,
            "updated_at": timezone.now()})
        replays._record(actor, "replay_gate.set", target=agent, runs=runs, surface=surface, on_mismatch=mode,
                        cap_usd=str(cap), max_failed=max_failed, suite=suite.name if suite else "",
                        created=created)
    return gate


def remove_gate(*, actor: Actor, agent: Agent) -> None:
    require_agent_access(actor, agent, EDIT)
    with transaction.atomic():
        if ReplayGate.objects.filter(agent=agent).delete()[0]:
            replays._record(actor, "replay_gate.removed", target=agent)


def _reasons(replay_set: ReplaySet) -> list[dict[str, str]]:
    problems = []
    failing = replay_set.results.exclude(verdict="passed").order_by("position")
    for result in failing[:MAX_REASONS]:
        failed_checks = "; ".join(c["reason"] or c["label"] for c in result.checks if not c.get("passed"))
        why = failed_checks or result.reason or result.get_status_display()
        problems.append({"field": f"replays.{result.original_id}",
                         "message": f"run {str(result.original_id)[:8]}: {why}"[:1000]})
    return problems


def _note(gate: ReplayGate, outcome: str, target: str, message: str, replay_set: ReplaySet | None = None) -> None:
    """Keep what the gate said last on the gate (an update, not a save: a concurrent PUT keeps its settings)."""
    ReplayGate.objects.filter(pk=gate.pk).update(
        last_outcome=outcome, last_target=target[:20], last_message=message[:2000], last_replay_set=replay_set,
        last_checked_at=timezone.now())


def _gate_window(agent: Agent, gate: ReplayGate) -> Any:
    """The runs the gate replays as its settings name them — the agent's newest completed runs of real traffic,
    whoever's they are — so what the gate checks does not depend on who publishes."""
    runs = Run.objects.filter(agent=agent, organization_id=agent.organization_id, status=RunStatus.COMPLETED,
                              surface__in=replays.RECORDED_SURFACES)
    if gate.surface:
        runs = runs.filter(surface=gate.surface)
    return runs.order_by("-created_at")[:gate.runs]


def check_publish(*, actor: Actor, agent: Agent, version: AgentVersion | None = None) -> None:
    """Replay the gate's runs against the draft (or `version`, a rollout's candidate) and refuse unless they
    pass. A no-op (one query) for an agent without a replay gate.

    The runs are the gate's window, not the publisher's: a publisher who may not read some of them (another
    person's runs, without runs:view) is refused (403 `replay_gate_unreadable`) instead of having the gate replay
    only their own runs — or none, and let the publish through unchecked."""
    from evals import replay_driver

    gate = ReplayGate.objects.filter(agent=agent).select_related("suite").first()
    if gate is None:
        return
    target = "draft" if version is None else str(version.number)
    label = "draft" if version is None else f"v{version.number}"
    doing = "published" if version is None else "rolled out"
    window = [run.pk for run in _gate_window(agent, gate).only("pk")]
    if not window:
        # No traffic recorded yet: nothing to replay (see the module's docstring). Said on the gate and audited.
        message = "No recorded run to replay yet: let through without a replay."
        _note(gate, ReplayGate.Outcome.SKIPPED, label, message)
        audit.record(actor=actor.user, organization=actor.organization, action="replay_gate.skipped", target=agent,
                     details={"target": label, "reason": "no_recorded_runs"})
        return
    readable = set(replays.readable_runs(actor, agent).filter(pk__in=window).values_list("pk", flat=True))
    if len(readable) != len(window):
        message = (f"The agent cannot be {doing} by you: its replay gate replays its newest {gate.runs} runs, "
                   f"{len(window) - len(readable)} of them other people's, which you may not read. Someone who may "
                   f"see every run (runs:view) can {'publish' if version is None else 'roll out'} it.")
        _note(gate, ReplayGate.Outcome.REFUSED, label, message)
        raise Forbidden(message, code="replay_gate_unreadable", details={"unreadable_runs": len(window) - len(readable)})
    replay_set = replays.start_replay(actor=actor, agent=agent, enqueue=False, purpose=SuiteRun.Purpose.PUBLISH_GATE,
                                      data={"target": target, "on_mismatch": gate.on_mismatch,
                                            "cap_usd": Decimal(gate.cap_usd),
                                            "selection": {"run_ids": [str(pk) for pk in window], "last": gate.runs,
                                                          **({"surface": gate.surface} if gate.surface else {})},
                                            "suite_id": str(gate.suite_id) if gate.suite_id else None})
    replay_driver.run_replay_set(replay_set.pk)
    replay_set.refresh_from_db()
    failed = replay_set.results.exclude(verdict="passed").count()
    details = {"replay_set": str(replay_set.pk), "replay_url": f"/api/v1/replays/{replay_set.pk}",
               "runs": replay_set.total, "failed": failed, "max_failed": gate.max_failed}
    if replay_set.status != ReplaySet.Status.COMPLETED:
        message = (f"The agent cannot be {doing}: its replay gate did not finish "
                   f"({replay_set.get_status_display().lower()}{': ' + replay_set.error if replay_set.error else ''}).")
        _note(gate, ReplayGate.Outcome.REFUSED, label, message, replay_set)
        raise Invalid(message, details={"problems": _reasons(replay_set) or [
                          {"field": "replays", "message": replay_set.get_status_display()}], **details},
                      code="replay_failed")
    if failed > gate.max_failed:
        total = replay_set.results.count()
        allowed = f" (at most {gate.max_failed} may)" if gate.max_failed else ""
        message = f"The agent cannot be {doing}: {failed} of {total} replayed runs failed its replay gate{allowed}."
        _note(gate, ReplayGate.Outcome.REFUSED, label, message, replay_set)
        raise Invalid(message, details={"problems": _reasons(replay_set), **details}, code="replay_failed")
    _note(gate, ReplayGate.Outcome.PASSED, label,
          f"{replay_set.total - failed} of {replay_set.total} replayed runs passed.", replay_set)
    audit.record(actor=actor.user, organization=actor.organization, action="replay_gate.passed", target=agent,
                 details={"replay_set": str(replay_set.pk), "target": target, "failed": failed,
                          "runs": replay_set.total})
