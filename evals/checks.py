"""A case's checks: their data shape (`CheckSpec`, validated when a case is saved or imported) and the
pydantic-evals evaluators that judge a case's outcome with them.

Every check is one `Evaluator` named `check_<index>`, so a report's assertions map back to the case's
checks one to one. The LLM judge is pydantic-evals' `LLMJudge` on a model profile the author picks, wrapped
in `MeteredModel`: every judge request is checked against the agent's and the organization's caps first and
written to the spend ledger after, like any model request of a run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal, Protocol, cast

import regex
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext, LLMJudge

from agenticos.errors import Invalid
from agents.models import RunStatus

# How long a regex check may search one answer (the `regex` package's timeout: an author's pattern must
# not hold a worker on a catastrophic backtrack).
REGEX_TIMEOUT_SECONDS = 1.0
MAX_CHECKS_PER_CASE = 30


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(default="", max_length=200)


class ContainsCheck(_Check):
    kind: Literal["contains"]
    value: str = Field(min_length=1, max_length=2000)
    case_sensitive: bool = False


class NotContainsCheck(_Check):
    kind: Literal["not_contains"]
    value: str = Field(min_length=1, max_length=2000)
    case_sensitive: bool = False


class RegexCheck(_Check):
    kind: Literal["regex"]
    pattern: str = Field(min_length=1, max_length=1000)
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            regex.compile(value)
        except regex.error as exc:
            raise ValueError(f"Not a valid regular expression: {exc}") from None
        return value


class EqualsCheck(_Check):
    kind: Literal["equals"]
    value: str = Field(max_length=20_000)
    # Surrounding whitespace is the model's, not the answer's.
    strip: bool = True
    case_sensitive: bool = True


class ToolCalledCheck(_Check):
    kind: Literal["tool_called"]
    tool: str = Field(min_length=1, max_length=200, description="The stable tool id (or the name the model sees).")
    # Each listed argument must have exactly this value in at least one call.
    args: dict[str, Any] = Field(default_factory=dict)


class ToolNotCalledCheck(_Check):
    kind: Literal["tool_not_called"]
    tool: str = Field(min_length=1, max_length=200)


class StatusCheck(_Check):
    kind: Literal["status"]
    status: str

    @field_validator("status")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in RunStatus.values:
            raise ValueError(f"Unknown run status {value!r} (one of {', '.join(RunStatus.values)}).")
        return value


class MaxCostCheck(_Check):
    kind: Literal["max_cost"]
    usd: Decimal = Field(ge=0, le=Decimal("100000"), allow_inf_nan=False)


class MaxStepsCheck(_Check):
    kind: Literal["max_steps"]
    steps: int = Field(ge=1, le=1000)


class JudgeCheck(_Check):
    kind: Literal["judge"]
    rubric: str = Field(min_length=1, max_length=4000)
    model_profile_id: str
    include_prompt: bool = True


CheckSpec = Annotated[
    ContainsCheck | NotContainsCheck | RegexCheck | EqualsCheck | ToolCalledCheck | ToolNotCalledCheck
    | StatusCheck | MaxCostCheck | MaxStepsCheck | JudgeCheck,
    Field(discriminator="kind"),
]
CHECKS = TypeAdapter(list[CheckSpec])
KINDS = ("contains", "not_contains", "regex", "equals", "tool_called", "tool_not_called", "status", "max_cost",
         "max_steps", "judge")


def parse_checks(raw: Any, *, field_prefix: str = "checks") -> list[dict[str, Any]]:
    """The checks as stored (normalized JSON), or Invalid naming every bad field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise Invalid("Checks must be a list.", details={"problems": [{"field": field_prefix, "message": "Not a list."}]})
    if len(raw) > MAX_CHECKS_PER_CASE:
        raise Invalid(f"At most {MAX_CHECKS_PER_CASE} checks per case.",
                      details={"problems": [{"field": field_prefix, "message": "Too many checks."}]})
    try:
        parsed = CHECKS.validate_python(raw)
    except ValidationError as exc:
        problems = [
            {"field": ".".join([field_prefix, *(str(p) for p in error["loc"])]), "message": error["msg"]}
            for error in exc.errors()
        ]
        raise Invalid("A check is invalid.", details={"problems": problems}) from None
    return [check.model_dump(mode="json") for check in parsed]


