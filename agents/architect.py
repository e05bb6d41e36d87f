"""The Architect: the agent that designs agents with a person, and the welcome interview.

The Architect is an agent like any other — data in its organization (slug `architect`), published by the person
who installed it, editable in the Builder. What makes it the Architect is its spec: instructions for the interview
(what the agent is for, who uses it, where it answers, which data and tools), and the capabilities `architect`
(list_setup_options: what this organization offers the person) and `follow_ups` (propose_setup: the setup as a
card). A proposal is checked when it is drawn (capabilities.architect.proposal) and again when the person accepts
it here: accepting creates a **draft** through the same service and permission checks as the console's New agent
(a member who may not create agents cannot make the Architect create one) and never publishes.

The welcome interview: a new organization's first builder (no agent yet, never skipped) is offered a
conversation with the Architect once, on the console's home page; starting it installs the Architect and opens
web chat, which sends the person's first words as the interview's first turn; skipping installs it quietly (when
a model is there to run it) and records the skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from pydantic import ValidationError

from agenticos import audit
from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.models import AuditEvent
from agenticos.tenancy import Actor, parse_uuid
from agents import extensions, services
from agents.models import Agent, ModelProfile, Provider, ToolCall

SLUG = "architect"
NAME = "Architect"
SKIPPED = "architect.welcome.skipped"
ACCEPTED = "architect.proposal.accepted"
# What a person may change on a card before accepting it (the rest they change in the Builder, on the draft).
EDITABLE = ("name", "description", "instructions", "monthly_budget_usd")

INSTRUCTIONS = """You are the Architect of AgenticOS. You design an agent together with the person you talk to, \
and you propose it as a setup they accept as a draft. You never create or publish anything yourself.

Interview first, briefly — one or two questions at a time, with ask_user_question when the answer is a choice:
1. What the agent is for: the job, and an example of a request it should handle.
2. Who uses it: the person alone, their team, customers.
3. Where it should answer: web chat, a chat app (Slack, Teams, Telegram, Mattermost), a hosted page or widget, \
the API, or on a schedule (when, in which time zone, and what it should do each time).
4. Which data and tools it needs: documents, a database, services such as GitHub or Linear, the web, code.

Then call list_setup_options and design the setup from what it returns — only its model ids, collection ids, \
capability ids and key ids; a document the organization does not have yet goes in knowledge_to_upload. Keep the \
monthly budget within the organization's. When the agent should run by itself, give the setup one `trigger`: a \
name, the prompt each run receives, exactly one of `cron` (5 fields) or `every_seconds` (at least 60), and an IANA \
`timezone`; for anything else say in `where` where it answers. Write the agent's instructions in the second person ("You are…"), \
specific to the job, with what it must never do.

Propose with propose_setup: one card of kind "agent" with the whole setup, and, when the agent needs a service \
the person has not connected, a card of kind "connection" naming it. If propose_setup refuses the setup, read why, \
correct it and call it again. Then tell the person in two sentences what you proposed and that accepting the card \
creates a draft they open in the Builder, test and publish when they are ready.
"""


# ------------------------------------------------------------------ the Architect itself


def find(organization: Any) -> Agent | None:
    return Agent.objects.filter(organization=organization, slug=SLUG).first()


def chat_profile(actor: Actor) -> ModelProfile | None:
    """The model the Architect runs on: the organization's first real chat model, else its demo one."""
    profiles = ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT)
    return (profiles.exclude(provider=Provider.DEMO).order_by("created_at", "label").first()
            or profiles.order_by("created_at", "label").first())


def spec_for(profile: ModelProfile) -> dict[str, Any]:
    return {
        "name": NAME,
        "description": "Designs an agent with you from a short interview and proposes it as a draft.",
        "instructions": INSTRUCTIONS,
        "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "architect"}, {"id": "follow_ups"}, {"id": "ask_user"}],
    }


def install(actor: Actor) -> Agent:
    """The organization's Architect, created and published by `actor` the first time (edit and publish rights,
    as for any agent). Raises Invalid when the organization has no chat model to run it on."""
    existing = find(actor.organization)
    if existing is not None:
        return existing
    profile = chat_profile(actor)
    if profile is None:
        raise Invalid("The Architect needs a chat model: add a model profile first.",
                      details={"problems": [{"field": "model_profile_id", "message": "No chat model profile."}]})
    with transaction.atomic():
        agent = services.create_agent(actor=actor, slug=SLUG, spec=spec_for(profile))
        services.publish_agent(actor=actor, agent=agent, note="The Architect, installed for the welcome interview")
    return agent


# ------------------------------------------------------------------ the welcome interview


def welcome_due(actor: Actor) -> bool:
    """A new organization's first builder, once: someone who may create and publish agents, in an organization
    with no agent yet, where nobody skipped the interview."""
    if not (actor.has("agents:edit") and actor.has("agents:publish")):
        return False
    org = actor.organization
    return (not Agent.objects.filter(organization=org).exists()
            and not AuditEvent.objects.filter(organization=org, action=SKIPPED).exists())


def begin_welcome(actor: Actor) -> Agent:
    """The person starts the interview: the Architect is installed (so the offer ends) and returned; their first
    words are sent from web chat, like every message of theirs (console/architect.py)."""
    if not welcome_due(actor):
        existing = find(actor.organization)
        if existing is None:
            raise NotFound("The welcome interview is not offered here.")
        return existing
    return install(actor)


