"""An embed's own page: every field the API has, a live preview of the widget or hosted page, the JWT signing
secret (shown once, rotatable), the hosted page's logo, pause / resume / delete.

Thin views over `embeds.services`, with the API's permissions (embeds/api.py): `embeds:manage` from the role on
every route, view access to the agent to read, edit access to change. An agent the caller cannot see — and so
its embeds — is a 404, as is an embed of another agent under this one's address. A refused save comes back with
the service's message at its field. The signing secret is never stored anywhere but sealed in the vault: it is
in exactly one response, the one that minted it, and that response is not cached.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset
from agents.models import Agent, Environment
from console.base import console_view, problems_by_field, screen
from embeds import files, services
from embeds import views as public_views
from embeds.models import Embed
from governance.grants import EDIT, VIEW, at_least, require_agent_access

PAGE_TOGGLES = ("allow_new_thread", "allow_microphone", "allow_uploads", "show_tool_steps", "show_tool_results",
                "show_thinking")
# A preview's address carries the form's unsaved looks; the page's toggles travel as 1 / 0.
PREVIEW_TEXT = ("title", "subtitle", "greeting", "empty_text", "launcher_text", "accent_color", "corner", "welcome",
                "logo_source")
PREVIEW_FLAGS = ("allow_new_thread", "allow_microphone", "allow_uploads")
MAX_VARIABLE_ROWS = services.MAX_VARIABLES + 5


def _ip(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR")


def _embed(actor: Actor, agent_id: Any, embed_id: Any) -> tuple[Agent, str, Embed]:
    """The agent (view access, else 404) and its embed (another agent's, or another organization's: 404)."""
    agent = org_get(actor, Agent, agent_id)
    level = require_agent_access(actor, agent, VIEW)
    rows = org_queryset(actor, Embed).filter(agent=agent).select_related("agent", "organization", "jwt_secret")
    return agent, level, org_get(actor, Embed, embed_id, queryset=rows)


def _changeable(actor: Actor, agent: Agent) -> None:
    require_agent_access(actor, agent, EDIT)


# ------------------------------------------------------------------ the form


def _origins(text: str) -> list[str]:
    """One origin per line (commas and spaces separate too); the service decides what is an origin."""
    return [item for item in re.split(r"[\s,]+", text or "") if item]


def _variables(post: Any) -> list[dict[str, Any]]:
    """The variable rows of the form, in order; a row without a name is an empty row, not a variable."""
    rows = []
    for i in range(MAX_VARIABLE_ROWS):
        prefix = f"variables-{i}-"
        name = post.get(prefix + "name", "").strip()
        description = post.get(prefix + "description", "").strip()
        if not name and not description:
            continue
        rows.append({"name": name, "description": description, "required": post.get(prefix + "required") == "on",
                     "url_safe": post.get(prefix + "url_safe") == "on"})
    return rows


def _data(post: Any, embed: Embed) -> dict[str, Any]:
    """What the API would be sent for this form. Parsing only: every rule is the service's."""
    data: dict[str, Any] = {
        "name": post.get("name", "").strip(),
        "environment": post.get("environment", embed.environment),
        "context_note": post.get("context_note", ""),
        "variables": _variables(post),
        # A page's form has no corner, launcher or greeting: what is not on the form keeps its stored value.
        **{field: post[field] for field in services.APPEARANCE_FIELDS if field in post},
    }
    raw_rate = post.get("rate_limit_per_minute", "").strip()
    if not digits_only(raw_rate):
        raise Invalid(_("Enter a whole number of messages per minute."), details={"field": "rate_limit_per_minute"})
    data["rate_limit_per_minute"] = int(raw_rate)
    raw_budget = post.get("monthly_budget_usd", "").strip()
    data["monthly_budget_usd"] = raw_budget or None
    if embed.kind == Embed.Kind.PAGE:
        data["welcome"] = post.get("welcome", "")
        data["logo_source"] = post.get("logo_source", embed.logo_source)
        data.update({toggle: post.get(toggle) == "on" for toggle in PAGE_TOGGLES})
    else:
        data["allowed_origins"] = _origins(post.get("allowed_origins", ""))
        data["auth_mode"] = post.get("auth_mode", embed.auth_mode)
        # The pencil: an empty field keeps the stored secret.
        if post.get("jwt_secret"):
            data["jwt_secret"] = post["jwt_secret"]
    return data


def _form(embed: Embed) -> dict[str, Any]:
    """The form's values as stored."""
    budget = embed.monthly_budget_usd
    return {
        "name": embed.name,
        "environment": embed.environment,
        "auth_mode": embed.auth_mode,
        "allowed_origins": "\n".join(embed.allowed_origins),
        **{field: getattr(embed, field) for field in services.APPEARANCE_FIELDS},
        "context_note": embed.context_note,
        "variables": list(embed.variables),
        "rate_limit_per_minute": embed.rate_limit_per_minute,
        "monthly_budget_usd": "" if budget is None else f"{budget.normalize():f}",
        "welcome": embed.welcome,
        "logo_source": embed.logo_source,
        **{toggle: getattr(embed, toggle) for toggle in PAGE_TOGGLES},
    }


