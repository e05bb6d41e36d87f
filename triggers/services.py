"""Trigger state changes: create, change, pause / resume, rotate the signing secret, delete.

Every function takes keyword-only `actor=`, checks edit access on the agent through
`governance.grants.require_agent_access`, runs in one transaction and writes its audit row there.
Firing lives in `triggers.firing`; the webhook's checks in `triggers.hooks`.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agenticos import audit, vault
from agenticos.errors import Forbidden, Invalid, NotFound
from agenticos.tenancy import parse_uuid
from agents.models import Agent, Conversation, Surface
from governance.grants import EDIT, VIEW, require_agent_access
from triggers import schedule
from triggers.models import Trigger, TriggerSecret

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

SECRET_PREFIX = "whsec_"  # noqa: S105  (a prefix, not a secret)
EDITABLE = ("name", "prompt", "environment", "enabled", "run_as_creator", "cron", "every_seconds", "timezone",
            "starts_at", "ends_at", "overlap", "delivery", "delivery_binding_id", "delivery_chat_id",
            "delivery_thread")


def _record(actor: Actor, action: str, trigger: Trigger, details: dict | None = None) -> None:
    audit.record(actor=actor.user, organization=actor.organization, action=action, target=trigger,
                 details=details or {}, ip_address=actor.extra.get("ip"))


# ------------------------------------------------------------------ reads


def agent_triggers(actor: Actor, agent: Agent) -> QuerySet[Trigger]:
    require_agent_access(actor, agent, VIEW)
    return Trigger.objects.filter(organization=actor.organization, agent=agent).select_related("creator")


def trigger_for(actor: Actor, trigger_id: Any, *, level: str = VIEW) -> Trigger:
    """One trigger of the actor's organization on an agent they can see (404 otherwise), `level`-checked."""
    wanted = parse_uuid(str(trigger_id))
    trigger = (Trigger.objects.filter(organization=actor.organization, pk=wanted)
               .select_related("agent", "creator").first() if wanted else None)
    if trigger is None:
        raise NotFound("Trigger not found.")
    try:
        require_agent_access(actor, trigger.agent, level)
    except NotFound:
        raise NotFound("Trigger not found.") from None
    return trigger


def webhook_url(trigger: Trigger) -> str | None:
    if trigger.kind != Trigger.Kind.EVENT or not trigger.key:
        return None
    return f"{settings.FRONTEND_URL}/api/v1/hooks/{trigger.key}"


def signing_secret(trigger: Trigger) -> str:
    """Runtime only (the webhook check): the plaintext signing secret. Never log or return it."""
    return vault.reveal(trigger.secret)


# ------------------------------------------------------------------ validation


def check_schedule(trigger: Trigger) -> None:
    trigger.cron = trigger.cron or ""
    if trigger.kind == Trigger.Kind.EVENT:
        trigger.cron, trigger.every_seconds = "", None
        return
    trigger.timezone = schedule.check_timezone(trigger.timezone)
    if bool(trigger.cron) == bool(trigger.every_seconds):
        raise Invalid("A schedule needs exactly one of cron or every_seconds.", details={"field": "cron"})
    if trigger.cron:
        trigger.cron = schedule.check_cron(trigger.cron)
    elif trigger.every_seconds is not None and trigger.every_seconds < settings.TRIGGER_MIN_INTERVAL_SECONDS:
        raise Invalid(f"every_seconds must be at least {settings.TRIGGER_MIN_INTERVAL_SECONDS}.",
                      details={"field": "every_seconds"})
    for field in ("starts_at", "ends_at"):
        value = getattr(trigger, field)
        if value is not None and timezone.is_naive(value):
            raise Invalid("Give times with their UTC offset.", details={"field": field})
    if trigger.starts_at and trigger.ends_at and trigger.ends_at <= trigger.starts_at:
        raise Invalid("ends_at must be after starts_at.", details={"field": "ends_at"})


