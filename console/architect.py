"""The welcome interview on the console (agents/architect.py): the card on the home page of a new organization's
first builder, which opens web chat with the Architect — the person's words sent as its first turn — or skips it
for good."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agenticos.tenancy import Actor
from agents import architect
from console.base import console_view

# The person's first words, kept in their session between the card's POST and the chat page that sends them: only
# a POST of this person (CSRF-checked) sets it, so no link can make a chat page send a message by itself.
FIRST_MESSAGE = "architect_first_message"
FIRST_MESSAGE_MAX = 4000


def welcome_context(actor: Actor) -> dict[str, Any] | None:
    """What the home page's welcome card needs, or None when the interview is not due for this person."""
    if not architect.welcome_due(actor):
        return None
    return {"has_model": architect.chat_profile(actor) is not None}


def first_message(request: HttpRequest, agent_id: str) -> str:
    """The interview's first words, once, for the chat page opened on the Architect after Start."""
    kept = request.session.pop(FIRST_MESSAGE, None) if FIRST_MESSAGE in request.session else None
    return kept["text"] if isinstance(kept, dict) and kept.get("agent_id") == agent_id else ""


@require_POST
@console_view("agents:edit")
def welcome_start(request: HttpRequest, actor: Actor) -> HttpResponse:
    if not architect.welcome_due(actor):
        return redirect("console:home")
    text = (request.POST.get("text") or "").strip()[:FIRST_MESSAGE_MAX] or "Help me design my first agent."
    agent = architect.begin_welcome(actor)
    request.session[FIRST_MESSAGE] = {"agent_id": str(agent.pk), "text": text}
    return redirect(f"{reverse('console:chat')}?agent={agent.pk}")


@require_POST
@console_view("agents:run")
def ask_architect(request: HttpRequest, actor: Actor) -> HttpResponse:
    """An agent card ("a question to the Architect", spec propose_setup): web chat on the organization's Architect
    with the card's idea as the first words. Installed first by someone who may; else New agent, as before."""
    agent = architect.find(actor.organization)
    if agent is None and actor.has("agents:edit") and actor.has("agents:publish") and architect.chat_profile(actor):
        agent = architect.install(actor)
    if agent is None:
        return redirect("console:agent-new")
    title = (request.POST.get("title") or "").strip()[:80]
    detail = (request.POST.get("detail") or "").strip()[:300]
    text = f"I would like an agent of my own: {title}." + (f" {detail}" if detail else "")
    request.session[FIRST_MESSAGE] = {"agent_id": str(agent.pk), "text": text[:FIRST_MESSAGE_MAX]}
    return redirect(f"{reverse('console:chat')}?agent={agent.pk}")


@require_POST
@console_view("agents:edit")
def welcome_skip(request: HttpRequest, actor: Actor) -> HttpResponse:
    architect.skip_welcome(actor)
    return redirect("console:home")