def _posted_form(post: Any, embed: Embed) -> dict[str, Any]:
    """A refused form as it was typed, so nothing is lost — except a secret, which is never written back."""
    form = _form(embed)
    for field in ("name", "environment", "auth_mode", "allowed_origins", *services.APPEARANCE_FIELDS, "context_note",
                  "rate_limit_per_minute", "monthly_budget_usd", "welcome", "logo_source"):
        if field in post:
            form[field] = post[field]
    form["variables"] = _variables(post)
    if embed.kind == Embed.Kind.PAGE:
        form.update({toggle: post.get(toggle) == "on" for toggle in PAGE_TOGGLES})
    return form


def _errors(exc: Invalid | Conflict) -> dict[str, str]:
    found = problems_by_field(exc)
    if not found and isinstance(exc.details, dict) and exc.details.get("fields"):
        found = {str(field): exc.message for field in exc.details["fields"]}
    return found or {"all": exc.message}


def _preview_query(embed: Embed) -> str:
    form = _form(embed)
    params = {field: form[field] for field in PREVIEW_TEXT}
    params.update({flag: "1" if form[flag] else "0" for flag in PREVIEW_FLAGS})
    return urlencode(params)


def _page(request: HttpRequest, actor: Actor, agent: Agent, level: str, embed: Embed, *, status: int = 200,
          **extra: Any) -> HttpResponse:
    budget_cap, spent = services.embed_budget_state(embed.pk)
    context = {
        "nav": "agents",
        "agent": agent,
        "embed": embed,
        "can_edit": at_least(level, EDIT),
        "form": _form(embed),
        "errors": {},
        "new_secret": "",
        "environments": list(Environment.objects.filter(agent=agent).order_by("name")),
        "auth_modes": Embed.AuthMode.choices,
        "corners": Embed.Corner.choices,
        "logo_sources": Embed.Logo.choices,
        "spent": spent.quantize(Decimal("0.0001")),
        "budget_cap": budget_cap,
        "max_variables": services.MAX_VARIABLES,
        "socket_url": services.socket_url(embed) if embed.kind != Embed.Kind.PAGE else "",
        "snippet": services.snippet(embed) if embed.kind == Embed.Kind.WIDGET else "",
        "page_url": services.page_url(embed) if embed.kind == Embed.Kind.PAGE else "",
        "preview_query": _preview_query(embed),
        "logo_max_mb": files.LOGO_MAX_BYTES // (1024 * 1024),
        **extra,
    }
    variables = list(context["form"]["variables"])
    # Always one empty row to declare another with, up to the ceiling.
    context["variable_rows"] = variables + ([{}] if len(variables) < services.MAX_VARIABLES else [])
    response = screen(request, "console/embeds/edit.html", context, status=status)
    if context["new_secret"]:
        add_never_cache_headers(response)
    return response


# ------------------------------------------------------------------ views


@console_view("embeds:manage")
def embed_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Every embed of the organization on an agent the caller can see (as GET /agents/<id>/embeds, for all of
    them at once), in two queries; one is created from its agent's Builder → Availability."""
    from governance.grants import visible_agents

    rows = list(org_queryset(actor, Embed).filter(agent__in=visible_agents(actor)).select_related("agent")
                .order_by("agent__name", "agent_id", "created_at"))
    return screen(request, "console/embeds/list.html", {"nav": "embeds", "embeds": rows})