def describe(check: dict[str, Any]) -> str:
    """A short reading of a check for tables and reasons."""
    if check.get("label"):
        return str(check["label"])
    kind = check.get("kind")
    text = {
        "contains": lambda c: f"contains {c['value']!r}",
        "not_contains": lambda c: f"does not contain {c['value']!r}",
        "regex": lambda c: f"matches /{c['pattern']}/",
        "equals": lambda c: f"equals {c['value'][:60]!r}",
        "tool_called": lambda c: f"calls {c['tool']}" + (f" with {c['args']}" if c.get("args") else ""),
        "tool_not_called": lambda c: f"never calls {c['tool']}",
        "status": lambda c: f"ends {c['status']}",
        "max_cost": lambda c: f"costs at most ${c['usd']}",
        "max_steps": lambda c: f"at most {c['steps']} model requests",
        "judge": lambda c: f"judge: {c['rubric'][:60]}",
    }.get(str(kind))
    return text(check) if text else str(kind)


# ------------------------------------------------------------------ the outcome a case's run produced


@dataclass
class CaseOutcome:
    """What a case's run did, as the evaluators see it."""

    run_id: str | None
    status: str
    output: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"tool_id", "tool_name", "args"}]
    input_tokens: int = 0
    output_tokens: int = 0
    steps: int = 0
    cost_usd: Decimal = Decimal("0")
    duration_ms: int | None = None
    # Set when the case never ran (a budget was used up first): every check is then "not run".
    skipped: str = ""


