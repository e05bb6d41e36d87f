"""The missing-capability card (catalog spec, opening section).

When a request needs a capability the agent lacks, the run shows a card naming it and why
(`agents.runner.missing`, frame `capability_missing`). From the card, someone who may edit the agent enables it
— bound as the starter agent binds it, checked as a publish checks it — and it is published at once only when
the draft had nothing unpublished and that person may publish; otherwise it waits in the draft for the Builder.
Anyone else asks the agent's owner, who gets a notification that opens the agent's Toolbox.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse

from agenticos import audit
from agenticos.errors import DomainError, Invalid, NotFound
from agenticos.tenancy import Actor
from agents.models import Agent
from capabilities import registry
from governance.grants import EDIT, PUBLISH, USE, agent_access, at_least, require_agent_access

STARTER_SLUG = "getting-started"


def lacking(spec_capabilities: list[Any]) -> list[registry.Capability]:
    """Selectable capabilities the spec does not bind (enabled): what a card may offer."""
    bound = {b.get("id") if isinstance(b, dict) else getattr(b, "id", None) for b in spec_capabilities
             if (b.get("enabled", True) if isinstance(b, dict) else getattr(b, "enabled", True))}
    return [c for c in registry.all_capabilities() if c.selectable and c.id not in bound]


def card(capability_id: str, reason: str, *, agent_id: str, can_enable: bool) -> dict[str, Any]:
    """The card's data (the `capability_missing` frame): the capability as the Builder names it, and why."""
    cap = _selectable(capability_id)
    return {
        "agent_id": agent_id,
        "capability": {"id": cap.id, "name": cap.name, "description": cap.description, "offers": cap.offers},
        "reason": reason[:500],
        "can_enable": can_enable,
        "toolbox_url": toolbox_path(agent_id, cap.id),
    }


def toolbox_path(agent_id: Any, capability_id: str) -> str:
    return reverse("console:builder", args=[agent_id]) + f"#cap-{capability_id}"


def can_enable(actor: Actor, agent: Agent) -> bool:
    level = agent_access(actor, agent)
    return level is not None and at_least(level, EDIT)


def _selectable(capability_id: str) -> registry.Capability:
    cap = registry.find(capability_id)
    if cap is None or not cap.selectable:
        raise NotFound("Unknown capability.")
    return cap


def starter_binding(actor: Actor, capability_id: str) -> dict[str, Any]:
    """The binding the organization's starter agent gives this capability (its config, key and approvals),
    else the capability with its defaults."""
    starter = Agent.objects.filter(organization=actor.organization, slug=STARTER_SLUG).only("draft_spec").first()
    for binding in (starter.draft_spec.get("capabilities") or []) if starter is not None else []:
        if isinstance(binding, dict) and binding.get("id") == capability_id:
            return {**binding, "enabled": True}
    return {"id": capability_id, "enabled": True}


def _unpublished(agent: Agent) -> bool:
    """Whether the draft differs from the latest published version (True when nothing is published)."""
    from pydantic import ValidationError

    from agents.spec import AgentSpec, dump_spec

    latest = agent.versions.filter(number__gt=0).order_by("-number").only("spec").first()
    if latest is None:
        return True
    try:
        return dump_spec(AgentSpec.model_validate(agent.draft_spec or {})) != latest.spec
    except ValidationError:
        return True


def enable_from_card(*, actor: Actor, agent: Agent, capability_id: str) -> dict[str, Any]:
    """Enable a capability on the draft from the card; publish at once only if the draft had nothing
    unpublished and the actor may publish. Refused (nothing saved) when the capability would not publish."""
    from agents import services as agent_services
    from capabilities import spec_checks

    cap = _selectable(capability_id)
    require_agent_access(actor, agent, EDIT)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().get(pk=agent.pk)
        was_clean = not _unpublished(agent)
        spec = dict(agent.draft_spec or {})
        bindings = [b for b in spec.get("capabilities") or [] if isinstance(b, dict) and b.get("id") != cap.id]
        spec["capabilities"] = [*bindings, starter_binding(actor, cap.id)]
        prefix = f"capabilities[{cap.id}]"
        problems = [p for p in spec_checks.publish_problems(actor, spec, agent=agent)
                    if p["field"].startswith(prefix)]
        if problems:
            raise Invalid(f"{cap.name} cannot be enabled from here: {problems[0]['message']} "
                          "Set it up in the Toolbox.", details={"problems": problems,
                                                                "toolbox_url": toolbox_path(agent.pk, cap.id)})
        agent_services.update_agent(actor=actor, agent=agent, spec=spec)
        audit.record(actor=actor.user, organization=actor.organization, action="agent.capability_enabled_from_card",
                     target=agent, details={"capability": cap.id})
    published = None
    if was_clean and at_least(agent_access(actor, agent) or "", PUBLISH):
        try:
            published = agent_services.publish_agent(actor=actor, agent=agent,
                                                     note=f"Enabled {cap.name} from the chat", allow_unchanged=False)
        except DomainError:  # something else would not publish (a gate, a problem): it waits in the Builder
            published = None
    if published is not None:
        message = f"{cap.name} is enabled and published as v{published.number}."
    else:
        message = f"{cap.name} is enabled in the draft; publish it from the Builder."
    return {"capability": cap.id, "enabled": True, "published_version": published.number if published else None,
            "message": message, "toolbox_url": toolbox_path(agent.pk, cap.id)}


def ask_owner(*, actor: Actor, agent: Agent, capability_id: str, reason: str = "") -> dict[str, Any]:
    """Someone who may not edit the agent asks its owner to enable the capability: a notification opening the
    agent's Toolbox at it. One unread request per person, agent and capability is enough."""
    from notifications.models import Notification
    from notifications.services import notify

    cap = _selectable(capability_id)
    require_agent_access(actor, agent, USE)
    owner = agent.owner
    if owner is None or not owner.memberships.filter(organization=actor.organization, is_suspended=False).exists():
        raise Invalid("This agent has no owner in the organization to ask; ask an administrator.")
    who = actor.user.email if actor.user is not None else "Someone"
    text = f"{who} asks you to enable {cap.name} on {agent.name}"
    text += f": {reason.strip()[:300]}" if reason.strip() else "."
    link = toolbox_path(agent.pk, cap.id)
    with transaction.atomic():
        existing = Notification.objects.filter(organization=actor.organization, recipient=owner, link=link,
                                               kind=Notification.Kind.CAPABILITY_REQUEST, read_at__isnull=True,
                                               text__startswith=f"{who} asks").first()
        if existing is None:
            notify(organization=actor.organization, recipient=owner, kind=Notification.Kind.CAPABILITY_REQUEST,
                   text=text, link=link)
            audit.record(actor=actor.user, organization=actor.organization, action="agent.capability_requested",
                         target=agent, details={"capability": cap.id})
    return {"capability": cap.id, "asked": True, "message": f"The owner of {agent.name} was asked to enable {cap.name}."}
