"""Evaluation suites: every state change (suites and cases, suite runs) and the reads that load them.

Rights are the agent's (governance.grants): view to read a suite or a run, edit to change a suite or start
a run (and the run right, since a suite run spends like any run). Another organization's suite, run or agent
is 404, and so is an agent the actor cannot see.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, parse_uuid
from agents.models import Agent, AgentVersion, Environment, ModelProfile, RunStatus
from agents.runs import check_prompt
from agents.spec import AgentSpec, dump_spec
from evals import checks as checks_mod
from evals.answers import DECISIONS
from evals.models import Case, CaseResult, ReplaySet, Suite, SuiteRun
from governance.grants import EDIT, VIEW, require_agent_access

M = TypeVar("M", SuiteRun, ReplaySet)

MAX_HISTORY_TURNS = 20
MAX_ATTACHMENTS = 5
MAX_ATTACHMENT_CHARS = 200_000
ATTACHMENT_TYPES = ("text/plain", "text/markdown", "text/csv")
SUITE_FIELDS = ("name", "description", "gates_publish")


def _problem(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def _record(actor: Actor, action: str, target=None, **details: Any) -> None:
    if actor.api_key is not None:
        details["api_key"] = actor.api_key.prefix
    audit.record(actor=actor.user, organization=actor.organization, action=action, target=target, details=details,
                 ip_address=actor.extra.get("ip"))


# ------------------------------------------------------------------ loading


def agent_suites(actor: Actor, agent: Agent) -> QuerySet[Suite]:
    require_agent_access(actor, agent, VIEW)
    return Suite.objects.filter(organization=actor.organization, agent=agent)


def suite_for(actor: Actor, agent: Agent, suite_id: Any, *, level: str = VIEW) -> Suite:
    """One suite of this agent (404 for another agent's, another organization's or a malformed id)."""
    require_agent_access(actor, agent, level)
    wanted = parse_uuid(str(suite_id))
    suite = Suite.objects.filter(organization=actor.organization, agent=agent, pk=wanted).first() if wanted else None
    if suite is None:
        raise NotFound("Evaluation suite not found.")
    return suite


def on_visible_agent(actor: Actor, model: type[M], pk: Any, *, level: str, missing: str) -> M:
    """One row of `model` (a suite run, a replay set: anything with an organization and an agent) in the actor's
    organization, on an agent they may reach at `level`; `missing` (a 404) for anything else, the agent's own
    refusal included, so a hidden agent's rows are not told apart from rows that do not exist."""
    wanted = parse_uuid(str(pk))
    found = (model._default_manager.filter(organization=actor.organization, pk=wanted)
             .select_related("agent", "version").first() if wanted else None)
    if found is None:
        raise NotFound(missing)
    try:
        require_agent_access(actor, found.agent, level)
    except NotFound:
        raise NotFound(missing) from None
    return found


def suite_run_for(actor: Actor, run_id: Any, *, level: str = VIEW) -> SuiteRun:
    """One suite run of the actor's organization on an agent they can see (404 otherwise)."""
    return on_visible_agent(actor, SuiteRun, run_id, level=level, missing="Suite run not found.")


def agent_suite_runs(actor: Actor, agent: Agent) -> QuerySet[SuiteRun]:
    require_agent_access(actor, agent, VIEW)
    return SuiteRun.objects.filter(organization=actor.organization, agent=agent).select_related("version")


# ------------------------------------------------------------------ cases


def _text_list(raw: Any, field: str, problems: list[dict[str, str]]) -> list[dict[str, str]]:
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        problems.append(_problem(field, "Must be a list."))
        return []
    return raw


