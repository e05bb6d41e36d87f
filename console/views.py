"""Console screens: home, chat, approvals, activity, organization switching and invitations.

The Builder lives in `builder.py`, Settings in `settings_views.py`. Every view calls the services the API
calls; permissions are decided there (the templates only hide what a role cannot do).
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.dateparse import parse_date
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos import services as kernel
from agenticos.errors import Conflict, DomainError, Invalid, NotFound
from agenticos.models import Membership
from agenticos.tenancy import SESSION_KEY, Actor, membership_for, org_get, sees_deployment_settings
from agents.chat import (
    archive_conversation,
    member_run,
    pin_conversation,
    readable_conversation,
    rename_conversation,
    tag_conversation,
)
from agents.chat import delete_conversation as delete_own_conversation
from agents.models import Run, RunStatus, Surface
from agents.sharing import open_share
from console import selectors
from console.architect import first_message, welcome_context
from console.base import console_view, screen
from console.checklist import first_run_checklist
from console.feedback import page_feedback
from console.strings import chat_strings, tool_phrases
from governance import services as governance
from governance.models import Approval

# ------------------------------------------------------------------ organizations and invitations


@require_POST
@login_required
def switch_organization(request: HttpRequest) -> HttpResponse:
    membership = membership_for(request.user, request.POST.get("organization"),
                                session_key=request.session.session_key)
    if membership is None:
        raise Http404(_("Organization not found."))
    request.session[SESSION_KEY] = str(membership.organization_id)
    return redirect("console:home")


def accept_invitation(request: HttpRequest, token: str) -> HttpResponse:
    if not request.user.is_authenticated:
        return screen(request, "console/invitation.html", {"token": token, "needs_sign_in": True})
    if request.method != "POST":
        return screen(request, "console/invitation.html", {"token": token})
    try:
        membership: Membership = kernel.accept_invitation(actor=request.user, token=token)
    except NotFound:
        return screen(request, "console/invitation.html", {"token": token, "invalid": True}, status=404)
    request.session[SESSION_KEY] = str(membership.organization_id)
    messages.success(request, _("You joined %(org)s.") % {"org": membership.organization.name})
    return redirect("console:home")


# ------------------------------------------------------------------ home


@console_view()
def home(request: HttpRequest, actor: Actor) -> HttpResponse:
    return screen(request, "console/home.html", {"data": selectors.dashboard(actor), "nav": "home",
                                                 "welcome": welcome_context(actor),
                                                 "checklist": first_run_checklist(actor)})


# ------------------------------------------------------------------ chat


@require_POST
@console_view("agents:run")
def delete_conversation(request: HttpRequest, actor: Actor, conversation_id: Any) -> HttpResponse:
    """Delete one's own conversation (agents.chat.delete_conversation: files and workspace go with it)."""
    try:
        delete_own_conversation(actor=actor, conversation_id=conversation_id, ip_address=request.META.get("REMOTE_ADDR"))
    except Conflict as exc:
        messages.error(request, exc.message)
        return redirect("console:chat-conversation", conversation_id=conversation_id)
    messages.success(request, _("The conversation was deleted, with its files."))
    return redirect("console:chat")


def _back_to_chat(request: HttpRequest, conversation_id: Any) -> HttpResponse:
    """Back where the form was: the open conversation, or the list (a search kept) the button sat in."""
    back = request.POST.get("next", "")
    if back.startswith("/chat/") and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("console:chat-conversation", conversation_id=conversation_id)


@require_POST
@console_view("agents:run")
def rename_conversation_view(request: HttpRequest, actor: Actor, conversation_id: Any) -> HttpResponse:
    """Rename one's own conversation (someone else's is a 404; a blank or too long title says so)."""
    try:
        rename_conversation(actor=actor, conversation_id=conversation_id, title=request.POST.get("title", ""),
                            ip_address=request.META.get("REMOTE_ADDR"))
    except Invalid as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("The conversation was renamed."))
    return _back_to_chat(request, conversation_id)


