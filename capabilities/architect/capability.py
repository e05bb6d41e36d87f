"""Architect (the agent that designs agents, agents/architect.py): one tool, `list_setup_options`, reading what
this organization can give a new agent for the person the run acts for, so a proposal names real ids. The proposal
itself is propose_setup's "agent" card (capabilities/follow_ups), checked by `proposal.problems`."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext

from agents.run_handle import RunDeps
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset


async def list_setup_options(ctx: RunContext[RunDeps]) -> dict:
    """List what this organization can give a new agent: its chat models, the knowledge collections the person
    may use, the capabilities of the catalog (with their setting names, and the organization's keys by name for
    those that need one) and the organization's monthly budget.

    Call it before proposing an agent setup with propose_setup, and use only the ids it returns.

    Returns:
        {"models": [{id, label, provider, model}], "collections": [{id, name, description}], "capabilities":
        [{id, name, offers, settings, needs_key?}], "organization_monthly_budget_usd": a number as text or null}.
    """
    deps = ctx.deps

    def read() -> dict[str, Any]:
        actor = run_actor(deps.organization_id, deps.user_id)
        if actor is None:
            return {"error": "Nobody signed in is behind this run, so there is nothing to propose for."}
        from capabilities.architect.options import setup_options

        return setup_options(actor)

    if deps.execution is not None:
        return await deps.execution.db(read)
    from asgiref.sync import sync_to_async

    return await sync_to_async(read)()


def run_actor(organization_id: str, user_id: int | None) -> Any:
    """The person the run acts for, with their membership as it stands now (None: no person, or no longer a
    member) — the authority a proposal is checked and accepted with."""
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    if user_id is None:
        return None
    membership = (Membership.objects.select_related("user", "organization")
                  .filter(organization_id=organization_id, user_id=user_id, is_suspended=False).first())
    return actor_for_membership(membership) if membership is not None else None


def build(ctx: BuildContext) -> list[Built]:
    return [function_toolset([list_setup_options])]


CAPABILITY = Capability(
    id="architect",
    name="Architect",
    category="utility",
    description="Designs agents with the person: reads what this organization can give a new agent (models, "
                "knowledge, capabilities, budget) so that the setup it proposes names only real ones.",
    offers="the organization's models, collections, capabilities and budget, to propose an agent setup",
    examples=("Help me build an agent that answers our customers.", "What could an agent of mine use?"),
    never_does="It never creates or publishes an agent: a proposal is a card the person accepts as a draft, "
               "and it never shows a key's value, only its name.",
    tools=(ToolDecl.from_function(list_setup_options),),
    build=build,
    voice="never",
    binds_with=("follow_ups",),
)