def check_text(trigger: Trigger) -> None:
    trigger.name = (trigger.name or "").strip()[:200]
    if not trigger.name:
        raise Invalid("A trigger needs a name.", details={"field": "name"})
    trigger.prompt = (trigger.prompt or "").strip()
    if not trigger.prompt:
        raise Invalid("A trigger needs a prompt.", details={"field": "prompt"})
    # Room for an event's payload: the whole prompt must stay within the message limit.
    limit = settings.MAX_MESSAGE_CHARS - (1000 if trigger.kind == Trigger.Kind.EVENT else 0)
    if len(trigger.prompt) > limit:
        raise Invalid(f"The prompt is too long (the limit is {limit} characters).", details={"field": "prompt"})


def _check_delivery(actor: Actor, trigger: Trigger) -> None:
    from channelbots.models import Binding

    if trigger.delivery not in Trigger.Delivery.values:
        raise Invalid(f"delivery must be one of {list(Trigger.Delivery.values)}.", details={"field": "delivery"})
    if trigger.delivery != Trigger.Delivery.CHANNEL:
        trigger.delivery_binding_id, trigger.delivery_chat_id, trigger.delivery_thread = None, "", ""
    if trigger.delivery != Trigger.Delivery.CONVERSATION:
        trigger.delivery_conversation_id = None
    if trigger.delivery == Trigger.Delivery.CHANNEL:
        wanted = parse_uuid(str(trigger.delivery_binding_id or ""))
        binding = Binding.objects.filter(pk=wanted, organization=actor.organization,
                                         agent_id=trigger.agent_id).first() if wanted else None
        if binding is None:
            raise Invalid("Choose one of this agent's bot bindings.", details={"field": "delivery_binding_id"})
        trigger.delivery_chat_id = (trigger.delivery_chat_id or "").strip()[:200]
        trigger.delivery_thread = (trigger.delivery_thread or "").strip()[:200]
        if not trigger.delivery_chat_id:
            raise Invalid("Name the channel (its id on the platform).", details={"field": "delivery_chat_id"})


def _ensure_conversation(trigger: Trigger) -> None:
    """The creator's conversation that collects the answers (listed in their chat list). Its surface is
    `schedule` for both kinds: a trigger log stays out of conversation search (knowledge/conversations.py)."""
    if trigger.delivery != Trigger.Delivery.CONVERSATION or trigger.delivery_conversation_id:
        return
    conversation = Conversation.objects.create(
        organization_id=trigger.organization_id, agent_id=trigger.agent_id, owner_id=trigger.creator_id,
        surface=Surface.SCHEDULE, title=f"{trigger.name}"[:200], external_key=f"trigger:{trigger.pk}",
    )
    trigger.delivery_conversation = conversation


def _check_run_as_creator(actor: Actor, trigger: Trigger, wanted: bool) -> None:
    """Only the creator lends their own memory: nobody else can switch it on (or keep it on by editing)."""
    if wanted and not trigger.run_as_creator and (actor.user_id is None or actor.user_id != trigger.creator_id):
        raise Forbidden("Only the trigger's creator can make it run as them.", details={"field": "run_as_creator"})
    trigger.run_as_creator = wanted


def refresh_next_run(trigger: Trigger, now: datetime | None = None) -> None:
    now = now or timezone.now()
    if trigger.kind == Trigger.Kind.SCHEDULE and trigger.enabled:
        trigger.next_run_at = schedule.next_after(trigger, now)
    else:
        trigger.next_run_at = None


def _new_secret(trigger: Trigger) -> str:
    value = SECRET_PREFIX + secrets.token_urlsafe(32)
    sealed = vault.seal(trigger.organization_id, value)
    TriggerSecret.objects.update_or_create(
        trigger=trigger,
        defaults={"organization_id": trigger.organization_id, "key_version": sealed.key_version,
                  "wrapped_key": sealed.wrapped_key, "ciphertext": sealed.ciphertext,
                  "rotated_at": timezone.now() if TriggerSecret.objects.filter(trigger=trigger).exists() else None},
    )
    return value


# ------------------------------------------------------------------ changes


