"""Share links in the console: the owner makes and revokes one from the chat's head (agents.sharing), and the
read-only page a link opens — for anyone, signed in or not: the branch on screen drawn by the one turn renderer,
text only."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import NotFound
from agenticos.tenancy import Actor
from agents import sharing
from console.base import console_view
from console.strings import chat_strings


@require_POST
@console_view("agents:run")
def share_conversation(request: HttpRequest, actor: Actor, conversation_id: str) -> HttpResponse:
    sharing.share(actor=actor, conversation_id=conversation_id)
    messages.success(request, _("Anyone with the link can read this conversation now."))
    return redirect(reverse("console:chat-conversation", args=[conversation_id]))


@require_POST
@console_view("agents:run")
def revoke_share(request: HttpRequest, actor: Actor, conversation_id: str) -> HttpResponse:
    sharing.revoke(actor=actor, conversation_id=conversation_id)
    messages.success(request, _("The link no longer opens this conversation."))
    return redirect(reverse("console:chat-conversation", args=[conversation_id]))


def shared_page(request: HttpRequest, token: str) -> HttpResponse:
    try:
        conversation = sharing.shared(token)
    except NotFound:
        raise Http404(_("This link is unknown or was revoked.")) from None
    response = render(request, "console/shared.html", {
        "conversation": conversation,
        "state": {"turns": sharing.shared_turns(conversation), "strings": chat_strings()},
    })
    response["X-Robots-Tag"] = "noindex"
    response["Referrer-Policy"] = "no-referrer"  # the token is the key: never sent to a site a link in it opens
    return response
