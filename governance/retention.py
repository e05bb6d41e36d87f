"""Retention: what an organization stops keeping, and when (beat: `triggers.tasks.retention_sweeps`, hourly).

Each value is the organization's (governance.RetentionPolicy, Settings → Data retention, owner only) or,
where it set none, the deployment's default (RETENTION_* env); 0 days means "keep: never delete".

Each sweep deletes in batches of RETENTION_BATCH_SIZE primary keys (a short statement each, no lock held
across the table), is idempotent (a second pass finds nothing), stops after MAX_BATCHES per value so one
beat tick stays short (the next tick carries on), and logs what it removed and under which value.

| what                                          | kept                                                         |
|-----------------------------------------------|--------------------------------------------------------------|
| run transcripts: messages, tool calls, the run's prompt / answer / parked history text, and the title of a conversation left without messages | `transcript_days`, default RETENTION_TRANSCRIPT_DAYS (0 = keep). The run row stays with its status, tokens and cost |
| audit log                                     | `audit_log_days`, default RETENTION_AUDIT_DAYS (400); an organization may not go under 30 |
| workspaces of scope user / channel / agent    | until idle `idle_workspace_days`, default RETENTION_WORKSPACE_IDLE_DAYS (90) |
| files of a deleted conversation or message (uploads in storage) | queued when the rows go, deleted right after commit (governance.tasks) and by every sweep |
| generated images, speech and video (media) | `transcript_days` like the transcript (files of runs still going are kept); deleted with their conversation |
| workspaces of scope run / conversation        | go with their conversation (foreign key); run-scope ones without one: capabilities.tasks.sweep_turn_workspaces |
| chat-account link requests (channelbots, a registered sweep) | until expired (15 minutes after they were made) |
| spend ledger (governance.SpendEntry)          | never deleted: every budget cap is computed from it          |
| stored tool output (rows, or files in the run's workspace under /workspace/tool_output/) | until its run ends (capabilities.tasks.sweep_spilled_outputs) |
| channel dedup claims, webhook replay / idempotency keys | Redis keys with their own TTL: nothing to sweep    |
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models, transaction
from django.db.models import Func, Q, Value
from django.utils import timezone
from django.utils.translation import gettext_lazy

from agenticos import audit
from agenticos.errors import Forbidden, Invalid
from agenticos.permissions import Role

if TYPE_CHECKING:
    from agenticos.models import Organization
    from agenticos.tenancy import Actor
    from governance.models import RetentionPolicy

logger = logging.getLogger(__name__)

MAX_BATCHES = 50
WORKSPACE_SCOPES = ("user", "channel", "agent")
KEEP = 0
MAX_DAYS = 36_500
# Where surfaces store a person's attachments (default_storage). A path elsewhere is never deleted from
# here (a logo, a document of a collection); a surface that stores attachments somewhere new adds it.
UPLOAD_PREFIXES = ("embeds/", "channelbots/", "chat/")  # chat/: web chat (agents.uploads.STORAGE_PREFIX)


# ------------------------------------------------------------------ the values


@dataclass(frozen=True)
class Knob:
    field: str  # on RetentionPolicy
    setting: str  # the deployment default in settings
    label: Any
    help: Any
    minimum: int  # the fewest days an organization may set (0, keep, is always allowed)


KNOBS: tuple[Knob, ...] = (
    Knob("transcript_days", "RETENTION_TRANSCRIPT_DAYS", gettext_lazy("Run transcripts and tool calls"),
         gettext_lazy("Messages, tool calls and the text of each run (prompt, answer) older than this are "
                      "deleted. The run itself stays in the ledger with its status, tokens and cost."), 1),
    Knob("audit_log_days", "RETENTION_AUDIT_DAYS", gettext_lazy("Audit log"),
         gettext_lazy("Who did what, kept at least 30 days."), 30),
    Knob("idle_workspace_days", "RETENTION_WORKSPACE_IDLE_DAYS", gettext_lazy("Idle shared workspaces"),
         gettext_lazy("Workspaces shared by a person, a channel or everyone who talks to an agent are deleted "
                      "with their files once nobody has used them for this long."), 1),
)
KNOB_BY_FIELD = {knob.field: knob for knob in KNOBS}


@dataclass(frozen=True)
class Effective:
    knob: Knob
    days: int  # what applies (0 = keep)
    override: int | None  # the organization's own value, None = the default applies
    default: int

    @property
    def field(self) -> str:
        return self.knob.field

    @property
    def source(self) -> str:
        return "organization" if self.override is not None else "default"


def deployment_default(field: str) -> int:
    return int(getattr(settings, KNOB_BY_FIELD[field].setting))


def policy_of(organization: Organization) -> RetentionPolicy | None:
    from governance.models import RetentionPolicy

    return RetentionPolicy.objects.filter(organization=organization).first()


def effective_values(organization: Organization) -> list[Effective]:
    policy = policy_of(organization)
    out = []
    for knob in KNOBS:
        override = getattr(policy, knob.field) if policy else None
        default = deployment_default(knob.field)
        out.append(Effective(knob, default if override is None else override, override, default))
    return out


def may_manage_retention(actor: Actor) -> bool:
    # Owner only (issue 18). The permission catalog (agenticos/permissions.py) has no permission held by the
    # owner alone, so this is the one place that decides it until a "retention:manage" entry exists there.
    return actor.role == Role.OWNER


def require_retention_owner(actor: Actor) -> None:
    if not may_manage_retention(actor):
        raise Forbidden("Only an owner of the organization can see or change its data retention.",
                        details={"role": actor.role})


def _clean(field: str, raw: object) -> tuple[int | None, str | None]:
    """(value, problem): None = the deployment default, 0 = keep, else whole days within bounds."""
    knob = KNOB_BY_FIELD[field]
    if raw is None or raw == "":
        return None, None
    if isinstance(raw, bool):
        return None, "Enter a whole number of days."
    try:
        value = int(str(raw).strip()) if not isinstance(raw, int) else raw
    except ValueError:
        return None, "Enter a whole number of days."
    if value == KEEP:
        return KEEP, None
    if value < knob.minimum or value > MAX_DAYS:
        return None, f"Enter 0 (keep) or between {knob.minimum} and {MAX_DAYS} days."
    return value, None


def update_retention(*, actor: Actor, values: dict[str, object], ip_address: str | None = None) -> RetentionPolicy:
    """Set the organization's values. A key left out keeps its value; None or "" goes back to the default."""
    from governance.models import RetentionPolicy

    require_retention_owner(actor)
    unknown = sorted(set(values) - set(KNOB_BY_FIELD))
    problems = [{"field": name, "message": "Not a retention setting."} for name in unknown]
    cleaned: dict[str, int | None] = {}
    for field, raw in values.items():
        if field in KNOB_BY_FIELD:
            value, problem = _clean(field, raw)
            if problem:
                problems.append({"field": field, "message": problem})
            cleaned[field] = value
    if problems:
        raise Invalid("Some retention values are not valid.", details={"problems": problems})
    with transaction.atomic():
        policy, _ = RetentionPolicy.objects.select_for_update().get_or_create(organization=actor.organization)
        before = {field: getattr(policy, field) for field in cleaned}
        for field, value in cleaned.items():
            setattr(policy, field, value)
        policy.updated_at = timezone.now()
        policy.updated_by = actor.user
        policy.save()
        changed = {field: {"from": before[field], "to": value} for field, value in cleaned.items()
                   if before[field] != value}
        if changed:
            audit.record(actor=actor.user, organization=actor.organization, action="organization.retention_changed",
                         target=actor.organization, details=changed, ip_address=ip_address)
    return policy