def skip_welcome(actor: Actor) -> None:
    """The person skipped the interview: it is not offered again in this organization. The Architect is still
    installed when a model can run it, so an agent card ("a question to the Architect") has someone to ask."""
    if not welcome_due(actor):
        return
    with transaction.atomic():
        if chat_profile(actor) is not None:
            install(actor)
        audit.record(actor=actor.user, organization=actor.organization, action=SKIPPED,
                     ip_address=actor.extra.get("ip"))


# ------------------------------------------------------------------ accepting a proposal


@dataclass(frozen=True)
class Accepted:
    agent: Agent
    # The schedule the setup carried, created on the draft (its id), or why it was not (the draft is kept).
    trigger_id: str | None = None
    trigger_refused: str = ""


def accept(actor: Actor, *, run_id: Any, call_id: Any, card: int, edits: dict[str, Any] | None = None) -> Agent:
    return accept_setup(actor, run_id=run_id, call_id=call_id, card=card, edits=edits).agent


def accept_setup(actor: Actor, *, run_id: Any, call_id: Any, card: int,
                 edits: dict[str, Any] | None = None) -> Accepted:
    """Accept one agent card of a propose_setup call in the person's own run: the setup (with the person's edits)
    is checked again as the person stands now and becomes a draft agent they own, with the schedule it carries as
    a trigger of the draft (triggers/proposed.py: it fires only once a version is published), all in one
    transaction. Never publishes.

    Raises NotFound (not their run, no such call or card), Forbidden (may not create agents), Invalid (the setup no
    longer passes, or an edit breaks it) and Conflict (this card was accepted already). A person who may create
    the agent but not its trigger gets the draft without it, and `trigger_refused` says why."""
    from capabilities.architect import proposal

    actor.require("agents:edit")
    with transaction.atomic():
        call = _own_call(actor, run_id, call_id)
        setup = _setup_of(call, card, edits or {})
        found = proposal.problems(actor, setup)
        if found:
            raise Invalid("The proposed agent cannot be created.",
                          details={"problems": [{"field": p.split(":", 1)[0], "message": p.split(":", 1)[-1].strip()}
                                                for p in found]})
        drawn = (call.result or {}).get("cards") or []
        if card < len(drawn) and drawn[card].get("accepted_agent_id"):
            raise Conflict("This proposal was accepted already.",
                           details={"agent_id": drawn[card]["accepted_agent_id"]}, code="accepted")
        agent = services.create_agent(actor=actor, spec=proposal.spec_of(setup))
        trigger_id, refused = None, ""
        if setup.trigger is not None:
            try:
                with transaction.atomic():  # a savepoint: a refused trigger leaves the draft standing
                    trigger_id = extensions.proposed_trigger().create(actor, agent, setup.trigger.model_dump())
            except (Forbidden, NotFound) as exc:
                # The triggers service's own access check (edit access on the agent, a person as creator): today
                # whoever may create the draft owns it and passes, but the check is the triggers app's to make,
                # and a refusal there costs the schedule, not the draft.
                refused = f"The draft was created without its schedule: {exc.message}"
        if card < len(drawn):
            drawn[card]["accepted_agent_id"] = str(agent.pk)
            if trigger_id:
                drawn[card]["accepted_trigger_id"] = trigger_id
            if refused:
                drawn[card]["trigger_refused"] = refused
            ToolCall.objects.filter(pk=call.pk).update(result={**(call.result or {}), "cards": drawn})
        audit.record(actor=actor.user, organization=actor.organization, action=ACCEPTED, target=agent,
                     details={"run_id": str(call.run_id), "edited": sorted(edits or {}), "trigger_id": trigger_id},
                     ip_address=actor.extra.get("ip"))
    return Accepted(agent=agent, trigger_id=trigger_id, trigger_refused=refused)


def _own_call(actor: Actor, run_id: Any, call_id: Any) -> ToolCall:
    """A propose_setup call (by the model's tool call id, as the transcript names it) of one of the person's own
    runs, locked; anything else is not found (an outsider's, another member's, another tool's)."""
    run_uuid = parse_uuid(str(run_id))
    if run_uuid is None:
        raise NotFound("Proposal not found.")
    call = (ToolCall.objects.select_for_update()
            .filter(tool_call_id=str(call_id)[:200], run_id=run_uuid, tool_name="propose_setup",
                    status=ToolCall.Status.OK, run__organization=actor.organization, run__user_id=actor.user_id)
            .first())
    if call is None or not (call.result or {}).get("cards"):
        raise NotFound("Proposal not found.")
    return call


def _setup_of(call: ToolCall, card: int, edits: dict[str, Any]):
    from capabilities.architect.proposal import AgentSetup

    cards = (call.args or {}).get("cards") or []
    if not isinstance(card, int) or not 0 <= card < len(cards) or not isinstance(cards[card], dict) \
            or not cards[card].get("setup"):
        raise NotFound("Proposal not found.")
    unknown = sorted(set(edits) - set(EDITABLE))
    if unknown:
        raise Invalid("Only the name, description, instructions and monthly budget can be edited here.",
                      details={"problems": [{"field": f, "message": "Not editable here."} for f in unknown]})
    try:
        return AgentSetup.model_validate({**cards[card]["setup"], **edits})
    except ValidationError as exc:
        from agents.spec import problems_from_validation_error

        raise Invalid("The proposed agent is invalid.",
                      details={"problems": problems_from_validation_error(exc)}) from None