@require_POST
@console_view("agents:run")
def pin_conversation_view(request: HttpRequest, actor: Actor, conversation_id: Any) -> HttpResponse:
    """Pin one's own conversation to the top of the list, or unpin it (`pinned` = "1" / "0")."""
    pinned = request.POST.get("pinned") == "1"
    pin_conversation(actor=actor, conversation_id=conversation_id, pinned=pinned)
    messages.success(request, _("Pinned to the top of the list.") if pinned else _("Unpinned."))
    return _back_to_chat(request, conversation_id)


@require_POST
@console_view("agents:run")
def archive_conversation_view(request: HttpRequest, actor: Actor, conversation_id: Any) -> HttpResponse:
    """Archive one's own conversation (it leaves the list for the Archived view) or unarchive it ("1" / "0")."""
    archived = request.POST.get("archived") == "1"
    archive_conversation(actor=actor, conversation_id=conversation_id, archived=archived)
    messages.success(request, _("The conversation was archived.") if archived else _("The conversation is back in the list."))
    return _back_to_chat(request, conversation_id)


@require_POST
@console_view("agents:run")
def tag_conversation_view(request: HttpRequest, actor: Actor, conversation_id: Any) -> HttpResponse:
    """Set one's own conversation's tags from a comma-separated field (empty: no tags)."""
    try:
        tag_conversation(actor=actor, conversation_id=conversation_id,
                         tags=request.POST.get("tags", "").split(","))
    except Invalid as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("The tags were saved."))
    return _back_to_chat(request, conversation_id)


def _list_filters(request: HttpRequest) -> dict[str, Any]:
    """The chat list's search, tag and Archived view, read from the query and kept on its links."""
    search = request.GET.get("q", "").strip()[:200]
    tag = " ".join("".join(ch for ch in request.GET.get("tag", "") if ch.isprintable()).split()).lower()[:40]
    archived = request.GET.get("archived") == "1"
    kept = {key: value for key, value in (("q", search), ("tag", tag), ("archived", "1" if archived else ""))
            if value}
    return {"search": search, "tag": tag, "archived": archived, "list_query": urlencode(kept)}


@console_view()
def chat(request: HttpRequest, actor: Actor, conversation_id: str | None = None) -> HttpResponse:
    filters = _list_filters(request)
    search = filters["search"]
    conversations = selectors.chat_conversations(actor, q=search, archived=filters["archived"], tag=filters["tag"])
    agents = selectors.chat_agents(actor)
    conversation = None
    turns: list[dict[str, Any]] = []
    pending: dict[str, list] = {"approvals": [], "questions": []}
    read_only = False
    if conversation_id is not None:
        conversation = readable_conversation(actor, conversation_id)
        read_only = conversation.owner_id != actor.user_id
        turns = selectors.conversation_turns(conversation, actor.user_id)
        pending = selectors.open_requests(actor, conversation)
    selected = str(conversation.agent_id) if conversation else request.GET.get("agent", "")
    if not selected and agents:
        selected = agents[0]["id"]
    state = {
        "conversation_id": str(conversation.pk) if conversation else None,
        "agent_id": selected,
        "agents": agents,
        "turns": turns,
        "pending": pending,
        "usage": selectors.latest_usage(turns),
        "can_decide": actor.has("approvals:decide"),
        "read_only": read_only,
        "org_budget": selectors.organization_budget_state(actor),
        "urls": {
            "socket": "/ws/chat/",
            "chat": reverse("console:chat"),
            "turns": reverse("console:chat-turns", args=["00000000-0000-0000-0000-000000000000"]),
            # The files panel reads the workspace API, which asks `agents:run`: a viewer gets no panel (not a 403).
            "workspace": (reverse("conversation-workspace", args=["00000000-0000-0000-0000-000000000000"])
                          if actor.has("agents:run") else None),
            "decide": reverse("console:approval-decide", args=["00000000-0000-0000-0000-000000000000"]),
        },
        "strings": chat_strings(),
        "phrases": tool_phrases(),
        # The welcome interview's first words (console/architect.py), sent once by the page.
        "first_message": "" if conversation is not None else first_message(request, selected),
    }
    return screen(request, "console/chat.html", {
        "nav": "chat",
        "conversations": conversations,
        "conversation_groups": selectors.conversation_groups(conversations),
        **filters,
        "conversation_tags": selectors.conversation_tags(actor),
        "conversation": conversation,
        "agents": agents,
        "selected_agent": selected,
        "state": state,
        "can_run": actor.has("agents:run"),
        "read_only": read_only,
        # The conversation's open read-only link (agents.sharing), for its owner's Share menu.
        "share": open_share(conversation) if conversation is not None and not read_only else None,
    })