# ------------------------------------------------------------------ batches


def delete_in_batches(queryset: models.QuerySet, *, batch: int | None = None,
                       before: Callable[[list[Any]], object] | None = None) -> int:
    """Delete what `queryset` selects, a batch of primary keys at a time; returns the rows of its model removed.
    `before(ids)` runs in each batch's transaction, ahead of its delete."""
    size = batch or settings.RETENTION_BATCH_SIZE
    model = queryset.model
    removed = 0
    for _ in range(MAX_BATCHES):
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:size])
        if not ids:
            break
        with transaction.atomic():
            if before:
                before(ids)
            _, per_model = model._default_manager.filter(pk__in=ids).delete()
        removed += per_model.get(model._meta.label, 0)
        if len(ids) < size:
            break
    return removed


def _update_in_batches(queryset: models.QuerySet, **changes: Any) -> int:
    size = settings.RETENTION_BATCH_SIZE
    model = queryset.model
    changed = 0
    for _ in range(MAX_BATCHES):
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:size])
        if not ids:
            break
        changed += model._default_manager.filter(pk__in=ids).update(**changes)
        if len(ids) < size:
            break
    return changed


def _groups(field: str, org_path: str) -> list[tuple[int, str, Q]]:
    """(days, whose value, filter) for every value in force that deletes something: each organization's own
    value, and the deployment default for organizations without one. `org_path` leads to the organization."""
    from governance.models import RetentionPolicy

    lookup = f"{org_path}__retention__{field}"
    own = sorted(set(RetentionPolicy.objects.filter(**{f"{field}__gt": KEEP}).values_list(field, flat=True)))
    groups = [(days, "organization value", Q(**{lookup: days})) for days in own]
    default = deployment_default(field)
    if default > KEEP:
        groups.append((default, "deployment default", Q(**{f"{lookup}__isnull": True})))
    return groups


