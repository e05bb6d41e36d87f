"""The missing-capability signal: how a run says "this request needs a capability the agent does not have".

"Your setup" already tells the model what the agent lacks. Where a person can act on a card (web chat and the
Builder's test chat: a signed-in member who can answer), the run also gets one tool, `request_capability`: the
model names the capability and why, the run emits a `capability_missing` frame with the card's data
(agents.capability_card.card), and the call stays in the transcript, so a reopened conversation can draw the
card again from it. Elsewhere (channels, API, embeds, triggers) nobody could press the card's button, and the
model keeps saying it in words, as Your setup asks.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset

from agents.run_handle import RunDeps
from agents.runner.frames import frame

TOOL_NAME = "request_capability"
NOT_LACKING = ("{id!r} is not a capability this agent lacks (it is bound already, or no such capability exists); "
               "choose one from the list of capabilities this agent does not have in Your setup.")
SHOWN = ("A card offering {name} was shown to the person, with your reason. Tell them in one sentence what it "
         "would let you do; do not pretend to do it now.")


def wanted(run: Any) -> bool:
    """A member in web chat (or the Builder's test chat) who can answer cards."""
    return run.surface == "web" and run.user_id is not None and bool((run.options or {}).get("can_ask_user"))


def toolset(run: Any, spec: Any) -> FunctionToolset[RunDeps] | None:
    """The card tool for this run, or None where no card can be drawn or nothing is lacking."""
    from agents.capability_card import lacking

    if not wanted(run):
        return None
    missing = {c.id: c for c in lacking(list(spec.capabilities))}
    if not missing:
        return None
    agent_id, organization_id, user_id = str(run.agent_id), str(run.organization_id), run.user_id

    async def request_capability(ctx: RunContext[RunDeps], capability_id: str, reason: str) -> str:
        """<summary>Show the person a card offering a capability this agent lacks, when their request needs it.
        </summary>
        <returns>What to tell the person next.</returns>

        Args:
            capability_id: The id of a capability listed under "Capabilities this agent does not have".
            reason: One sentence, in the person's language, on why their request needs it.
        """
        cap = missing.get(capability_id)
        if cap is None:
            return NOT_LACKING.format(id=capability_id)
        execution = ctx.deps.execution
        data = await _card(execution, capability_id, reason, agent_id, organization_id, user_id)
        if execution is not None:
            await execution.emit(frame("capability_missing", run_id=ctx.deps.run_id, **data))
        return SHOWN.format(name=cap.name)

    return FunctionToolset([request_capability])


async def _card(execution: Any, capability_id: str, reason: str, agent_id: str, organization_id: str,
                user_id: int) -> dict[str, Any]:
    from agents.capability_card import card

    def build() -> dict[str, Any]:
        return card(capability_id, reason, agent_id=agent_id,
                    can_enable=_can_enable(agent_id, organization_id, user_id))

    if execution is None:
        from asgiref.sync import sync_to_async

        return await sync_to_async(build)()
    return await execution.db(build)


def _can_enable(agent_id: str, organization_id: str, user_id: int) -> bool:
    """Whether the run's person may edit the agent now (their membership as it stands, grants included)."""
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from agents.capability_card import can_enable
    from agents.models import Agent

    membership = (Membership.objects.select_related("user", "organization")
                  .filter(organization_id=organization_id, user_id=user_id, is_suspended=False).first())
    agent = Agent.objects.filter(pk=agent_id, organization_id=organization_id).first()
    if membership is None or agent is None:
        return False
    return can_enable(actor_for_membership(membership), agent)
