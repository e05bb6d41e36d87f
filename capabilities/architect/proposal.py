"""An agent setup proposed by a model (propose_setup's "agent" card with a `setup`), and the checks it passes.

A proposal is checked exactly as the console checks a person's draft — the same spec validation and the same
reference checks as publishing (capabilities.spec_checks.publish_problems: the model profile, every collection and secret
of this organization and usable by the person, capability ids and their settings) — plus the one thing a draft
does not check: its monthly budget must fit under the organization's. A refusal is one readable paragraph for the
model, which can correct the proposal and call again; nothing is drawn, nothing is created.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

MAX_PROBLEMS_SHOWN = 8


class ProposedCapability(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=80)
    config: dict[str, Any] = Field(default_factory=dict)
    secret_id: str | None = None


class ProposedSchedule(BaseModel):
    """A schedule the new agent runs on (triggers.models.Trigger, kind schedule): exactly one of a cron expression
    or an interval, read in an IANA time zone, and the prompt each firing sends. Checked by the triggers app's own
    validators (triggers/proposed.py); created with the draft, it starts once the person publishes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=20_000)
    cron: str = Field(default="", max_length=120)
    every_seconds: int | None = Field(default=None, ge=1)
    timezone: str = Field(default="UTC", max_length=64)


class AgentSetup(BaseModel):
    """What the Architect proposes: everything a new agent's draft needs, by reference (ids), never a value."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=2000)
    instructions: str = Field(min_length=1, max_length=20_000)
    model_profile_id: str = Field(min_length=1, max_length=64)
    capabilities: list[ProposedCapability] = Field(default_factory=list, max_length=25)
    collection_ids: list[str] = Field(default_factory=list, max_length=20)
    # Documents the person should upload to a new collection (the Architect cannot upload them itself).
    knowledge_to_upload: list[str] = Field(default_factory=list, max_length=10)
    monthly_budget_usd: Decimal | None = Field(default=None, ge=0, allow_inf_nan=False)
    # Where it should answer, in words (web chat, Slack, a hosted page, a schedule): the person sets it up.
    where: str = Field(default="", max_length=300)
    # At most one schedule, created with the draft when the person accepts (a surface — widget, page, channel —
    # is still theirs to set up in the Builder: `where` says which).
    trigger: ProposedSchedule | None = None


def spec_of(setup: AgentSetup) -> dict[str, Any]:
    """The draft spec a setup makes (the shape agents.spec.AgentSpec loads)."""
    capabilities = []
    for cap in setup.capabilities:
        binding: dict[str, Any] = {"id": cap.id, "config": cap.config, "enabled": True}
        if cap.secret_id:
            binding["secret_id"] = cap.secret_id
        capabilities.append(binding)
    spec: dict[str, Any] = {
        "name": setup.name.strip(), "description": setup.description, "instructions": setup.instructions,
        "model_profile_id": setup.model_profile_id, "capabilities": capabilities,
        "collection_ids": list(dict.fromkeys(setup.collection_ids)),
    }
    if setup.monthly_budget_usd is not None:
        spec["budget"] = {"monthly_usd": str(setup.monthly_budget_usd)}
    return spec


NOT_A_BUILDER = ("The agent setup was refused and nothing was drawn: this person may not create agents in this "
                 "organization. Describe the agent in words instead, for them to pass on to someone who builds "
                 "agents here.")


def problems(actor: Actor, setup: AgentSetup) -> list[str]:
    """Everything wrong with a setup for this person in this organization, as sentences ("field: message")."""
    from capabilities.spec_checks import publish_problems

    found = [f"{p['field']}: {p['message']}" for p in publish_problems(actor, spec_of(setup))]
    if setup.trigger is not None:
        from agents import extensions

        found += extensions.proposed_trigger().problems(actor, setup.trigger.model_dump())
    cap = actor.organization.monthly_budget_usd
    if setup.monthly_budget_usd is not None and cap is not None and setup.monthly_budget_usd > cap:
        found.append(f"monthly_budget_usd: {setup.monthly_budget_usd} is above this organization's monthly budget "
                     f"of {cap} USD; propose at most {cap}.")
    return found


def refusal(found: list[str]) -> str:
    """The message the model reads when a proposal is refused: what is wrong, and where to look."""
    shown = found[:MAX_PROBLEMS_SHOWN]
    more = f" (and {len(found) - len(shown)} more)" if len(found) > len(shown) else ""
    return ("The agent setup was refused and nothing was drawn: " + "; ".join(shown) + more
            + ". Use only ids that list_setup_options returned and a valid schedule, then call propose_setup again.")


def display(actor: Actor, setup: AgentSetup) -> dict[str, Any]:
    """The checked setup as the card draws it: the ids with the names the person knows them by."""
    from agents.models import ModelProfile
    from capabilities import registry
    from knowledge.models import Collection

    profile = ModelProfile.objects.filter(organization=actor.organization, pk=setup.model_profile_id).first()
    names = dict(Collection.objects.filter(organization=actor.organization, pk__in=setup.collection_ids)
                 .values_list("pk", "name"))
    data = setup.model_dump(mode="json")
    data["model_label"] = profile.label if profile is not None else ""
    data["capability_names"] = [getattr(registry.find(c.id), "name", c.id) for c in setup.capabilities]
    data["collection_names"] = [names.get(_uuid(i), "") for i in setup.collection_ids]
    if setup.trigger is not None:
        from agents import extensions

        data["trigger_words"] = (f"{extensions.proposed_trigger().describe(setup.trigger.model_dump())}: "
                                 f"{setup.trigger.name}. It starts once you publish the agent.")
    return data


def _uuid(value: str) -> Any:
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