def _swept(name: str, removed: int, days: int, whose: str) -> None:
    if removed:
        logger.info("retention %s: removed %d older than %d days (%s)", name, removed, days, whose)


def _by_policy(name: str, field: str, org_path: str, now: datetime | None,
               selection: Callable[[Q, datetime], int]) -> int:
    now = now or timezone.now()
    total = 0
    for days, whose, org_filter in _groups(field, org_path):
        removed = selection(org_filter, now - timedelta(days=days))
        _swept(name, removed, days, whose)
        total += removed
    return total


# ------------------------------------------------------------------ sweeps


def sweep_audit_log(now: datetime | None = None) -> int:
    from agenticos.models import AuditEvent

    return _by_policy("audit_log", "audit_log_days", "organization", now, lambda org, cutoff: delete_in_batches(
        AuditEvent.objects.filter(org, created_at__lt=cutoff)))


def sweep_idle_workspaces(now: datetime | None = None) -> int:
    """Shared workspaces nobody has used for the idle period (their files go with them). Run and
    conversation workspaces go with their run or conversation instead."""
    from workspaces.models import Workspace

    # A workspace's files can be megabytes each: smaller batches keep each statement short.
    batch = max(10, settings.RETENTION_BATCH_SIZE // 10)
    return _by_policy("idle_workspaces", "idle_workspace_days", "organization", now,
                      lambda org, cutoff: delete_in_batches(Workspace.objects.filter(
                          org, scope__in=WORKSPACE_SCOPES, last_used_at__lt=cutoff), batch=batch))


def _ended_or_no_run(prefix: str = "") -> Q:
    """A run still queued, running or parked keeps what it may resume from."""
    from agents.models import TERMINAL_STATUSES

    if prefix:
        return Q(**{f"{prefix}__isnull": True}) | Q(**{f"{prefix}__status__in": list(TERMINAL_STATUSES)})
    return Q(status__in=list(TERMINAL_STATUSES))


def sweep_transcript_messages(now: datetime | None = None) -> int:
    """Messages older than the transcript period (their uploaded files are queued for removal)."""
    from agents.models import Message

    def select(org: Q, cutoff: datetime) -> int:
        chosen = Message.objects.filter(org, _ended_or_no_run("run"), created_at__lt=cutoff)
        return delete_in_batches(chosen, before=lambda ids: queue_message_files(
            Message.objects.filter(pk__in=ids), reason="transcript_expired"))

    return _by_policy("transcript_messages", "transcript_days", "conversation__organization", now, select)


def sweep_tool_calls(now: datetime | None = None) -> int:
    from agents.models import ToolCall

    return _by_policy("tool_calls", "transcript_days", "run__organization", now, lambda org, cutoff: delete_in_batches(
        ToolCall.objects.filter(org, _ended_or_no_run("run"), started_at__lt=cutoff)))


class _WithoutKey(Func):
    """jsonb `-` text: the object without one key."""

    arg_joiner = " - "
    template = "%(expressions)s"
    output_field = models.JSONField()


def sweep_run_texts(now: datetime | None = None) -> int:
    """The words a run row keeps besides its transcript: the prompt, the answer, the history it parked with
    and the prompt as recorded. Status, tokens, cost, times and the spend ledger stay."""
    from agents.models import Run

    def select(org: Q, cutoff: datetime) -> int:
        texty = ~Q(prompt="") | ~Q(output="") | Q(parked_state__isnull=False) | Q(options__has_key="recorded_prompt")
        chosen = Run.objects.filter(org, _ended_or_no_run(), texty, created_at__lt=cutoff)
        return _update_in_batches(chosen, prompt="", output="", parked_state=None,
                                  options=_WithoutKey(models.F("options"), Value("recorded_prompt")))

    return _by_policy("run_texts", "transcript_days", "organization", now, select)


def sweep_emptied_conversations(now: datetime | None = None) -> int:
    """A conversation whose every message is past the period keeps its row (its runs hang off it) but not its
    title, which quotes the person's first words; the chat list names it by its agent instead."""
    from agents.models import Conversation, Message

    def select(org: Q, cutoff: datetime) -> int:
        emptied = (Conversation.objects.filter(org, last_active_at__lt=cutoff).exclude(title="")
                   .filter(~models.Exists(Message.objects.filter(conversation=models.OuterRef("pk")))))
        return _update_in_batches(emptied, title="")

    return _by_policy("emptied_conversations", "transcript_days", "organization", now, select)


def sweep_removed_files(now: datetime | None = None) -> int:
    """Files whose conversation or message is gone (queued by queue_message_files)."""
    removed = remove_pending_files()
    if removed:
        logger.info("retention removed_files: deleted %d stored files of deleted conversations and messages",
                    removed)
    return removed


def _generated_media_sweep(now: datetime | None = None) -> int:
    """Generated images, speech and video older than the transcript period (media)."""
    from media.store import sweep_expired

    return sweep_expired(now)


def _unsent_chat_uploads(now: datetime | None = None) -> int:
    """Web chat files uploaded and never sent, once their id has expired (agents/uploads.py)."""
    from agents.uploads import sweep_unsent

    return sweep_unsent(now)


# More are registered by the apps above governance in their AppConfig.ready() (register_sweep): the chat apps'
# link requests (channelbots), a conversation's kept compacted history (capabilities), replay results (evals).
SWEEPS: dict[str, Callable[..., int]] = {
    "audit_log": sweep_audit_log,
    "idle_workspaces": sweep_idle_workspaces,
    "transcript_messages": sweep_transcript_messages,
    "tool_calls": sweep_tool_calls,
    "run_texts": sweep_run_texts,
    "emptied_conversations": sweep_emptied_conversations,
    "generated_media": _generated_media_sweep,
    "unsent_chat_uploads": _unsent_chat_uploads,
}
# Files hung off messages in rows a surface keeps (a hosted page's uploads): each finder yields
# (organization_id, path) for `messages` and deletes its rows. Filled by the surfaces' AppConfig.ready().
MESSAGE_FILES: list[Callable[[models.QuerySet], Iterable[tuple[Any, str]]]] = []


def register_sweep(name: str, sweep: Callable[..., int]) -> None:
    """An app's own retention sweep, run by `sweep_all` (Baserow's trash registry is the model): a surface
    registers it in its AppConfig.ready(), so governance never imports a surface. Idempotent per function."""
    if SWEEPS.get(name, sweep) is not sweep or name == "removed_files":
        raise ImproperlyConfigured(f"retention sweep {name!r} is registered twice")
    SWEEPS[name] = sweep


def register_message_files(finder: Callable[[models.QuerySet], Iterable[tuple[Any, str]]]) -> None:
    if finder not in MESSAGE_FILES:
        MESSAGE_FILES.append(finder)


def sweep_all(now: datetime | None = None) -> dict[str, int]:
    """Every sweep once; one failing does not stop the others. Returns {sweep: rows removed}."""
    now = now or timezone.now()
    removed: dict[str, int] = {}
    # removed_files last: it deletes what every other sweep queued in the same pass.
    for name, sweep in [*SWEEPS.items(), ("removed_files", sweep_removed_files)]:
        try:
            removed[name] = sweep(now)
        except Exception:
            logger.exception("retention sweep %s failed; the next run tries again", name)
            removed[name] = -1
    logger.info("retention sweeps removed %s", removed)
    return removed


# ------------------------------------------------------------------ files of deleted conversations


def _is_upload(path: object) -> bool:
    return (isinstance(path, str) and path.startswith(UPLOAD_PREFIXES) and ".." not in path
            and "\\" not in path and "\x00" not in path and len(path) <= 500)


def _attachment_paths(attachments: object) -> Iterable[str]:
    for item in attachments if isinstance(attachments, list) else []:
        if isinstance(item, dict) and _is_upload(item.get("path")):
            yield item["path"]


def queue_message_files(messages: models.QuerySet, *, reason: str) -> int:
    """Queue the stored files of `messages` (their attachments, and a hosted page's file rows attached to
    them, which go now) for removal. Call it in the transaction that deletes the messages."""
    from governance.models import PendingFileRemoval

    found: dict[str, Any] = {}
    for org_id, attachments in messages.exclude(attachments=[]).values_list("conversation__organization_id",
                                                                            "attachments"):
        for path in _attachment_paths(attachments):
            found.setdefault(path, org_id)
    for finder in MESSAGE_FILES:
        for org_id, path in finder(messages):
            if _is_upload(path):
                found.setdefault(path, org_id)
    if found:
        PendingFileRemoval.objects.bulk_create(
            [PendingFileRemoval(organization_id=org_id, path=path, reason=reason) for path, org_id in found.items()])
        _kick_after_commit()
    return len(found)


def on_conversation_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    """pre_delete of agents.Conversation, however it is deleted (agents.chat.delete_conversation, a cascade, a
    queryset): its messages are still there, so their files are queued in the deleting transaction. Its run
    and conversation workspaces go by foreign key in the same delete."""
    from agents.models import Message

    queue_message_files(Message.objects.filter(conversation_id=instance.pk), reason="conversation_deleted")


def _kick() -> None:
    try:
        from governance.tasks import remove_pending_files as task

        task.delay()
    except Exception:  # noqa: BLE001  (a broker that is down: the hourly sweep removes them)
        logger.warning("could not queue the removal of deleted conversations' files; the hourly sweep will",
                       exc_info=True)


def _kick_after_commit() -> None:
    # One task per transaction however many conversations it deletes (deleting an agent deletes them all).
    pending = getattr(transaction.get_connection(), "run_on_commit", None) or []
    if any(len(entry) > 1 and entry[1] is _kick for entry in pending):
        return
    transaction.on_commit(_kick)


def _remove_stored(path: str) -> None:
    from django.core.files.storage import default_storage

    if default_storage.exists(path):
        default_storage.delete(path)


def remove_pending_files() -> int:
    """Delete queued files from storage, a batch at a time; a file storage refuses stays queued for the next
    sweep. Two sweepers at once skip each other's rows."""
    from governance.models import PendingFileRemoval

    size = max(10, settings.RETENTION_BATCH_SIZE // 10)
    removed = 0
    failed: set[int] = set()
    for _ in range(MAX_BATCHES):
        with transaction.atomic():
            rows = list(PendingFileRemoval.objects.select_for_update(skip_locked=True)
                        .exclude(pk__in=failed).order_by("pk")[:size])
            if not rows:
                break
            done = []
            for row in rows:
                try:
                    _remove_stored(row.path)
                    done.append(row.pk)
                except Exception:  # noqa: BLE001  (storage down or refusing: keep the row, try next time)
                    logger.warning("could not delete stored file %s; kept for the next sweep", row.path,
                                   exc_info=True)
                    failed.add(row.pk)
            PendingFileRemoval.objects.filter(pk__in=done).delete()
        removed += len(done)
        if len(rows) < size:
            break
    return removed
