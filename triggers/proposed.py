"""The schedule an Architect's proposal carries (agents/architect.py, capabilities/architect/proposal.py): checked
with the same validators a person's trigger passes (triggers.services), described in words for the card, and
created when the person accepts the card — registered in agents.extensions, since the Architect sits below this
app and cannot import it.

The trigger is created **enabled** on the draft agent, in the state that cannot act before the person publishes:
a schedule fires only for a version of its environment (triggers.firing._start), so until the first publish each
due time is logged as not fired ("The agent has no production version: publish it first.") and no run starts;
the first due time after publishing runs. Creating it paused instead would leave the person a second thing to
remember after publishing, which the card's "it starts once you publish" would not say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agenticos.errors import DomainError
from triggers import schedule, services
from triggers.models import Trigger

if TYPE_CHECKING:
    from agenticos.tenancy import Actor
    from agents.models import Agent

FIELDS = ("name", "prompt", "cron", "every_seconds", "timezone")


def _unsaved(actor: Actor | None, data: dict[str, Any]) -> Trigger:
    trigger = Trigger(kind=Trigger.Kind.SCHEDULE, organization=getattr(actor, "organization", None))
    for field in FIELDS:
        if data.get(field) is not None:
            setattr(trigger, field, data[field])
    return trigger


def problems(actor: Actor, data: dict[str, Any]) -> list[str]:
    """What the triggers app would refuse of this schedule, as "field: message" (the first problem each check
    finds, as a person's form shows it)."""
    trigger = _unsaved(actor, data)
    found = []
    for check in (services.check_text, services.check_schedule):
        try:
            check(trigger)
        except DomainError as exc:
            field = (exc.details or {}).get("field", "schedule")
            found.append(f"trigger.{field}: {exc.message}")
    return found


def describe(data: dict[str, Any]) -> str:
    """The schedule in words: "At 09:00 AM, Monday through Friday (Europe/Madrid)" or "Every 2 hours (UTC)"."""
    zone = data.get("timezone") or "UTC"
    if data.get("cron"):
        words = schedule.describe(str(data["cron"])) or f"cron {data['cron']}"
    else:
        seconds = int(data.get("every_seconds") or 0)
        if seconds % 86400 == 0:
            words = f"Every {seconds // 86400} day(s)"
        elif seconds % 3600 == 0:
            words = f"Every {seconds // 3600} hour(s)"
        else:
            words = f"Every {seconds // 60} minute(s)"
    return f"{words} ({zone})"


def create(actor: Actor, agent: Agent, data: dict[str, Any]) -> str:
    """The trigger on the new draft, created by the accepting person through the triggers service (its edit check
    on the agent, its validation, its audit row), inside the caller's transaction. Its answers go to a
    conversation of the person's, as the Triggers tab's default does."""
    trigger, _ = services.create_trigger(actor=actor, agent=agent, data={
        **{f: data[f] for f in FIELDS if data.get(f) is not None},
        "kind": Trigger.Kind.SCHEDULE, "delivery": Trigger.Delivery.CONVERSATION, "enabled": True,
    })
    return str(trigger.pk)
