"""Draft runs: the Builder's test chat talks to the draft without publishing it.

A draft run is an ordinary run (the same admission, runner, socket, budgets, approvals and guardrails) of a
frozen snapshot of the draft: an `AgentVersion` numbered 0, which no environment points at and no list of
published versions shows (evaluations of the draft freeze the same kind of snapshot). The run is marked
`options["draft"]`, its conversation carries `DRAFT_CONVERSATION_KEY`, and the person's chat list leaves those
conversations out: they belong to the Builder.
"""

from __future__ import annotations

from agenticos.errors import Invalid
from agenticos.tenancy import Actor
from agents.models import Agent, AgentVersion
from agents.spec import AgentSpec, dump_spec
from governance.grants import EDIT, require_agent_access

# The environment a member surface names to run the draft instead of a published version.
DRAFT = "draft"
# `Conversation.external_key` of a Builder test conversation.
DRAFT_CONVERSATION_KEY = "builder:draft"
# (Every conversation keyed "builder:…" belongs to a building screen: agents.access.WORKSHOP_KEY_PREFIX.)


def freeze_draft(actor: Actor, agent: Agent) -> AgentVersion:
    """The draft as it is now, frozen for a run: checked as publish checks it (an editor tries only what they
    could publish — secrets, collections and tools of their own organization included), reusing an identical
    snapshot when there is one. Needs edit access: trying a draft is part of building it."""
    from capabilities.spec_checks import publish_problems

    require_agent_access(actor, agent, EDIT)
    agent = Agent.objects.get(pk=agent.pk)  # the draft as it is now
    problems = publish_problems(actor, agent.draft_spec, agent=agent)
    if problems:
        raise Invalid("The draft cannot be tried yet: fix what the Builder shows first.",
                      details={"problems": problems})
    spec = dump_spec(AgentSpec.model_validate(agent.draft_spec))
    same = AgentVersion.objects.filter(agent=agent, number=0, spec=spec).order_by("-created_at").first()
    if same is not None:
        return same
    return AgentVersion.objects.create(agent=agent, number=0, spec=spec, published_by=actor.user,
                                       note="Snapshot of the draft")
