"""Evaluation suites: an agent's cases with their checks, and the suite runs that ran them (pydantic-evals).

A case's checks are data (`evals.checks.CheckSpec`), validated by the services; a suite run keeps a snapshot
of the cases it ran, so a comparison reads what was run, not what the suite says today.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from agenticos.models import Organization
from agents.models import Agent, AgentVersion, Run


class Suite(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="eval_suites")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    # "Publish only when this suite passes": publishing runs it on the draft and refuses naming failing cases.
    gates_publish = models.BooleanField(default=False)
    # The checks every replayed run is judged by when a replay names this suite (evals.checks.CheckSpec; a
    # judge check makes the verdict a judge model's): a replay's verdict, and the replay gate's.
    replay_checks = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="evalsuite_unique_name_per_agent")]

    def __str__(self) -> str:
        return self.name


class Case(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=120)
    position = models.PositiveIntegerField(default=0)
    prompt = models.TextField()
    # A short prior conversation: [{"role": "user"|"assistant", "content": str}]
    history = models.JSONField(default=list, blank=True)
    # Text files attached to the prompt: [{"name", "mime", "content"}]
    attachments = models.JSONField(default=list, blank=True)
    # [{"kind": ..., ...}] (evals.checks.CheckSpec)
    checks = models.JSONField(default=list, blank=True)
    # How the case answers gated tools: {tool id: "approve"|"reject"|"park"}, and the default for the rest.
    approvals = models.JSONField(default=dict, blank=True)
    default_approval = models.CharField(max_length=8, default="reject")
    # How the case answers ask_user: {question header: [labels]} (a header not listed: "did not answer").
    answers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["suite", "position", "name"]
        constraints = [models.UniqueConstraint(fields=["suite", "name"], name="evalcase_unique_name_per_suite")]

    def __str__(self) -> str:
        return self.name


class SuiteRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        BUDGET_STOPPED = "budget_stopped", "Stopped by a budget"
        ERROR = "error", "Error"

    class Purpose(models.TextChoices):
        MANUAL = "manual", "Started by a person"
        PUBLISH_GATE = "publish_gate", "Publish gate"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="eval_runs")
    suite = models.ForeignKey(Suite, on_delete=models.SET_NULL, null=True, related_name="runs")
    suite_name = models.CharField(max_length=120)
    # "draft" or "v<N>"; the version is the one the case runs ran (for the draft: its evaluation snapshot).
    target = models.CharField(max_length=20)
    version = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="+")
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.MANUAL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    acting_role = models.CharField(max_length=16, blank=True)
    # The cases as they were run (the suite may change afterwards).
    cases = models.JSONField(default=list)
    max_concurrent = models.PositiveIntegerField(default=1)
    total = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="evalrun_agent_time")]

    def __str__(self) -> str:
        return f"{self.suite_name} on {self.target} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in (self.Status.QUEUED, self.Status.RUNNING)


class CaseResult(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped"
        ERROR = "error", "Error"

    id = models.BigAutoField(primary_key=True)
    suite_run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.UUIDField()
    case_name = models.CharField(max_length=120)
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    run_status = models.CharField(max_length=24, blank=True)
    output = models.TextField(blank=True)
    # [{"index", "kind", "label", "passed", "reason"}]
    checks = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    steps = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    judge_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["suite_run", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["suite_run", "case_id"], name="evalresult_unique_case")]

    def __str__(self) -> str:
        return f"{self.case_name}: {self.status}"


class ReplaySet(models.Model):
    """Recorded runs replayed against a target (evals/replays.py): the draft, a version, or a version on another
    model profile. Tool calls that match the recording are answered from it; the rest as `on_mismatch` says."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        CANCELLED = "cancelled", "Cancelled"
        BUDGET_STOPPED = "budget_stopped", "Stopped by its cap"
        ERROR = "error", "Error"

    class OnMismatch(models.TextChoices):
        REFUSE = "refuse", "Refuse: the model reads that the tool is not available in a replay"
        READ_ONLY = "read_only", "Run a read-only tool for real, refuse the rest"
        STOP = "stop", "Stop the run for a person"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="replay_sets")
    # "draft", "v<N>", with "@<profile name>" when replayed on another model profile.
    target = models.CharField(max_length=160)
    version = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="+")
    # How the runs were picked: {run_ids, version, surface, since, until, tag, feedback, last, sample} as given.
    selection = models.JSONField(default=dict, blank=True)
    on_mismatch = models.CharField(max_length=12, choices=OnMismatch.choices, default=OnMismatch.REFUSE)
    # The most the replay's model requests may cost together (USD).
    cap_usd = models.DecimalField(max_digits=14, decimal_places=8)
    purpose = models.CharField(max_length=16, choices=SuiteRun.Purpose.choices, default=SuiteRun.Purpose.MANUAL)
    # The suite whose `replay_checks` give each replayed run its verdict, and those checks as they were run
    # (without a suite: the run must complete).
    suite = models.ForeignKey(Suite, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    checks = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    acting_role = models.CharField(max_length=16, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    changed_answers = models.PositiveIntegerField(default=0)
    changed_tools = models.PositiveIntegerField(default=0)
    recorded_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    replayed_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    recorded_tokens = models.PositiveIntegerField(default=0)
    replayed_tokens = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    judge_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["agent", "-created_at"], name="replayset_agent_time")]

    def __str__(self) -> str:
        return f"Replay of {self.total} runs on {self.target} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in (self.Status.QUEUED, self.Status.RUNNING)