def _history(raw: Any, field: str, problems: list[dict[str, str]]) -> list[dict[str, str]]:
    turns = []
    items = _text_list(raw, field, problems)
    if len(items) > MAX_HISTORY_TURNS:
        problems.append(_problem(field, f"At most {MAX_HISTORY_TURNS} prior turns."))
        return []
    for index, item in enumerate(items):
        where = f"{field}.{index}"
        if not isinstance(item, dict) or set(item) - {"role", "content"}:
            problems.append(_problem(where, "Each turn is {role, content}."))
            continue
        if item.get("role") not in ("user", "assistant"):
            problems.append(_problem(f"{where}.role", "Either 'user' or 'assistant'."))
        content = item.get("content")
        if not isinstance(content, str) or not content.strip() or len(content) > settings.MAX_MESSAGE_CHARS:
            problems.append(_problem(f"{where}.content", "A non-empty text within the message limit."))
            continue
        turns.append({"role": str(item["role"]), "content": content})
    return turns


def _attachments(raw: Any, field: str, problems: list[dict[str, str]]) -> list[dict[str, str]]:
    files = []
    items = _text_list(raw, field, problems)
    if len(items) > MAX_ATTACHMENTS:
        problems.append(_problem(field, f"At most {MAX_ATTACHMENTS} attachments."))
        return []
    for index, item in enumerate(items):
        where = f"{field}.{index}"
        if not isinstance(item, dict) or set(item) - {"name", "mime", "content"}:
            problems.append(_problem(where, "Each attachment is {name, mime, content}."))
            continue
        name = str(item.get("name") or "").strip()
        if not name or "/" in name or "\\" in name or name.startswith(".") or len(name) > 120:
            problems.append(_problem(f"{where}.name", "A plain file name (no folders), at most 120 characters."))
        mime = item.get("mime") or "text/plain"
        if mime not in ATTACHMENT_TYPES:
            problems.append(_problem(f"{where}.mime", f"One of {', '.join(ATTACHMENT_TYPES)}."))
        content = item.get("content")
        if not isinstance(content, str) or len(content) > MAX_ATTACHMENT_CHARS:
            problems.append(_problem(f"{where}.content", f"Text of at most {MAX_ATTACHMENT_CHARS} characters."))
            continue
        files.append({"name": name, "mime": str(mime), "content": content})
    return files


def _judge_profiles(actor: Actor, checks: list[dict[str, Any]], field: str, problems: list[dict[str, str]]) -> None:
    for index, check in enumerate(checks):
        if check["kind"] != "judge":
            continue
        wanted = parse_uuid(check["model_profile_id"])
        found = wanted is not None and ModelProfile.objects.filter(
            organization=actor.organization, pk=wanted, kind=ModelProfile.Kind.CHAT).exists()
        if not found:
            problems.append(_problem(f"{field}.{index}.model_profile_id", "No chat model profile with this id."))


def clean_case(actor: Actor, raw: Any, field: str, problems: list[dict[str, str]]) -> dict[str, Any] | None:
    """One case as stored, or None with its problems appended (every problem at once)."""
    if not isinstance(raw, dict):
        problems.append(_problem(field, "A case is a mapping."))
        return None
    known = {"name", "prompt", "history", "attachments", "checks", "approvals", "default_approval", "answers"}
    for key in set(raw) - known:
        problems.append(_problem(f"{field}.{key}", "Unknown field."))
    before = len(problems)
    name = str(raw.get("name") or "").strip()
    if not name or len(name) > 120:
        problems.append(_problem(f"{field}.name", "A name of 1-120 characters."))
    try:
        prompt = check_prompt(str(raw.get("prompt") or ""))
    except Invalid as exc:
        problems.append(_problem(f"{field}.prompt", exc.message))
        prompt = ""
    history = _history(raw.get("history"), f"{field}.history", problems)
    attachments = _attachments(raw.get("attachments"), f"{field}.attachments", problems)
    try:
        case_checks = checks_mod.parse_checks(raw.get("checks") or [], field_prefix=f"{field}.checks")
    except Invalid as exc:
        problems.extend(exc.details.get("problems", []))
        case_checks = []
    _judge_profiles(actor, case_checks, f"{field}.checks", problems)
    approvals = raw.get("approvals") or {}
    if not isinstance(approvals, dict) or not all(
            isinstance(k, str) and v in DECISIONS for k, v in approvals.items()):
        problems.append(_problem(f"{field}.approvals", f"A mapping of tool id → {' | '.join(DECISIONS)}."))
    default_approval = raw.get("default_approval") or "reject"
    if default_approval not in DECISIONS:
        problems.append(_problem(f"{field}.default_approval", f"One of {', '.join(DECISIONS)}."))
    answers = raw.get("answers") or {}
    if not isinstance(answers, dict) or not all(
            isinstance(k, str) and (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)))
            for k, v in answers.items()):
        problems.append(_problem(f"{field}.answers", "A mapping of question header → a label or a list of labels."))
    if len(problems) > before:
        return None
    return {"name": name, "prompt": prompt, "history": history, "attachments": attachments, "checks": case_checks,
            "approvals": approvals, "default_approval": default_approval, "answers": answers}