def create_trigger(*, actor: Actor, agent: Agent, data: dict[str, Any]) -> tuple[Trigger, str | None]:
    """A new trigger; returns it and, for an event trigger, its signing secret (shown this once)."""
    require_agent_access(actor, agent, EDIT)
    if actor.user is None:
        raise Forbidden("A trigger needs a person as its creator.")
    kind = data.get("kind")
    if kind not in Trigger.Kind.values:
        raise Invalid(f"kind must be one of {list(Trigger.Kind.values)}.", details={"field": "kind"})
    trigger = Trigger(organization=actor.organization, agent=agent, creator=actor.user, kind=kind)
    for field in EDITABLE:
        if field in data and field != "run_as_creator":
            setattr(trigger, field, data[field])
    trigger.run_as_creator = bool(data.get("run_as_creator", False))  # the actor is the creator here
    if trigger.overlap not in Trigger.Overlap.values:
        raise Invalid(f"overlap must be one of {list(Trigger.Overlap.values)}.", details={"field": "overlap"})
    check_text(trigger)
    check_schedule(trigger)
    _check_delivery(actor, trigger)
    plaintext = None
    with transaction.atomic():
        if trigger.kind == Trigger.Kind.EVENT:
            trigger.key = secrets.token_urlsafe(24)
        refresh_next_run(trigger)
        trigger.save()
        _ensure_conversation(trigger)
        if trigger.delivery_conversation_id:
            trigger.save(update_fields=["delivery_conversation"])
        if trigger.kind == Trigger.Kind.EVENT:
            plaintext = _new_secret(trigger)
        _record(actor, "trigger.created", trigger, {"kind": trigger.kind, "run_as_creator": trigger.run_as_creator})
    return trigger, plaintext


def update_trigger(*, actor: Actor, trigger: Trigger, data: dict[str, Any]) -> Trigger:
    require_agent_access(actor, trigger.agent, EDIT)
    changed = [field for field in EDITABLE if field in data]
    for field in changed:
        if field != "run_as_creator":
            setattr(trigger, field, data[field])
    if "run_as_creator" in data:
        _check_run_as_creator(actor, trigger, bool(data["run_as_creator"]))
    if trigger.overlap not in Trigger.Overlap.values:
        raise Invalid(f"overlap must be one of {list(Trigger.Overlap.values)}.", details={"field": "overlap"})
    check_text(trigger)
    check_schedule(trigger)
    _check_delivery(actor, trigger)
    with transaction.atomic():
        trigger.updated_at = timezone.now()
        refresh_next_run(trigger)
        _ensure_conversation(trigger)
        trigger.save()
        _record(actor, "trigger.updated", trigger, {"fields": changed})
    return trigger


def set_enabled(*, actor: Actor, trigger: Trigger, enabled: bool) -> Trigger:
    """Pause (no firing, the webhook answers 423) or resume (the next due time counts from now: what
    was due while paused is not replayed)."""
    require_agent_access(actor, trigger.agent, EDIT)
    with transaction.atomic():
        trigger.enabled = enabled
        trigger.updated_at = timezone.now()
        refresh_next_run(trigger)
        trigger.save(update_fields=["enabled", "next_run_at", "updated_at"])
        _record(actor, "trigger.resumed" if enabled else "trigger.paused", trigger)
    return trigger


def rotate_secret(*, actor: Actor, trigger: Trigger) -> str:
    """A new signing secret (the old one stops working at once); returned this once."""
    require_agent_access(actor, trigger.agent, EDIT)
    if trigger.kind != Trigger.Kind.EVENT:
        raise Invalid("Only an event trigger has a signing secret.", details={"field": "kind"})
    with transaction.atomic():
        value = _new_secret(trigger)
        _record(actor, "trigger.secret_rotated", trigger)
    return value


def delete_trigger(*, actor: Actor, trigger: Trigger) -> None:
    """The trigger, its secret and firing log go; its runs stay in the ledger (and its conversation with
    the creator, which is theirs)."""
    require_agent_access(actor, trigger.agent, EDIT)
    with transaction.atomic():
        _record(actor, "trigger.deleted", trigger)
        trigger.delete()
