"""The welcome interview on the console (agents/architect.py): the card on the home page of a new organization's
first builder, which starts a conversation with the Architect or skips it for good."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agenticos.tenancy import Actor
from agents import architect
from console.base import console_view


def welcome_context(actor: Actor) -> dict[str, Any] | None:
    """What the home page's welcome card needs, or None when the interview is not due for this person."""
    if not architect.welcome_due(actor):
        return None
    return {"has_model": architect.chat_profile(actor) is not None}


@require_POST
@console_view("agents:edit")
def welcome_start(request: HttpRequest, actor: Actor) -> HttpResponse:
    if not architect.welcome_due(actor):
        return redirect("console:home")
    text = (request.POST.get("text") or "").strip() or "Hello! Help me design my first agent."
    run = architect.start_welcome(actor, text)
    return redirect("console:chat-conversation", conversation_id=run.conversation_id)


@require_POST
@console_view("agents:edit")
def welcome_skip(request: HttpRequest, actor: Actor) -> HttpResponse:
    architect.skip_welcome(actor)
    return redirect("console:home")
