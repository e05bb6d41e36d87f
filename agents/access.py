"""Which of the agents app's rows a person may read, for every layer that serves them one (web chat, the
capabilities' own pages and APIs, the surfaces). It sits beside knowledge and governance, below the capabilities,
so they use it without importing web chat (agents.chat, a layer above them: the contract in pyproject.toml)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agenticos.errors import NotFound
from agenticos.tenancy import Actor, org_get
from agents.models import Conversation, Run

# Every conversation keyed "builder:…" belongs to a building screen (the Builder's test chat, agents.drafts; the
# AI tool builder's sessions), never to the person's Chat list.
WORKSHOP_KEY_PREFIX = "builder:"


def member_run(actor: Actor, run_id) -> Run:
    """A run the actor may see: their own, or any of the organization's with runs:view."""
    qs = Run.objects.filter(organization=actor.organization).select_related("agent", "version")
    if not actor.has("runs:view"):
        qs = qs.filter(user_id=actor.user_id)
    try:
        return org_get(actor, Run, run_id, queryset=qs)
    except NotFound:
        raise NotFound("Run not found.") from None


def readable_conversations(actor: Actor) -> QuerySet[Conversation]:
    """Own conversations, those shared with the person, and channel threads they took part in and are still
    a member of (confirmed against the platform) — the corpus conversation search uses — newest first.
    Everything read *through* a conversation (console, files panel) loads it from here."""
    from knowledge.conversations import corpus_ids

    others = corpus_ids(str(actor.organization.pk), actor.user_id)
    return (
        Conversation.objects.filter(organization=actor.organization)
        .filter(Q(owner_id=actor.user_id) | Q(pk__in=others))
        .exclude(external_key__startswith=WORKSHOP_KEY_PREFIX)  # the Builder's and the tool builder's own
        .select_related("agent")
        .order_by("-last_active_at")
    )


def readable_conversation(actor: Actor, conversation_id) -> Conversation:
    """One conversation the person may read (404 otherwise, outsiders included)."""
    return org_get(actor, Conversation, conversation_id, queryset=readable_conversations(actor))
