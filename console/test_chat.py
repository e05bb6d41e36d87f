"""The Builder's test chat is the web chat: the same modules (console/chat.js and chat/), the same turn renderer
(turn.js) and the same cards, given a state that points them at the draft (`environment: "draft"`) and at this
page's own transcript endpoint — a Builder test conversation is no conversation of the Chat list
(agents.drafts), so the list's endpoints do not read it.

What a builder tests is what people will see: markdown, steps, charts, visuals, files, approvals with their
exact arguments and questions all come from the one renderer.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse

from agenticos.tenancy import Actor, org_get
from agents.chat import own_conversation
from agents.drafts import DRAFT
from agents.models import Agent
from console import selectors
from console.base import console_view
from console.strings import chat_strings, tool_phrases
from governance.grants import EDIT, require_agent_access

ZERO = "00000000-0000-0000-0000-000000000000"


def test_chat_state(actor: Actor, agent: Agent) -> dict[str, Any]:
    """The web chat's state (console.views.chat) for the draft of `agent`, starting with no conversation."""
    budget = (agent.draft_spec.get("budget") or {}).get("monthly_usd")
    spent = selectors.agent_spend_this_month(actor).get(str(agent.pk), Decimal("0"))
    return {
        "test_chat": True,
        "environment": DRAFT,
        "conversation_id": None,
        "agent_id": str(agent.pk),
        "agents": [{"id": str(agent.pk), "name": agent.name, "version": 0, "can_edit": True,
                    "starter_prompts": list(agent.draft_spec.get("starter_prompts") or []),
                    "budget": {"limit": str(budget) if budget is not None else None, "spent": str(spent)}}],
        "turns": [],
        "pending": {"approvals": [], "questions": []},
        "usage": None,
        "can_decide": actor.has("approvals:decide"),
        "read_only": False,
        "org_budget": selectors.organization_budget_state(actor),
        "urls": {
            "socket": "/ws/chat/",
            "chat": reverse("console:chat"),
            "turns": reverse("console:builder-test-turns", args=[agent.pk, ZERO]),
            "workspace": None,  # a draft conversation keeps no files panel: its files are the run's
            "decide": reverse("console:approval-decide", args=[ZERO]),
        },
        "strings": chat_strings(),
        "phrases": tool_phrases(),
    }


@console_view("agents:run")
def test_chat_turns(request: HttpRequest, actor: Actor, agent_id: Any, conversation_id: Any) -> HttpResponse:
    """The stored transcript of one of the person's own test conversations with this agent's draft (an editor's
    only: anyone else, a conversation of the Chat list, and another organization's get 404)."""
    agent = org_get(actor, Agent, agent_id)
    require_agent_access(actor, agent, EDIT)
    conversation = own_conversation(actor, conversation_id, agent, draft=True)
    turns = selectors.conversation_turns(conversation, actor.user_id)
    return JsonResponse({"turns": turns, "pending": selectors.open_requests(actor, conversation),
                         "usage": selectors.latest_usage(turns)})