@console_view("embeds:manage")
def edit(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any) -> HttpResponse:
    agent, level, embed = _embed(actor, agent_id, embed_id)
    if request.method != "POST":
        return _page(request, actor, agent, level, embed)
    _changeable(actor, agent)
    minted = ""
    try:
        data = _data(request.POST, embed)
        going_jwt = data.get("auth_mode") == Embed.AuthMode.JWT
        if going_jwt and embed.jwt_secret_id is None and "jwt_secret" not in data:
            # Switching to jwt without a secret of one's own: mint one, and this response is the only one to show it.
            minted = data["jwt_secret"] = services.new_jwt_secret()
        embed = services.update_embed(actor=actor, embed=embed, data=data, ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        return _page(request, actor, agent, level, embed, status=422, errors=_errors(exc),
                     form=_posted_form(request.POST, embed))
    if minted:
        return page_with_new_secret(request, actor, agent.pk, embed.pk, minted)
    messages.success(request, _("Saved: the widget, socket or page uses it from its next load."))
    return redirect(reverse("console-embeds:edit", args=[agent.pk, embed.pk]))


def page_with_new_secret(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any, secret: str
                         ) -> HttpResponse:
    """The embed's page carrying a signing secret minted by this very request: the one time it is shown."""
    agent, level, embed = _embed(actor, agent_id, embed_id)
    return _page(request, actor, agent, level, embed, new_secret=secret)


@require_POST
@console_view("embeds:manage")
def rotate_secret(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any) -> HttpResponse:
    """A new signing secret replaces the stored one at once: tokens signed with the old one stop working."""
    agent, level, embed = _embed(actor, agent_id, embed_id)
    _changeable(actor, agent)
    minted = services.new_jwt_secret()
    try:
        services.update_embed(actor=actor, embed=embed, data={"jwt_secret": minted}, ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        return _page(request, actor, agent, level, embed, status=422, errors=_errors(exc))
    return page_with_new_secret(request, actor, agent.pk, embed.pk, minted)


@require_POST
@console_view("embeds:manage")
def upload_logo(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any) -> HttpResponse:
    agent, level, embed = _embed(actor, agent_id, embed_id)
    _changeable(actor, agent)
    upload = request.FILES.get("logo")
    try:
        if upload is None:
            raise Invalid(_("Choose an image to upload."), details={"field": "logo"})
        if upload.size and upload.size > files.LOGO_MAX_BYTES:
            raise Invalid(_("The logo is larger than 2 MB."), details={"field": "logo"})
        services.set_logo(actor=actor, embed=embed, data=upload.read(files.LOGO_MAX_BYTES + 1),
                          ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        return _page(request, actor, agent, level, embed, status=422, errors=_errors(exc))
    messages.success(request, _("The logo was uploaded: the page shows it now."))
    return redirect(reverse("console-embeds:edit", args=[agent.pk, embed.pk]) + "#logo")


@require_POST
@console_view("embeds:manage")
def action(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any, action: str) -> HttpResponse:
    agent, _level, embed = _embed(actor, agent_id, embed_id)
    _changeable(actor, agent)
    if action == "delete":
        services.delete_embed(actor=actor, embed=embed, ip_address=_ip(request))
        messages.success(request, _("The embed was deleted: its snippet, socket or page no longer answers."))
        return redirect(reverse("console:builder", args=[agent.pk]) + "#availability")
    services.set_paused(actor=actor, embed=embed, paused=action == "pause", ip_address=_ip(request))
    messages.success(request, _("Paused: it answers nobody until resumed.") if action == "pause"
                     else _("The embed answers again."))
    return redirect(reverse("console-embeds:edit", args=[agent.pk, embed.pk]))


# ------------------------------------------------------------------ the live preview


def _previewed(request: HttpRequest, embed: Embed) -> Embed:
    """The embed wearing the looks in the address (the form's, unsaved), checked as a save would check them.
    A value a save would refuse draws the stored looks instead: the form shows that error when saved."""
    data: dict[str, Any] = {f: request.GET[f] for f in PREVIEW_TEXT if f in request.GET}
    data.update({f: request.GET[f] == "1" for f in PREVIEW_FLAGS if f in request.GET})
    try:
        return services.preview_embed(embed, data)
    except Invalid:
        return embed


@require_GET
@xframe_options_sameorigin
@console_view("embeds:manage")
def preview(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any) -> HttpResponse:
    """A page for the edit page's iframe: the real widget.js (or the real hosted page) in the form's looks, with a
    socket that answers in the browser — a preview never reaches the agent, nor spends anything."""
    agent, _level, embed = _embed(actor, agent_id, embed_id)
    if embed.kind == Embed.Kind.SOCKET:
        raise NotFound(_("A raw socket has nothing to preview: your own client draws it."))
    shown = _previewed(request, embed)
    if embed.kind == Embed.Kind.PAGE:
        config = public_views.page_config(shown)
        config["paused"] = False  # a paused page still previews its looks
        response = public_views.page_response(request, config, preview=True)
    else:
        script = reverse("console-embeds:preview-js", args=[agent.pk, embed.pk]) + "?" + request.GET.urlencode()
        response = render(request, "console/embeds/preview.html", {
            "embed": embed, "agent": agent, "script_url": script})
    add_never_cache_headers(response)
    return response


@require_GET
@console_view("embeds:manage")
def preview_js(request: HttpRequest, actor: Actor, agent_id: Any, embed_id: Any) -> HttpResponse:
    _agent, _level, embed = _embed(actor, agent_id, embed_id)
    if embed.kind != Embed.Kind.WIDGET:
        raise NotFound(_("Only a website widget has a script."))
    source = public_views.widget_source(public_views.widget_config(_previewed(request, embed)))
    response = HttpResponse(source, content_type="application/javascript; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    add_never_cache_headers(response)
    return response
