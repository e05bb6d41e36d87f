"""Rollouts: a candidate version served to a share of an environment's traffic, watched, and rolled back by itself.

- **Routing** (`route`, `serve`) is the one decision every surface makes when it admits a run: member chat, REST,
  `/v1`, `/mcp`, `/a2a` (agents.chat), the widget and hosted page (embeds), bots (channelbots) and triggers. The
  environment's row carries `rollout_id` (a cached pointer kept by this module), read with the row each surface
  reads anyway: an environment without a rollout costs no query here.
- **Stickiness**: a conversation keeps the version its first run had (the run row records it); a new conversation,
  a visitor, a thread or a trigger is the candidate's when `hash(rollout id, sticky key)` falls in the first
  `share` % of buckets. The hash is deterministic, so the same key lands the same way on every process.
- **Steps** (`advance_rollout`, `due_step`): the shares a rollout moves through after its first (`steps`, 100
  promotes), by hand or, with `step_minutes`, by the beat once the current share has held that long, the
  candidate has `min_runs` ended runs and no threshold is crossed — a schedule never advances a rollout blind.
- **Watching** (`metrics`, `check_thresholds`): per version, over the runs admitted under the rollout (each carries
  `options["rollout"]`); a candidate run's ending calls `run_ended` (registered as a run-ended hook in
  agents.extensions) and a beat task (`agents.tasks.watch_rollouts`) re-checks every open rollout as a backstop.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, DomainError, Invalid, NotFound
from agenticos.tenancy import Actor, actor_for_membership, membership_for
from agents import extensions
from agents.models import Agent, AgentVersion, Conversation, Environment, Feedback, Rollout, Run, RunStatus
from governance.grants import PUBLISH, require_agent_access
from governance.models import Approval
from notifications.models import Notification
from notifications.services import notify

logger = logging.getLogger(__name__)

BUCKETS = 10_000  # share is in whole percent; 100 buckets per percent
OPEN = (Rollout.Status.ACTIVE, Rollout.Status.PAUSED)
# Below this many ended runs on either side the failure-rate comparison is "not enough runs yet".
MIN_RUNS_FOR_TEST = 10
MIN_STEP_MINUTES = 5  # the beat looks every 5 minutes (config.settings: watch-rollouts)
MAX_STEPS = 10
ENDED = [s.value for s in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.BUDGET_EXCEEDED,
                           RunStatus.GUARDRAIL_BLOCKED)]


# ------------------------------------------------------------------ routing


@dataclass(frozen=True)
class Served:
    version: AgentVersion
    rollout_id: Any = None  # the rollout the run was admitted under (either arm), else None

    def options(self) -> dict[str, str]:
        """What the run's options record, so the rollout's metrics and its watcher find the run."""
        return {"rollout": str(self.rollout_id)} if self.rollout_id else {}


def bucket(rollout_id: Any, key: str) -> int:
    """0..BUCKETS-1, the same for the same (rollout, key) everywhere (not Python's salted `hash`)."""
    digest = hashlib.sha256(f"{rollout_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def route(*, base: AgentVersion, rollout_id: Any, key: str, conversation: Conversation | None = None) -> Served:
    """The version a run admitted on an environment serves. `base` is the environment's version, `rollout_id`
    its row's `rollout_id`; `key` the sticky key of a new conversation / visitor / thread / trigger; an existing
    `conversation` keeps the version its first run had."""
    if rollout_id is None:
        return Served(base)
    rollout = Rollout.objects.select_related("candidate").filter(pk=rollout_id, status__in=OPEN).first()
    if rollout is None or rollout.base_id != base.pk:
        return Served(base)
    first = _first_run_version(conversation)
    if first is not None:
        # A conversation that began before the rollout (or on the base) stays on the base.
        on_candidate = first == rollout.candidate_id
    else:
        on_candidate = (rollout.status == Rollout.Status.ACTIVE
                        and bucket(rollout.pk, key) < rollout.share * (BUCKETS // 100))
    return Served(rollout.candidate if on_candidate else base, rollout.pk)


def _first_run_version(conversation: Conversation | None) -> Any:
    if conversation is None or conversation._state.adding:
        return None
    return (Run.objects.filter(conversation=conversation).order_by("created_at")
            .values_list("version_id", flat=True).first())


def serve(agent: Agent, environment: str, *, key: str, conversation: Conversation | None = None) -> Served | None:
    """`route` for a surface that has the agent, not the environment's row: reads the row (the one query
    `environment_version` made) and routes. None when the environment does not exist."""
    env = Environment.objects.select_related("version").filter(agent=agent, name=environment).first()
    if env is None:
        return None
    return route(base=env.version, rollout_id=env.rollout_id, key=key, conversation=conversation)


# ------------------------------------------------------------------ lifecycle


def _audit(actor_user: Any, rollout: Rollout, action: str, **details: Any) -> None:
    audit.record(actor=actor_user, organization=rollout.organization, action=action, target=rollout.agent,
                 details={"rollout_id": str(rollout.pk), "environment": rollout.environment,
                          "base_version": rollout.base.number, "candidate_version": rollout.candidate.number,
                          **details})


def start_rollout(*, actor: Actor, agent: Agent, environment: str, candidate: int, share: int,
                  failure_multiple: Any = None, min_runs: int | None = None,
                  cost_increase_pct: int | None | object = ..., reason: str = "", steps: list[int] | None = None,
                  step_minutes: int | None = None, guardrail_multiple: Any = ..., rejection_multiple: Any = ...,
                  thumbs_down_multiple: Any = ...) -> Rollout:
    """Send `share` % (1–99) of `environment`'s new sticky keys to version `candidate`. The candidate must be a
    published version other than the environment's, and pass the agent's publish gates (evaluation suites).
    `steps` are the shares to move through afterwards (ascending, above `share`, 100 = promote); with
    `step_minutes` the beat moves them on a schedule, without it a person does (`advance_rollout`)."""
    from agents.services import ENV_NAME_RE, published_version

    require_agent_access(actor, agent, PUBLISH)
    if not ENV_NAME_RE.match(environment or ""):
        raise NotFound(f"The agent has no {environment} environment; publish it first.")
    if isinstance(share, bool) or not isinstance(share, int) or not 1 <= share <= 99:
        raise Invalid("A rollout's share is 1 to 99 percent.", details={"field": "share"})
    steps = _valid_steps(steps or [], share)
    if step_minutes is not None and (isinstance(step_minutes, bool) or not isinstance(step_minutes, int)
                                     or step_minutes < MIN_STEP_MINUTES):
        raise Invalid(f"Steps advance at most every {MIN_STEP_MINUTES} minutes.", details={"field": "step_minutes"})
    if step_minutes is not None and not steps:
        raise Invalid("A schedule needs steps to move through.", details={"field": "steps"})
    multiples = _valid_multiples({"guardrail_multiple": guardrail_multiple, "rejection_multiple": rejection_multiple,
                                  "thumbs_down_multiple": thumbs_down_multiple})
    target = published_version(agent, candidate)
    env = Environment.objects.select_related("version").filter(agent=agent, name=environment).first()
    if env is None:
        raise NotFound(f"The agent has no {environment} environment; publish it first.")
    if env.version_id == target.pk:
        raise Invalid(f"The {environment} environment already serves v{target.number}.",
                      details={"field": "candidate_version"})
    # The gates run outside the transaction: an evaluation suite runs the agent for a while.
    extensions.check_publish_gates(actor=actor, agent=agent, version=target)
    with transaction.atomic():
        env = Environment.objects.select_for_update().select_related("version").get(pk=env.pk)
        if Rollout.objects.filter(agent=agent, environment=environment, status__in=OPEN).exists():
            raise Conflict(f"The {environment} environment already has a rollout; pause, promote or abort it first.")
        rollout = Rollout(organization=agent.organization, agent=agent, environment=environment, base=env.version,
                          candidate=target, share=share, reason=reason[:500], started_by=actor.user,
                          steps=steps, step_minutes=step_minutes)
        if failure_multiple is not None:
            rollout.failure_multiple = Decimal(str(failure_multiple))
        if min_runs is not None:
            rollout.min_runs = min_runs
        if cost_increase_pct is not ...:
            rollout.cost_increase_pct = cost_increase_pct  # type: ignore[assignment]
        for name, value in multiples.items():
            setattr(rollout, name, value)
        rollout.save()
        Environment.objects.filter(pk=env.pk).update(rollout=rollout)
        _audit(actor.user, rollout, "rollout.started", share=share, steps=steps, step_minutes=step_minutes)
    return rollout


def _valid_multiples(given: dict[str, Any]) -> dict[str, Decimal | None]:
    """The thresholds given (`...`: the model's default; None: not watched), each a number of at least 1."""
    chosen: dict[str, Decimal | None] = {}
    for name, value in given.items():
        if value is ...:
            continue
        if value is None:
            chosen[name] = None
            continue
        try:
            number = Decimal(str(value))
        except ArithmeticError:
            number = Decimal(0)
        if isinstance(value, bool) or not number.is_finite() or not 1 <= number <= 1000:
            raise Invalid("A threshold multiple is a number from 1 to 1000 (or none).", details={"field": name})
        chosen[name] = number
    return chosen


def _valid_steps(steps: Any, share: int) -> list[int]:
    if not isinstance(steps, list) or len(steps) > MAX_STEPS:
        raise Invalid(f"Steps are a list of at most {MAX_STEPS} shares.", details={"field": "steps"})
    previous = share
    for step in steps:
        if isinstance(step, bool) or not isinstance(step, int) or not previous < step <= 100:
            raise Invalid(f"Each step is a share above the one before it ({previous} %), at most 100 "
                          "(100 promotes the candidate).", details={"field": "steps"})
        previous = step
    if 100 in steps[:-1]:
        raise Invalid("100 % promotes the candidate: it can only be the last step.", details={"field": "steps"})
    return list(steps)


def get_rollout(*, actor: Actor, agent: Agent, environment: str, rollout_id: Any) -> Rollout:
    """The agent's rollout on that environment (404 for anything else, another agent's or organization's)."""
    from agenticos.tenancy import parse_uuid

    wanted = parse_uuid(rollout_id)
    found = None if wanted is None else (
        Rollout.objects.select_related("agent", "base", "candidate", "organization")
        .filter(pk=wanted, agent=agent, environment=environment, organization=actor.organization).first())
    if found is None:
        raise NotFound("Rollout not found.")
    return found


def _locked_open(rollout: Rollout) -> Rollout:
    locked = Rollout.objects.select_for_update().select_related("base", "candidate", "agent", "organization").get(
        pk=rollout.pk)
    if not locked.is_open:
        raise Conflict(f"The rollout has ended ({locked.get_status_display().lower()}).")
    return locked


def _end(rollout: Rollout, status: str, *, user: Any, reason: str = "") -> None:
    rollout.status = status
    rollout.ended_at = timezone.now()
    rollout.ended_by = user
    update = ["status", "ended_at", "ended_by"]
    if reason:
        rollout.reason = reason[:500]
        update.append("reason")
    if status == Rollout.Status.ROLLED_BACK:
        rollout.share = 0
        update.append("share")
    rollout.save(update_fields=update)
    Environment.objects.filter(agent_id=rollout.agent_id, name=rollout.environment, rollout=rollout).update(
        rollout=None)


def pause_rollout(*, actor: Actor, rollout: Rollout) -> Rollout:
    """No new key goes to the candidate; conversations already on it keep it. Pausing a paused one resumes it."""
    require_agent_access(actor, rollout.agent, PUBLISH)
    with transaction.atomic():
        locked = _locked_open(rollout)
        resuming = locked.status == Rollout.Status.PAUSED
        locked.status = Rollout.Status.ACTIVE if resuming else Rollout.Status.PAUSED
        locked.save(update_fields=["status"])
        _audit(actor.user, locked, "rollout.resumed" if resuming else "rollout.paused")
    return locked


def abort_rollout(*, actor: Actor, rollout: Rollout, reason: str = "") -> Rollout:
    """Everyone goes back to the base, conversations on the candidate too."""
    require_agent_access(actor, rollout.agent, PUBLISH)
    with transaction.atomic():
        locked = _locked_open(rollout)
        _end(locked, Rollout.Status.ABORTED, user=actor.user, reason=reason)
        _audit(actor.user, locked, "rollout.aborted", reason=reason)
    return locked


def promote_rollout(*, actor: Actor, rollout: Rollout) -> Rollout:
    """The candidate becomes the environment's version for everyone, as publishing/promoting does."""
    require_agent_access(actor, rollout.agent, PUBLISH)
    with transaction.atomic():
        locked = _locked_open(rollout)
        _promote(actor, locked)
    return locked


def _promote(actor: Actor, locked: Rollout) -> None:
    from agents.services import promote_environment

    _end(locked, Rollout.Status.PROMOTED, user=actor.user)
    promote_environment(actor=actor, agent=locked.agent, environment=locked.environment,
                        version=locked.candidate.number)
    _audit(actor.user, locked, "rollout.promoted")


def advance_rollout(*, actor: Actor, rollout: Rollout, share: int | None = None, scheduled: bool = False) -> Rollout:
    """Move the candidate's share up: to `share`, or to the rollout's next step. 100 promotes it. A paused
    rollout may be moved by hand (it stays paused); the schedule moves active ones only."""
    require_agent_access(actor, rollout.agent, PUBLISH)
    with transaction.atomic():
        locked = _locked_open(rollout)
        target = share if share is not None else locked.next_step
        if target is None:
            raise Invalid("The rollout has no next step: give a share, or promote it.", details={"field": "share"})
        if isinstance(target, bool) or not isinstance(target, int) or not locked.share < target <= 100:
            raise Invalid(f"A rollout moves up from {locked.share} %, to at most 100 (which promotes it).",
                          details={"field": "share"})
        if target == 100:
            _promote(actor, locked)
            return locked
        before = locked.share
        locked.share, locked.stepped_at = target, timezone.now()
        locked.save(update_fields=["share", "stepped_at"])
        _audit(actor.user, locked, "rollout.advanced", from_share=before, to_share=target,
               by="schedule" if scheduled else "hand")
    return locked


def due_step(rollout: Rollout, measured: dict[str, Any], now: Any = None) -> str:
    """Why the scheduled step may not be taken yet ("" when it is due now)."""
    if rollout.step_minutes is None or rollout.next_step is None or rollout.status != Rollout.Status.ACTIVE:
        return "No scheduled step."
    due_at = rollout.stepped_at + timedelta(minutes=rollout.step_minutes)
    if (now or timezone.now()) < due_at:
        return f"The next step ({rollout.next_step} %) is due at {due_at.isoformat()}."
    if measured["candidate"]["runs"] < rollout.min_runs:
        return (f"The next step ({rollout.next_step} %) waits for {rollout.min_runs} ended runs on "
                f"v{rollout.candidate.number} (it has {measured['candidate']['runs']}).")
    return ""


def _step_actor(rollout: Rollout) -> Actor | None:
    """Who a scheduled step acts as: the person who started the rollout, while they still may publish."""
    if rollout.started_by is None:
        return None
    membership = membership_for(rollout.started_by, rollout.organization_id)
    return actor_for_membership(membership) if membership is not None else None


# ------------------------------------------------------------------ watching


def _version_rows(rollout: Rollout) -> dict[Any, dict[str, Any]]:
    """One aggregate over the rollout's ended runs, per version (PostgreSQL's percentile_cont for p95)."""
    run_table = connection.ops.quote_name(Run._meta.db_table)
    approval_table = connection.ops.quote_name(Approval._meta.db_table)
    feedback_table = connection.ops.quote_name(Feedback._meta.db_table)
    sql = (
        # The table name comes from the model; every value is a parameter.
        "SELECT version_id, COUNT(*), "  # noqa: S608
        "COUNT(*) FILTER (WHERE status = %s), COUNT(*) FILTER (WHERE status = %s), "
        "COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
        "percentile_cont(0.95) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM finished_at - started_at)), "
        f"COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM {approval_table} a WHERE a.run_id = r.id AND a.status = %s)), "
        f"COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM {feedback_table} f WHERE f.run_id = r.id)), "
        f"COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM {feedback_table} f WHERE f.run_id = r.id AND f.rating = %s)) "
        f"FROM {run_table} r WHERE agent_id = %s AND created_at >= %s AND status = ANY(%s) "
        "AND options->>'rollout' = %s GROUP BY version_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [RunStatus.FAILED, RunStatus.GUARDRAIL_BLOCKED, Approval.Status.REJECTED,
                             Feedback.Rating.DOWN, rollout.agent_id, rollout.started_at, ENDED, str(rollout.pk)])
        rows = cursor.fetchall()
    found = {}
    for version_id, runs, failed, blocked, cost, tokens_in, tokens_out, p95, rejected, rated, down in rows:
        found[version_id] = {
            "runs": runs, "failed": failed, "guardrail_blocked": blocked, "approval_rejected": rejected,
            "rated": rated, "thumbs_down": down, "thumbs_down_share": down / rated if rated else None,
            "failed_share": failed / runs if runs else None,
            "cost_usd": str(cost), "cost_per_run_usd": str((Decimal(cost) / runs).quantize(Decimal("0.00000001")))
            if runs else None,
            "p95_duration_seconds": round(float(p95), 3) if p95 is not None else None,
            "input_tokens": tokens_in, "output_tokens": tokens_out,
        }
    return found


EMPTY = {"runs": 0, "failed": 0, "guardrail_blocked": 0, "approval_rejected": 0, "rated": 0, "thumbs_down": 0,
         "thumbs_down_share": None, "failed_share": None, "cost_usd": "0",
         "cost_per_run_usd": None, "p95_duration_seconds": None, "input_tokens": 0, "output_tokens": 0}


def two_proportion_z_test(failed_a: int, runs_a: int, failed_b: int, runs_b: int) -> tuple[float, float] | None:
    """(z, two-sided p-value) of the pooled two-proportion z-test, or None when it says nothing (no runs, or no
    variation at all). Hand-written: the closed form is three lines with `math.erfc` (the normal tail), not worth
    scipy in the web process."""
    if not runs_a or not runs_b:
        return None
    pooled = (failed_a + failed_b) / (runs_a + runs_b)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / runs_a + 1 / runs_b))
    if spread == 0:
        return None
    z = (failed_b / runs_b - failed_a / runs_a) / spread
    return z, math.erfc(abs(z) / math.sqrt(2))


# The shares a rollout watches with the same rule (`crossed_threshold`) and the same test (`_compare`):
# (threshold field, count, out of, what the reason says the candidate did).
RATE_THRESHOLDS = (
    ("failure_multiple", "failed", "runs", "failed {count} of {total} runs"),
    ("guardrail_multiple", "guardrail_blocked", "runs", "was blocked by a guardrail in {count} of {total} runs"),
    ("rejection_multiple", "approval_rejected", "runs", "had a tool call rejected in {count} of {total} runs"),
    ("thumbs_down_multiple", "thumbs_down", "rated", "got 👎 on {count} of {total} rated answers"),
)


def _compare(base: dict[str, Any], candidate: dict[str, Any], count: str, total: str) -> dict[str, Any]:
    """The candidate's share of `count` against the base's, with the two-proportion z-test once each side has
    MIN_RUNS_FOR_TEST of `total`."""
    enough = min(base[total], candidate[total]) >= MIN_RUNS_FOR_TEST
    test = two_proportion_z_test(base[count], base[total], candidate[count], candidate[total])
    shares = [side[count] / side[total] if side[total] else None for side in (base, candidate)]
    what = "ended runs" if total == "runs" else "rated answers"
    return {
        "enough_runs": enough,
        "note": "" if enough else f"Not enough runs yet: at least {MIN_RUNS_FOR_TEST} {what} on each version.",
        "difference": shares[1] - shares[0] if None not in shares else None,  # type: ignore[operator]
        "z": round(test[0], 4) if enough and test else None,
        "p_value": round(test[1], 6) if enough and test else None,
        "significant": bool(enough and test and test[1] < 0.05),
    }


def metrics(rollout: Rollout) -> dict[str, Any]:
    rows = _version_rows(rollout)
    base = {**EMPTY, **rows.get(rollout.base_id, {}), "version": rollout.base.number}
    candidate = {**EMPTY, **rows.get(rollout.candidate_id, {}), "version": rollout.candidate.number}
    failed = _compare(base, candidate, "failed", "runs")
    comparison: dict[str, Any] = {
        "test": "two-proportion z-test (pooled, two-sided) on the failed share",
        "enough_runs": failed["enough_runs"], "note": failed["note"],
        "failed_share_difference": failed["difference"], "z": failed["z"], "p_value": failed["p_value"],
        "significant": failed["significant"],
    }
    # The same test on every watched share (failures, guardrail blocks, rejections, 👎).
    comparisons = {count: _compare(base, candidate, count, total) for _field, count, total, _text in RATE_THRESHOLDS}
    measured = {"base": base, "candidate": candidate, "comparison": comparison, "comparisons": comparisons}
    measured["next_step"] = {"share": rollout.next_step, "scheduled": rollout.step_minutes is not None,
                             "waiting_for": due_step(rollout, measured) if rollout.next_step else ""}
    return measured


def crossed_threshold(rollout: Rollout, measured: dict[str, Any]) -> str:
    """Why the candidate must be rolled back, or "" while it holds up."""
    base, candidate = measured["base"], measured["candidate"]
    if candidate["runs"] < rollout.min_runs:
        return ""
    for field, count, total, text in RATE_THRESHOLDS:
        why = _rate_crossed(rollout, base, candidate, getattr(rollout, field), count, total, text)
        if why:
            return why
    if rollout.cost_increase_pct is not None and base["runs"] and candidate["cost_per_run_usd"] is not None:
        base_cost, cost = Decimal(base["cost_per_run_usd"]), Decimal(candidate["cost_per_run_usd"])
        if base_cost > 0 and cost > base_cost * (1 + Decimal(rollout.cost_increase_pct) / 100):
            return (f"v{rollout.candidate.number} costs ${cost} per run, more than {rollout.cost_increase_pct} % "
                    f"above v{rollout.base.number}'s ${base_cost}.")
    return ""


def _rate_crossed(rollout: Rollout, base: dict[str, Any], candidate: dict[str, Any], multiple: Any, count: str,
                  total: str, text: str) -> str:
    """One watched share's rule, the same for each: with at least `min_runs` of `total` on the candidate, any
    `count` at `multiple` × the base's share or more."""
    if multiple is None or candidate[total] < rollout.min_runs or not candidate[count]:
        return ""
    rate = candidate[count] / candidate[total]
    base_rate = base[count] / base[total] if base[total] else 0.0
    if rate < float(multiple) * base_rate:
        return ""
    did = text.format(count=candidate[count], total=candidate[total])
    return (f"v{rollout.candidate.number} {did} ({rate:.0%}), at least {multiple}× "
            f"v{rollout.base.number}'s {base_rate:.0%}.")


def check_thresholds(rollout_id: Any) -> bool:
    """Roll the rollout back if its candidate crossed a threshold. True when it did."""
    rollout = Rollout.objects.select_related("base", "candidate", "agent__owner", "organization", "started_by").filter(
        pk=rollout_id, status__in=OPEN).first()
    if rollout is None:
        return False
    why = crossed_threshold(rollout, metrics(rollout))
    if not why:
        return False
    with transaction.atomic():
        locked = Rollout.objects.select_for_update().filter(pk=rollout.pk, status__in=OPEN).first()
        if locked is None:  # another run's ending got there first
            return False
        rollout.status = locked.status
        _end(rollout, Rollout.Status.ROLLED_BACK, user=None, reason=why)
        _audit(None, rollout, "rollout.rolled_back", reason=why)
        recipient = rollout.agent.owner or rollout.started_by
        if recipient is not None:
            text = (f"{rollout.agent.name}: the {rollout.environment} rollout of v{rollout.candidate.number} "
                    f"was rolled back. {why}")
            notify(organization=rollout.organization, recipient=recipient,
                   kind=Notification.Kind.ROLLOUT_ROLLED_BACK, text=text, link=f"/agents/{rollout.agent_id}/")
            _email(recipient, subject=f"Rollout rolled back: {rollout.agent.name} v{rollout.candidate.number}",
                   text=f"{text}\n\n{settings.FRONTEND_URL}/agents/{rollout.agent_id}/")
    logger.info("rollout %s rolled back: %s", rollout.pk, why)
    return True


def _email(recipient: Any, *, subject: str, text: str) -> None:
    """The owner hears of a rollback by e-mail too, through the deployment's EMAIL_BACKEND (the console in
    development), after the rollback is committed; a mail server's failure is logged, never raised."""
    address = getattr(recipient, "email", "")
    if address:
        transaction.on_commit(lambda: send_mail(subject=subject, message=text, from_email=None,
                                                recipient_list=[address], fail_silently=True))


def run_ended(run: Run, status: str) -> None:
    """The run-ended hook: a run admitted under a rollout on its candidate re-checks the thresholds. Cheap for
    every other run (its options say so without a query)."""
    rollout_id = (run.options or {}).get("rollout")
    if not rollout_id or status not in ENDED:
        return
    try:
        check_thresholds(rollout_id)
    except Exception:  # a watcher's failure never fails the run that ended; the beat task checks again
        logger.exception("rollout %s: checking thresholds failed", rollout_id)


def answer_rated(run_id: Any) -> None:
    """A 👎 was given on a run's answer: a run admitted under an open rollout re-checks its thresholds (a 👎
    comes after the run ended, so the run-ended hook has already looked)."""
    rollout_id = Run.objects.filter(pk=run_id).values_list("options__rollout", flat=True).first()
    if not rollout_id:
        return
    try:
        check_thresholds(rollout_id)
    except Exception:  # the rating is saved whatever the watcher does; the beat task checks again
        logger.exception("rollout %s: checking thresholds failed", rollout_id)


def take_due_step(rollout_id: Any) -> bool:
    """Advance an active rollout on its schedule when its step is due (see `due_step`). True when it moved."""
    rollout = Rollout.objects.select_related("base", "candidate", "agent", "organization", "started_by").filter(
        pk=rollout_id, status=Rollout.Status.ACTIVE).first()
    if rollout is None or rollout.step_minutes is None or rollout.next_step is None:
        return False
    measured = metrics(rollout)
    if crossed_threshold(rollout, measured) or due_step(rollout, measured):
        return False
    actor = _step_actor(rollout)
    try:
        if actor is None:
            raise Invalid("who started the rollout is no longer a member")
        advance_rollout(actor=actor, rollout=rollout, share=rollout.next_step, scheduled=True)
    except DomainError as exc:
        # The person who started it left or lost the right to publish: the schedule stops; a person moves it on.
        logger.warning("rollout %s: the scheduled step was not taken: %s", rollout.pk, exc)
        return False
    return True


def watch_open_rollouts() -> int:
    """The beat: check every active rollout's thresholds (runs ended by the sweeps never pass the runner's hook)
    and take the steps that are due. Returns how many rollouts it rolled back or moved."""
    moved = 0
    for pk in Rollout.objects.filter(status=Rollout.Status.ACTIVE).values_list("pk", flat=True):
        moved += check_thresholds(pk) or take_due_step(pk)
    return moved