def _clean_cases(actor: Actor, raw: Any, problems: list[dict[str, str]]) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        problems.append(_problem("cases", "A list of cases."))
        return []
    if len(raw) > settings.EVAL_MAX_CASES:
        problems.append(_problem("cases", f"At most {settings.EVAL_MAX_CASES} cases per suite."))
        return []
    cleaned = [clean_case(actor, item, f"cases.{index}", problems) for index, item in enumerate(raw)]
    names = [c["name"] for c in cleaned if c]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(_problem("cases", f"Two cases are named {name!r}."))
    return [c for c in cleaned if c]


def _clean_suite(actor: Actor, data: dict[str, Any], problems: list[dict[str, str]], *,
                 creating: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if "name" in data or creating:
        name = str(data.get("name") or "").strip()
        if not name or len(name) > 120:
            problems.append(_problem("name", "A name of 1-120 characters."))
        fields["name"] = name
    if "description" in data:
        fields["description"] = str(data.get("description") or "")[:4000]
    if "gates_publish" in data:
        if not isinstance(data["gates_publish"], bool):
            problems.append(_problem("gates_publish", "true or false."))
        fields["gates_publish"] = bool(data["gates_publish"])
    if "replay_checks" in data:
        try:
            fields["replay_checks"] = checks_mod.parse_checks(data["replay_checks"], field_prefix="replay_checks")
        except Invalid as exc:
            problems.extend(exc.details.get("problems") or [])
        else:
            _judge_profiles(actor, fields["replay_checks"], "replay_checks", problems)
    return fields


def _write_cases(suite: Suite, cases: list[dict[str, Any]]) -> None:
    suite.cases.all().delete()
    Case.objects.bulk_create([Case(suite=suite, position=index, **case) for index, case in enumerate(cases)])


def create_suite(*, actor: Actor, agent: Agent, data: dict[str, Any]) -> Suite:
    require_agent_access(actor, agent, EDIT)
    problems: list[dict[str, str]] = []
    fields = _clean_suite(actor, data, problems, creating=True)
    cases = _clean_cases(actor, data.get("cases") or [], problems)
    if problems:
        raise Invalid("The evaluation suite is invalid.", details={"problems": problems})
    try:
        with transaction.atomic():
            suite = Suite.objects.create(organization=actor.organization, agent=agent, created_by=actor.user, **fields)
            _write_cases(suite, cases)
            _record(actor, "eval_suite.created", target=suite, agent_id=str(agent.pk), cases=len(cases))
    except IntegrityError:
        raise Conflict("This agent already has a suite with that name.", details={"field": "name"}) from None
    return suite


def update_suite(*, actor: Actor, suite: Suite, data: dict[str, Any]) -> Suite:
    """Change the suite's fields; `cases`, when given, replaces the whole list."""
    require_agent_access(actor, suite.agent, EDIT)
    problems: list[dict[str, str]] = []
    fields = _clean_suite(actor, data, problems, creating=False)
    cases = _clean_cases(actor, data["cases"], problems) if "cases" in data else None
    if problems:
        raise Invalid("The evaluation suite is invalid.", details={"problems": problems})
    try:
        with transaction.atomic():
            for key, value in fields.items():
                setattr(suite, key, value)
            suite.updated_at = timezone.now()
            suite.save()
            if cases is not None:
                _write_cases(suite, cases)
            _record(actor, "eval_suite.updated", target=suite, fields=sorted([*fields, *(["cases"] if cases is not None else [])]))
    except IntegrityError:
        raise Conflict("This agent already has a suite with that name.", details={"field": "name"}) from None
    return suite


def delete_suite(*, actor: Actor, suite: Suite) -> None:
    require_agent_access(actor, suite.agent, EDIT)
    with transaction.atomic():
        _record(actor, "eval_suite.deleted", target=suite)
        suite.delete()


def case_dict(case: Case) -> dict[str, Any]:
    return {"id": str(case.pk), "name": case.name, "prompt": case.prompt, "history": case.history,
            "attachments": case.attachments, "checks": case.checks, "approvals": case.approvals,
            "default_approval": case.default_approval, "answers": case.answers}


def suite_cases(suite: Suite) -> list[dict[str, Any]]:
    return [case_dict(case) for case in suite.cases.order_by("position", "name")]


def export_suite_yaml(*, actor: Actor, suite: Suite) -> str:
    from evals.yaml_io import dump_suite_yaml

    require_agent_access(actor, suite.agent, VIEW)
    fields = {"name": suite.name, "description": suite.description, "gates_publish": suite.gates_publish,
              "replay_checks": suite.replay_checks}
    return dump_suite_yaml(agent_slug=suite.agent.slug, suite=fields, cases=suite_cases(suite))


def import_suite_yaml(*, actor: Actor, agent: Agent, text: str, suite: Suite | None = None) -> Suite:
    """A new suite from YAML, or `suite` replaced by it (its cases too)."""
    from evals.yaml_io import parse_suite_yaml

    require_agent_access(actor, agent, EDIT)
    data = parse_suite_yaml(text)
    data.setdefault("cases", [])
    data.setdefault("replay_checks", [])  # the document is the whole suite: an import replaces them too
    if suite is None:
        return create_suite(actor=actor, agent=agent, data=data)
    return update_suite(actor=actor, suite=suite, data=data)


# ------------------------------------------------------------------ suite runs


def _draft_snapshot(actor: Actor, agent: Agent) -> AgentVersion:
    """The draft as a frozen evaluation snapshot (version number 0): checked as publish checks it — an
    editor evaluates only what they could publish — and never in an environment."""
    from capabilities.spec_checks import publish_problems

    agent = Agent.objects.get(pk=agent.pk)  # the draft as it is now
    problems = publish_problems(actor, agent.draft_spec, agent=agent)
    if problems:
        raise Invalid("The draft cannot be evaluated: it would not publish.", details={"problems": problems})
    spec = dump_spec(AgentSpec.model_validate(agent.draft_spec))
    same = AgentVersion.objects.filter(agent=agent, number=0, spec=spec).order_by("-created_at").first()
    if same is not None:
        return same
    return AgentVersion.objects.create(agent=agent, number=0, spec=spec, published_by=actor.user,
                                       note="Evaluation snapshot of the draft")


def resolve_target(actor: Actor, agent: Agent, target: Any) -> tuple[str, AgentVersion]:
    """"draft", a version number ("7" / "v7" / 7) or an environment name → (label, version to run)."""
    raw = str(target if target is not None else "draft").strip()
    if raw == "draft":
        return "draft", _draft_snapshot(actor, agent)
    digits = raw[1:] if raw[:1] == "v" else raw
    if digits_only(digits) and int(digits) > 0:
        version = AgentVersion.objects.filter(agent=agent, number=int(digits)).first()
        if version is None:
            raise NotFound(f"Version {digits} not found.")
        return f"v{version.number}", version
    env = Environment.objects.filter(agent=agent, name=raw).select_related("version").first()
    if env is None:
        raise NotFound(f"Unknown target {raw!r}: use 'draft', a version number or an environment name.")
    return f"v{env.version.number}", env.version


def start_suite_run(*, actor: Actor, suite: Suite, target: Any = "draft",
                    purpose: str = SuiteRun.Purpose.MANUAL, enqueue: bool = True) -> SuiteRun:
    """A suite run (queued) with a pending result per case; its driver is enqueued after commit."""
    agent = suite.agent
    require_agent_access(actor, agent, EDIT)
    actor.require("agents:run")
    cases = suite_cases(suite)
    if not cases:
        raise Invalid("The suite has no cases to run.", details={"problems": [_problem("cases", "No cases.")]})
    with transaction.atomic():
        label, version = resolve_target(actor, agent, target)
        suite_run = SuiteRun.objects.create(
            organization=actor.organization, agent=agent, suite=suite, suite_name=suite.name, target=label,
            version=version, purpose=purpose, started_by=actor.user, acting_role=actor.role or "", cases=cases,
            max_concurrent=settings.EVAL_MAX_CONCURRENT, total=len(cases),
        )
        CaseResult.objects.bulk_create([
            CaseResult(suite_run=suite_run, case_id=case["id"], case_name=case["name"], position=index)
            for index, case in enumerate(cases)
        ])
        _record(actor, "eval_run.started", target=suite_run, agent_id=str(agent.pk), suite=suite.name,
                target_version=label, purpose=purpose)
        if enqueue:
            from evals.tasks import run_suite

            transaction.on_commit(lambda: run_suite.delay(str(suite_run.pk)))
    return suite_run


# ------------------------------------------------------------------ comparison


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def compare_runs(*, actor: Actor, first: SuiteRun, second: SuiteRun) -> dict[str, Any]:
    """Two suite runs side by side, matched by case (id, else name): which cases changed outcome, which
    checks flipped, cost and latency deltas (second − first)."""
    if first.agent_id != second.agent_id:
        raise Invalid("Both suite runs must be of the same agent.", details={"field": "with"})
    a_rows = {r.case_id: r for r in first.results.all()}
    b_rows = {r.case_id: r for r in second.results.all()}
    a_by_name = {r.case_name: r for r in a_rows.values()}
    cases = []
    matched: set[Any] = set()
    for b in sorted(b_rows.values(), key=lambda r: r.position):
        a = a_rows.get(b.case_id) or a_by_name.get(b.case_name)
        if a is not None:
            matched.add(a.case_id)
        cases.append(_case_delta(a, b))
    for a in sorted(a_rows.values(), key=lambda r: r.position):
        if a.case_id not in matched:
            cases.append(_case_delta(a, None))
    a_ms = [r.duration_ms for r in a_rows.values() if r.duration_ms is not None]
    b_ms = [r.duration_ms for r in b_rows.values() if r.duration_ms is not None]
    a_mean, b_mean = _mean(a_ms), _mean(b_ms)
    return {
        "first": {"id": str(first.pk), "target": first.target, "status": first.status, "passed": first.passed,
                  "failed": first.failed, "skipped": first.skipped, "cost_usd": f"{first.cost_usd:f}"},
        "second": {"id": str(second.pk), "target": second.target, "status": second.status, "passed": second.passed,
                   "failed": second.failed, "skipped": second.skipped, "cost_usd": f"{second.cost_usd:f}"},
        "changed": [c["case_name"] for c in cases if c["changed"]],
        "cost_delta_usd": f"{(second.cost_usd - first.cost_usd):f}",
        "mean_duration_delta_ms": (round(b_mean - a_mean) if a_mean is not None and b_mean is not None else None),
        "cases": cases,
    }


def _case_delta(a: CaseResult | None, b: CaseResult | None) -> dict[str, Any]:
    row = b or a
    assert row is not None
    a_checks = {c["index"]: c for c in (a.checks if a else [])}
    flipped = [
        {"index": c["index"], "label": c["label"], "first": a_checks[c["index"]]["passed"], "second": c["passed"]}
        for c in (b.checks if b else []) if c["index"] in a_checks and a_checks[c["index"]]["passed"] != c["passed"]
    ]
    cost = (b.cost_usd + b.judge_cost_usd if b else Decimal("0")) - (a.cost_usd + a.judge_cost_usd if a else Decimal("0"))
    duration = (b.duration_ms - a.duration_ms) if a and b and a.duration_ms is not None and b.duration_ms is not None \
        else None
    return {
        "case_name": row.case_name,
        "first": a.status if a else None,
        "second": b.status if b else None,
        "changed": (a.status if a else None) != (b.status if b else None),
        "checks_flipped": flipped,
        "cost_delta_usd": f"{cost:f}" if a and b else None,
        "duration_delta_ms": duration,
    }


TERMINAL_OR_PARKED = {*(s.value for s in RunStatus if s not in (RunStatus.QUEUED, RunStatus.RUNNING))}


FEEDBACK_SUITE = "Feedback from chat"


def case_from_feedback(*, actor: Actor, feedback: Any) -> Case:
    """A 👎 answer of web chat as a case of its agent's "Feedback from chat" suite (made on first use): the
    person's message as the prompt, the turns before it on the branch as the history, a check that the run
    completes, and the person's comment as the case's note (the author adds the checks the comment asks for).
    Once per feedback: a second click answers the case already made. Needs edit on the agent."""
    from agents.models import Feedback, Message

    agent = feedback.agent
    require_agent_access(actor, agent, EDIT)
    if feedback.rating != Feedback.Rating.DOWN:
        raise Invalid("Only a 👎 answer becomes an evaluation case.", code="not_a_thumbs_down")
    with transaction.atomic():
        feedback = Feedback.objects.select_for_update().get(pk=feedback.pk)
        made = Case.objects.filter(pk=feedback.eval_case_id, suite__agent=agent).first() if feedback.eval_case_id else None
        if made is not None:
            return made
        answer = feedback.message
        earlier = list(Message.objects.filter(conversation_id=answer.conversation_id, on_branch=True, id__lt=answer.pk,
                                              role__in=["user", "assistant"]).exclude(content="")
                       .order_by("-id").values("role", "content")[:MAX_HISTORY_TURNS + 1])[::-1]
        if not earlier or earlier[-1]["role"] != "user":
            raise Invalid("This answer replies to no message to ask again.", code="no_prompt")
        prompt = earlier.pop()["content"]
        suite, _ = Suite.objects.get_or_create(
            agent=agent, name=FEEDBACK_SUITE,
            defaults={"organization": actor.organization, "created_by": actor.user,
                      "description": "Answers people marked 👎 in web chat, each with its note."})
        note = f"Marked 👎 in chat{': ' + feedback.comment if feedback.comment else ''}"
        case = Case.objects.create(
            suite=suite, position=suite.cases.count(), name=f"Feedback #{feedback.pk}"[:120], prompt=prompt,
            history=[{"role": t["role"], "content": t["content"]} for t in earlier[-MAX_HISTORY_TURNS:]],
            checks=[{"kind": "status", "status": RunStatus.COMPLETED, "label": note[:200]}])
        feedback.eval_case_id = case.pk
        feedback.save(update_fields=["eval_case_id"])
        _record(actor, "eval_case.from_feedback", target=suite, agent_id=str(agent.pk), case_id=str(case.pk),
                feedback_id=feedback.pk)
    return case