@console_view("agents:run")
def chat_turns(request: HttpRequest, actor: Actor, conversation_id: str) -> HttpResponse:
    """The stored transcript of a conversation (the client reconciles a live turn with it when it ends)."""
    conversation = readable_conversation(actor, conversation_id)
    turns = selectors.conversation_turns(conversation, actor.user_id)
    return JsonResponse({"turns": turns, "pending": selectors.open_requests(actor, conversation),
                         "usage": selectors.latest_usage(turns)})


@console_view("agents:view")
def export_conversation(request: HttpRequest, actor: Actor, conversation_id: str, fmt: str) -> HttpResponse:
    """A conversation the person may read, as Markdown (the branch on screen) or JSON (the whole tree), downloaded."""
    import json as json_module

    from agents import export

    if fmt not in ("md", "json"):
        raise Http404(_("Unknown export format."))
    conversation = readable_conversation(actor, conversation_id)
    name = f"conversation-{conversation.pk}"
    if fmt == "md":
        response = HttpResponse(export.as_markdown(conversation), content_type="text/markdown; charset=utf-8")
    else:
        response = HttpResponse(json_module.dumps(export.as_json(conversation), ensure_ascii=False, indent=2),
                                content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


# ------------------------------------------------------------------ approvals


@console_view("approvals:decide")
def approvals(request: HttpRequest, actor: Actor) -> HttpResponse:
    status = request.GET.get("status", Approval.Status.PENDING)
    if status not in Approval.Status.values:
        status = Approval.Status.PENDING
    qs = (
        Approval.objects.filter(organization=actor.organization, status=status)
        .select_related("run", "run__agent", "decided_by")
        .order_by("-created_at")
    )
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    rows = [{"approval": a, "args_json": json.dumps(a.args, indent=2, ensure_ascii=False)} for a in page]
    return screen(request, "console/approvals.html", {
        "nav": "approvals", "page": page, "rows": rows, "status": status, "statuses": Approval.Status.choices,
    })


@require_POST
@console_view("approvals:decide")
def approval_decide(request: HttpRequest, actor: Actor, approval_id: str) -> HttpResponse:
    """Decide (same service as POST /api/v1/approvals/<id>: the last decision continues the run)."""
    approval = org_get(actor, Approval, approval_id)
    decision = request.POST.get("decision", "")
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    try:
        approval = governance.decide_approval(actor=actor, approval=approval, decision=decision,
                                              note=request.POST.get("note", ""))
    except Conflict as exc:
        decided = exc.details.get("status") if isinstance(exc.details, dict) else None
        if wants_json and decided:
            # A card left over from a decision made elsewhere is not a failed request (Chromium would log a 409 as
            # a console error): the chat is told what was decided and follows the run. The REST API keeps its 409.
            return JsonResponse({"status": decided, "run_id": str(approval.run_id), "already_decided": True,
                                 "message": exc.message})
        if wants_json:
            return JsonResponse({"error": {"code": exc.code, "message": exc.message}}, status=409)
        messages.error(request, exc.message)
        return redirect("console:approvals")
    if wants_json:
        return JsonResponse({"status": approval.status, "run_id": str(approval.run_id)})
    messages.success(request, _("Decision recorded."))
    return redirect(request.POST.get("next") or reverse("console:approvals"))


# ------------------------------------------------------------------ activity


@console_view("agents:view")
def activity(request: HttpRequest, actor: Actor) -> HttpResponse:
    params = request.GET
    since = parse_date(params.get("since", "") or "")
    until = parse_date(params.get("until", "") or "")
    agent_id = params.get("agent", "")
    trigger_id = params.get("trigger", "")
    try:
        if agent_id:
            agent_id = str(uuid.UUID(agent_id))
        if trigger_id:
            trigger_id = str(uuid.UUID(trigger_id))
        qs = selectors.filtered_runs(
            actor, agent=agent_id, surface=params.get("surface", ""), status=params.get("status", ""),
            trigger=trigger_id,
            since=_day(since), until=_day(until, end=True),
        )
        page = Paginator(qs, 50).get_page(params.get("page"))
    except (ValueError, DomainError):
        raise Http404(_("Unknown filter.")) from None
    counts = page_feedback([run.pk for run in page])
    times = selectors.run_times(list(page))
    for run in page:  # the page's rows are a list once read: the template reads these same objects
        run.feedback_counts = counts.get(str(run.pk))  # type: ignore[attr-defined]
        run.times = times[str(run.pk)]  # type: ignore[attr-defined]
    return screen(request, "console/activity.html", {
        "nav": "activity",
        "page": page,
        "agents": [a for a, _level in selectors.agents_with_access(actor)],
        "surfaces": Surface.choices,
        "statuses": RunStatus.choices,
        "filters": {k: params.get(k, "") for k in ("agent", "surface", "status", "since", "until")},
    })


def _day(value, *, end: bool = False):
    if value is None:
        return None
    from datetime import datetime, time, timedelta

    from django.utils import timezone

    moment = datetime.combine(value, time.min, tzinfo=timezone.get_current_timezone())
    return moment + timedelta(days=1) if end else moment


@console_view("agents:view")
def run_detail(request: HttpRequest, actor: Actor, run_id: str) -> HttpResponse:
    run = member_run(actor, run_id)
    run = Run.objects.select_related("agent", "version", "version__published_by", "user", "conversation",
                                     "api_key").get(pk=run.pk)
    return screen(request, "console/run_detail.html", {
        "nav": "activity", "run": run, **selectors.run_story(actor, run),
        "transcript": list(run.messages.order_by("id")),
        "can_open_chat": run.conversation is not None and run.conversation.owner_id == actor.user_id,
        "operator_hint": (run.error or {}).get("hint", "") if sees_deployment_settings(actor) else "",
    })


# ------------------------------------------------------------------ usage

USAGE_DEFAULT_DAYS = 30
USAGE_MAX_DAYS = 366
# A spreadsheet runs a cell that starts with one of these as a formula (agent names are anyone's text).
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@console_view("agents:run")
def usage(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Spend and runs per agent, person, model and surface over a period, as charts and as CSV. With
    runs:view the organization's; otherwise one's own runs (the same rule as Activity)."""
    from datetime import timedelta

    from django.utils import timezone

    today = timezone.localdate()
    since_day = parse_date(request.GET.get("since", "") or "") or today - timedelta(days=USAGE_DEFAULT_DAYS - 1)
    until_day = parse_date(request.GET.get("until", "") or "") or today
    error = ""
    if until_day < since_day or (until_day - since_day).days >= USAGE_MAX_DAYS:
        error = _("Choose a period of at most %(days)s days that ends after it starts.") % {"days": USAGE_MAX_DAYS}
        since_day, until_day = today - timedelta(days=USAGE_DEFAULT_DAYS - 1), today
    data = selectors.usage(actor, since=_day(since_day), until=_day(until_day, end=True))
    if request.GET.get("format") == "csv" and not error:
        return _usage_csv(data, since_day, until_day)
    dimensions = [(key, _(label), data["tables"][key]) for key, label in selectors.USAGE_DIMENSIONS]
    charts = {key: {"kind": "chart", "chart_type": "bar", "title": _("Spend per %(what)s (USD)") % {"what": label.lower()},
                    "x_values": [r["label"] for r in rows[:12]],
                    "series": [{"name": _("Spend (USD)"), "values": [float(r["spend"]) for r in rows[:12]]},
                               ]} for key, label, rows in dimensions}
    # Every day of the period, a quiet one at 0, as bars: a line between two busy days a week apart drew a ramp
    # through days that had no run.
    period = [(since_day + timedelta(days=i)).isoformat() for i in range((until_day - since_day).days + 1)]
    charts["daily"] = {"kind": "chart", "chart_type": "bar", "title": _("Runs per day"), "x_values": period,
                       "series": [{"name": _("Runs"), "values": [data["daily"].get(d, {}).get("runs", 0) for d in period]}]}
    query = f"since={since_day.isoformat()}&until={until_day.isoformat()}"
    presets = [(n, (today - timedelta(days=n - 1)).isoformat()) for n in (7, 30, 90)]
    return screen(request, "console/usage.html", {
        "nav": "usage", "data": data, "dimensions": dimensions, "charts": charts, "since": since_day,
        "until": until_day, "error": error, "csv_query": query, "presets": presets, "today": today.isoformat(),
        "whole_organization": actor.has("runs:view"),
    }, status=422 if error else 200)


def _usage_csv(data: dict[str, Any], since_day, until_day) -> HttpResponse:
    import csv

    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="usage-{since_day.isoformat()}-{until_day.isoformat()}.csv"'
    writer = csv.writer(response)
    writer.writerow(["dimension", "key", "label", "runs", "spend_usd", "input_tokens", "output_tokens"])
    for dimension, _label in selectors.USAGE_DIMENSIONS:
        for row in data["tables"][dimension]:
            writer.writerow([dimension, _cell(row["key"]), _cell(row["label"]), row["runs"], f"{row['spend']:.8f}",
                             row["input_tokens"], row["output_tokens"]])
    for day, row in data["daily"].items():
        writer.writerow(["day", day, day, row["runs"], f"{row['spend']:.8f}", "", ""])
    return response


def _cell(value: str) -> str:
    return "'" + value if value.startswith(_CSV_FORMULA_START) else value


# ------------------------------------------------------------------ linking a chat account


@console_view()
def link_chat_account(request: HttpRequest, actor: Actor, token: str) -> HttpResponse:
    """The page a chat bot's `link` answer points at (`channelbots.services.mint_link`): it shows which chat
    account would become the signed-in member's, and links it on a POST. Same rules as /api/v1/chat-links/:
    a link of another organization's bot reads as unknown; opening the page never uses the link up."""
    from channelbots import services as bot_services

    context: dict[str, Any] = {"token": token}
    try:
        if request.method == "POST":
            identity = bot_services.confirm_link(actor=actor, token=token, ip_address=request.META.get("REMOTE_ADDR"))
            messages.success(request, _("Your %(platform)s account %(account)s is linked to you.") % {
                "platform": identity.get_platform_display(), "account": identity.display_name or identity.account_id})
            return redirect("console:settings-chat-accounts")
        link = bot_services.find_link(token)
        if link.organization_id != actor.organization.pk:
            raise NotFound(_("Unknown link."))
    except NotFound:
        return screen(request, "console/link.html", {**context, "invalid": True}, status=404)
    return screen(request, "console/link.html", {**context, "identity": link.identity, "bot": link.bot})