class ReplayResult(models.Model):
    """One recorded run replayed: the recording as read from its transcript, the replay's run, and the two side
    by side. It goes with the recorded run (and so with its conversation): the replay's own conversation is
    deleted with it (evals.replays.forget_replay_conversation)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        STOPPED = "stopped", "Stopped for a person"
        SKIPPED = "skipped", "Skipped"
        ERROR = "error", "Error"

    id = models.BigAutoField(primary_key=True)
    replay_set = models.ForeignKey(ReplaySet, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveIntegerField(default=0)
    original = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    replay_run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    replay_conversation_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)
    # {prompt, attachments, history, tool_calls, version, model_profile_id, model_settings, models}
    recording = models.JSONField(default=dict, blank=True)
    recorded_output = models.TextField(blank=True)
    replayed_output = models.TextField(blank=True)
    run_status = models.CharField(max_length=24, blank=True)
    answer_changed = models.BooleanField(default=False)
    tools_changed = models.BooleanField(default=False)
    # [{tool_name, verdict: same|different_arguments|new|missing, recorded_args, replayed_args, answered_by}]
    tool_calls = models.JSONField(default=list, blank=True)
    recorded_input_tokens = models.PositiveIntegerField(default=0)
    recorded_output_tokens = models.PositiveIntegerField(default=0)
    recorded_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    replayed_input_tokens = models.PositiveIntegerField(default=0)
    replayed_output_tokens = models.PositiveIntegerField(default=0)
    replayed_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    # The verdict of the set's checks on the replayed run: "passed", "failed", "" (not judged: skipped, error).
    verdict = models.CharField(max_length=8, blank=True)
    # [{"index", "kind", "label", "passed", "reason"}], as a suite run's case results have them
    checks = models.JSONField(default=list, blank=True)
    judge_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["replay_set", "position", "id"]

    def __str__(self) -> str:
        return f"Replay of run {self.original_id}: {self.status}"


class ReplayGate(models.Model):
    """"Publish only when the last N recorded runs, replayed against the draft, pass": the agent's replay gate
    (evals/replay_gate.py), checked by publishing and by a rollout's start (on the candidate) beside the
    evaluation suites' gate. Its verdicts are `suite`'s replay checks (without one: every run must complete)."""

    class Outcome(models.TextChoices):
        PASSED = "passed", "Passed"
        REFUSED = "refused", "Refused"
        SKIPPED = "skipped", "Nothing to replay: let through"

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="replay_gate")
    # The newest N completed runs of real traffic (of `surface` when set) are replayed.
    runs = models.PositiveSmallIntegerField(default=50)
    surface = models.CharField(max_length=16, blank=True)
    suite = models.ForeignKey(Suite, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    on_mismatch = models.CharField(max_length=12, choices=ReplaySet.OnMismatch.choices,
                                   default=ReplaySet.OnMismatch.REFUSE)
    cap_usd = models.DecimalField(max_digits=14, decimal_places=8, default=1)
    # How many replayed runs may fail their checks and the gate still pass.
    max_failed = models.PositiveSmallIntegerField(default=0)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)
    # What the gate said the last time a publish or a rollout's start asked it (evals/replay_gate.py), so the
    # Replays tab and the API tell a person why a publish went through or was refused.
    last_outcome = models.CharField(max_length=12, choices=Outcome.choices, blank=True)
    last_target = models.CharField(max_length=20, blank=True)
    last_message = models.TextField(blank=True)
    last_replay_set = models.ForeignKey(ReplaySet, on_delete=models.SET_NULL, null=True, blank=True,
                                        related_name="+")
    last_checked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Replay gate of {self.agent}: last {self.runs} runs"


class RunTag(models.Model):
    """A person's tag on a recorded run ("refunds", "edge-case"): a replay set may pick the runs by it
    (evals/run_tags.py). It goes with its run, and so with its conversation and the transcript period."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="replay_tags")
    name = models.CharField(max_length=40)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="runtag_unique_name_per_run")]
        indexes = [models.Index(fields=["agent", "name"], name="runtag_agent_name")]

    def __str__(self) -> str:
        return self.name
