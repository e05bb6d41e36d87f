"""One organization with a row of every kernel, agent and governance model, linked like real data."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone
from guardian.shortcuts import assign_perm

from agenticos import audit, vault
from agenticos.models import ApiKey, Invitation, Membership, Organization, Secret, User
from agents.models import (
    Agent,
    AgentVersion,
    ChatSettings,
    CompactedHistory,
    Conversation,
    ConversationShare,
    Environment,
    Feedback,
    Message,
    ModelProfile,
    Rollout,
    Run,
    RunStatus,
    Surface,
    ToolCall,
)
from governance.models import Approval, PendingFileRemoval, Question, RetentionPolicy, SpendEntry
from tests import factories

_seq = itertools.count(1)


def secret(org: Organization, value: str, *, name: str | None = None, created_by: User | None = None) -> Secret:
    sealed = vault.seal(org.pk, value)
    return Secret.objects.create(
        organization=org,
        name=name or f"secret-{next(_seq)}",
        key_version=sealed.key_version,
        wrapped_key=sealed.wrapped_key,
        ciphertext=sealed.ciphertext,
        hint=sealed.hint,
        created_by=created_by,
    )


def agent_with_version(org: Organization, owner: User | None = None) -> tuple[Agent, AgentVersion]:
    n = next(_seq)
    agent = Agent.objects.create(organization=org, slug=f"agent-{n}", name=f"Agent {n}", owner=owner)
    version = AgentVersion.objects.create(agent=agent, number=1, spec={"name": agent.name}, published_by=owner)
    return agent, version


def run(
    org: Organization,
    agent: Agent,
    version: AgentVersion,
    *,
    surface: str = Surface.WEB,
    conversation: Conversation | None = None,
    user: User | None = None,
    cost: str = "0",
    status: str = RunStatus.COMPLETED,
) -> Run:
    return Run.objects.create(
        organization=org,
        agent=agent,
        version=version,
        conversation=conversation,
        surface=surface,
        user=user,
        status=status,
        cost_usd=Decimal(cost),
    )


def spend(org: Organization, *, cost: str, surface: str = Surface.WEB, run_row: Run | None = None, when=None) -> SpendEntry:
    return SpendEntry.objects.create(
        organization=org,
        agent=run_row.agent if run_row else None,
        run=run_row,
        surface=surface,
        model="demo",
        cost_usd=Decimal(cost),
        created_at=when or timezone.now(),
    )


@dataclass
class World:
    org: Organization
    owner: User
    secret_value: str
    secret: Secret
    profile: ModelProfile
    agent: Agent
    version: AgentVersion
    run: Run


def build(name: str = "World", secret_value: str | None = None) -> World:
    """A row of every model, all tied to one new organization."""
    n = next(_seq)
    org = factories.organization(name=f"{name} {n}")
    owner = factories.member(org, "owner")
    member = factories.member(org, "member")
    value = secret_value or f"sk-world-{n}-plaintext-0123456789"
    sealed = secret(org, value, created_by=owner)
    profile = ModelProfile.objects.create(
        organization=org, label=f"OpenAI {n}", provider="openai", model="gpt-4o-mini", secret=sealed
    )
    ModelProfile.objects.create(organization=org, label=f"Demo {n}", provider="demo", model="demo")
    agent, version = agent_with_version(org, owner)
    candidate = AgentVersion.objects.create(agent=agent, number=2, spec={"name": agent.name}, published_by=owner)
    rollout = Rollout.objects.create(organization=org, agent=agent, environment="production", base=version,
                                     candidate=candidate, share=10, started_by=owner)
    Environment.objects.create(agent=agent, name="production", version=version, rollout=rollout)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=member, title=f"Chat {n}")
    run_row = run(org, agent, version, conversation=conversation, user=member, cost="0.25")
    message = Message.objects.create(conversation=conversation, run=run_row, version=version, role="user", content="hi")
    ToolCall.objects.create(run=run_row, message=message, tool_call_id=f"call-{n}", tool_name="clock_now")
    CompactedHistory.objects.create(conversation=conversation, organization=org, run=run_row,
                                    through_message_id=message.pk, messages=[{"kind": "request", "parts": []}])
    ChatSettings.objects.create(organization=org, title_profile=profile)
    ConversationShare.objects.create(conversation=conversation, token=f"share-{n:058d}", created_by=member)
    Feedback.objects.create(organization=org, agent=agent, message=message, run=run_row, user=member, rating="down",
                            comment="Too long.")
    spend(org, cost="0.25", run_row=run_row)
    Approval.objects.create(organization=org, run=run_row, tool_call_id=f"call-{n}", tool_id="t", tool_name="send_email")
    Question.objects.create(organization=org, run=run_row, asked_user=member, tool_call_id=f"ask-{n}", questions=[{"q": "?"}])
    ApiKey.objects.create(organization=org, user=member, name=f"key {n}", prefix=f"ak_{n:05d}", key_hash=f"{n:064d}")
    Invitation.objects.create(organization=org, email=f"new{n}@example.com", token_hash=f"{n:064x}", invited_by=owner)
    audit.record(actor=owner, organization=org, action="secret.create", target=sealed)
    RetentionPolicy.objects.create(organization=org, audit_log_days=365, updated_by=owner)
    PendingFileRemoval.objects.create(organization_id=org.pk, path=f"embeds/{n}/files/{n:032x}.txt",
                                      reason="conversation_deleted")
    assign_perm("agents.use_agent", member, agent)
    assert Membership.objects.filter(organization=org).count() == 2
    return World(org, owner, value, sealed, profile, agent, version, run_row)