def _norm(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


@dataclass(repr=False)
class Check(Evaluator[Any, CaseOutcome, Any]):
    """One deterministic check of a case (every kind but the judge)."""

    index: int
    spec: dict[str, Any]

    def get_default_evaluation_name(self) -> str:
        return f"check_{self.index}"

    def evaluate(self, ctx: EvaluatorContext[Any, CaseOutcome, Any]) -> EvaluationReason:
        outcome = ctx.output
        if outcome.skipped:
            return EvaluationReason(value=False, reason=outcome.skipped)
        passed, reason = getattr(self, f"_{self.spec['kind']}")(outcome, self.spec)
        return EvaluationReason(value=bool(passed), reason=reason or None)

    @staticmethod
    def _contains(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        found = _norm(spec["value"], spec["case_sensitive"]) in _norm(outcome.output, spec["case_sensitive"])
        return found, "" if found else f"The answer does not contain {spec['value']!r}."

    @staticmethod
    def _not_contains(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        found = _norm(spec["value"], spec["case_sensitive"]) in _norm(outcome.output, spec["case_sensitive"])
        return not found, f"The answer contains {spec['value']!r}." if found else ""

    @staticmethod
    def _regex(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        flags = regex.IGNORECASE if spec.get("ignore_case") else 0
        try:
            match = regex.search(spec["pattern"], outcome.output, flags=flags, timeout=REGEX_TIMEOUT_SECONDS)
        except TimeoutError:
            return False, f"The pattern took longer than {REGEX_TIMEOUT_SECONDS:g} s on the answer."
        return match is not None, "" if match else f"The answer does not match /{spec['pattern']}/."

    @staticmethod
    def _equals(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        got, want = outcome.output, spec["value"]
        if spec.get("strip", True):
            got, want = got.strip(), want.strip()
        same = _norm(got, spec["case_sensitive"]) == _norm(want, spec["case_sensitive"])
        return same, "" if same else f"The answer is {got[:200]!r}, not {want[:200]!r}."

    @staticmethod
    def _calls_of(outcome: CaseOutcome, tool: str) -> list[dict[str, Any]]:
        return [c for c in outcome.tool_calls if tool in (c.get("tool_id"), c.get("tool_name"))]

    @classmethod
    def _tool_called(cls, outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        calls = cls._calls_of(outcome, spec["tool"])
        if not calls:
            called = sorted({str(c.get("tool_id")) for c in outcome.tool_calls}) or ["none"]
            return False, f"{spec['tool']} was not called (called: {', '.join(called)})."
        wanted = spec.get("args") or {}
        if not wanted:
            return True, ""
        for call in calls:
            args = call.get("args") or {}
            if all(key in args and args[key] == value for key, value in wanted.items()):
                return True, ""
        return False, f"{spec['tool']} was called, but never with {wanted} (got {calls[0].get('args')})."

    @classmethod
    def _tool_not_called(cls, outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        calls = cls._calls_of(outcome, spec["tool"])
        return not calls, f"{spec['tool']} was called {len(calls)} time(s)." if calls else ""

    @staticmethod
    def _status(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        same = outcome.status == spec["status"]
        return same, "" if same else f"The run ended {outcome.status}, not {spec['status']}."

    @staticmethod
    def _max_cost(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        bound = Decimal(str(spec["usd"]))
        ok = outcome.cost_usd <= bound
        return ok, "" if ok else f"The run cost ${outcome.cost_usd:f}, over ${bound:f}."

    @staticmethod
    def _max_steps(outcome: CaseOutcome, spec: dict) -> tuple[bool, str]:
        ok = outcome.steps <= int(spec["steps"])
        return ok, "" if ok else f"The run made {outcome.steps} model requests, over {spec['steps']}."


class JudgeMeter(Protocol):
    """What a judge's model requests cost, checked and recorded like a run's (the driver's `JudgeLedger`)."""

    async def before(self) -> None: ...  # raises BudgetExceeded when a cap is used up

    async def after(self, response: Any) -> None: ...


class MeteredModel(WrapperModel):
    """A judge's model: every request passes the meter (caps before, the ledger after)."""

    def __init__(self, wrapped: Any, meter: JudgeMeter):
        super().__init__(wrapped)
        self.meter = meter

    async def request(self, messages, model_settings, model_request_parameters):
        await self.meter.before()
        response = await super().request(messages, model_settings, model_request_parameters)
        await self.meter.after(response)
        return response


@dataclass(repr=False)
class Judge(Evaluator[Any, CaseOutcome, Any]):
    """The LLM judge: pydantic-evals' LLMJudge on the answer text (and the prompt, when asked)."""

    index: int
    spec: dict[str, Any]
    model: Any = None  # a MeteredModel, set by the driver

    def get_default_evaluation_name(self) -> str:
        return f"check_{self.index}"

    async def evaluate(self, ctx: EvaluatorContext[Any, CaseOutcome, Any]) -> EvaluationReason:
        from governance.budgets import BudgetExceeded

        name = self.get_default_evaluation_name()
        if ctx.output.skipped:
            return EvaluationReason(value=False, reason=ctx.output.skipped)
        if not ctx.output.output.strip():
            return EvaluationReason(value=False, reason=f"No answer to judge (the run ended {ctx.output.status}).")
        if self.model is None:
            return EvaluationReason(value=False, reason="The judge's model profile no longer exists or cannot be used.")
        judge = LLMJudge(rubric=self.spec["rubric"], model=self.model, include_input=self.spec.get("include_prompt", True),
                         assertion={"evaluation_name": name, "include_reason": True})
        prompt = ctx.inputs.get("prompt") if isinstance(ctx.inputs, dict) else ctx.inputs
        # The judge reads the answer's text (and the prompt), not the whole outcome.
        answer_ctx: EvaluatorContext[Any, Any, Any] = dataclasses.replace(
            cast(EvaluatorContext[Any, Any, Any], ctx), inputs=prompt, output=ctx.output.output)
        try:
            verdict = await judge.evaluate(answer_ctx)
        except BudgetExceeded as exc:
            return EvaluationReason(value=False, reason=f"Not judged: {exc.cap.label} is used up.")
        result = verdict[name] if isinstance(verdict, dict) else verdict
        if isinstance(result, EvaluationReason):
            return EvaluationReason(value=bool(result.value), reason=result.reason)
        return EvaluationReason(value=bool(result))


def evaluators_for(checks: list[dict[str, Any]]) -> list[Evaluator[Any, CaseOutcome, Any]]:
    return [Judge(index, spec) if spec["kind"] == "judge" else Check(index, spec) for index, spec in enumerate(checks)]
