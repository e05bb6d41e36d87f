"""The Builder's Availability section: the agent's embeds (widget, socket, hosted page) and bot bindings.

Thin views over `embeds.services` and `channelbots.services`, with the API's permissions: `embeds:manage`
for embeds (embeds/api.py), `bots:manage` plus edit access to the agent for bindings (channelbots/api.py and
`create_binding`). A service's refusal is shown next to the form it came from.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.tenancy import Actor, org_get
from agents.models import Agent
from channelbots import services as bot_services
from channelbots.models import Binding
from console.base import console_view, problems_by_field, screen
from console.builder import _agent, _back, builder_context
from embeds import services as embed_services
from embeds.models import Embed

EMBED_ACTIONS = ("pause", "resume", "delete")


def _client_ip(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR")


def _with_errors(request: HttpRequest, actor: Actor, agent: Agent, level: str, **extra: Any) -> HttpResponse:
    context = builder_context(actor, agent, level)
    context.update(extra)
    return screen(request, "console/builder.html", context, status=422)


def _errors(exc: Invalid | Conflict) -> dict[str, str]:
    return problems_by_field(exc) or {"all": exc.message}


# ------------------------------------------------------------------ embeds


def _origins(text: str) -> list[str]:
    """One origin per line (commas and spaces separate too); the service decides what is an origin."""
    return [item for item in re.split(r"[\s,]+", text or "") if item]


@require_POST
@console_view("embeds:manage")
def create_embed(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    post = request.POST
    form = {"kind": post.get("kind", ""), "name": post.get("name", "").strip(), "origins": post.get("origins", ""),
            "environment": post.get("environment", "production"), "auth_mode": post.get("auth_mode", "public")}
    data = {"kind": form["kind"], "name": form["name"], "environment": form["environment"],
            "allowed_origins": _origins(form["origins"])}
    minted = ""
    if form["auth_mode"] == Embed.AuthMode.JWT:
        # The signing secret is minted here and shown once, on the page this answers with — never again.
        data["auth_mode"] = Embed.AuthMode.JWT
        minted = data["jwt_secret"] = embed_services.new_jwt_secret()
    try:
        embed = embed_services.create_embed(actor=actor, agent=agent, data=data, ip_address=_client_ip(request))
    except (Invalid, Conflict) as exc:
        return _with_errors(request, actor, agent, level, embed_form=form, embed_errors=_errors(exc))
    if minted:
        from console.embeds import page_with_new_secret

        messages.success(request, _("The embed was created."))
        return page_with_new_secret(request, actor, agent.pk, embed.pk, minted)
    messages.success(request, _("The embed was created."))
    return _back(agent, f"embed-{embed.pk}")


@require_POST
@console_view("embeds:manage")
def embed_action(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any, action: str) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    embed = org_get(actor, Embed, embed_id)
    if embed.agent_id != agent.pk or action not in EMBED_ACTIONS:
        raise NotFound(_("Embed not found."))
    if action == "delete":
        embed_services.delete_embed(actor=actor, embed=embed, ip_address=_client_ip(request))
        messages.success(request, _("The embed was deleted: its snippet, socket or page no longer answers."))
        return _back(agent, "availability")
    embed_services.set_paused(actor=actor, embed=embed, paused=action == "pause", ip_address=_client_ip(request))
    messages.success(request, _("The embed was paused.") if action == "pause" else _("The embed answers again."))
    return _back(agent, f"embed-{embed.pk}")


# ------------------------------------------------------------------ bot bindings


@require_POST
@console_view("bots:manage")
def create_binding(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    form = {"bot_id": request.POST.get("bot_id", ""), "environment": request.POST.get("environment", "production")}
    try:
        bot_services.create_binding(actor=actor, agent=agent, data=dict(form), ip_address=_client_ip(request))
    except (Invalid, Conflict) as exc:
        return _with_errors(request, actor, agent, level, binding_form=form, binding_errors=_errors(exc))
    messages.success(request, _("The bot now answers as this agent."))
    return _back(agent, "bindings")


@require_POST
@console_view("bots:manage")
def delete_binding(request: HttpRequest, actor: Actor, agent_id: Any, binding_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    binding = org_get(actor, Binding, binding_id,
                      queryset=Binding.objects.filter(organization=actor.organization).select_related("bot", "agent"))
    if binding.agent_id != agent.pk:
        raise NotFound(_("Binding not found."))
    bot_services.delete_binding(actor=actor, binding=binding, ip_address=_client_ip(request))
    messages.success(request, _("%(bot)s no longer answers as this agent.") % {"bot": binding.bot.name})
    return _back(agent, "bindings")
