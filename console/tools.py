"""Tools → custom tools in the console: the list (grouped by provider, the 25-slot budget per agent), the
template gallery, the manual builder form with its real Test call, and the AI tool builder as a chat.

Thin views over `capabilities.custom_tools.services` / `templates` and `agents.tool_builder` — the same services and
permissions as /api/v1/tools (`agents:view` to see, `agents:edit` to change, `secrets:view` to pick a
credential). The form only turns posted fields into the definition dict the API takes; validation is the
service's, and its problems come back at their fields. A credential is shown by its vault name only.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, DomainError, Forbidden, Invalid
from agenticos.models import Secret
from agenticos.tenancy import Actor, org_get, org_queryset
from capabilities.custom_tools import budget, services, templates
from capabilities.custom_tools.schema import PATH_PARAM_RE, arg_name
from capabilities.models import CustomTool, ToolBuilderSession, ToolDraft, ToolKit
from console.base import console_view, post_form, problems_by_field, screen
from console.templatetags.form_errors import error_lines

READ = "agents:view"
WRITE = "agents:edit"
BLANK_PARAM_ROWS = 3
BLANK_WARNING_ROWS = 2
MAX_ROWS = 60
LOCATIONS = ("path", "query", "header", "body")
PARAM_TYPES = ("string", "integer", "number", "boolean", "array")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
AUTH_FAMILIES = ("none", "header", "query", "hmac", "jwt")
WARNING_LEVELS = ("info", "warning", "critical")


def with_ip(actor: Actor, request: HttpRequest) -> Actor:
    actor.extra["ip"] = request.META.get("REMOTE_ADDR")
    return actor


def form_errors(exc: DomainError) -> dict[str, str]:
    return problems_by_field(exc) or {"all": exc.message}


def secrets_for(actor: Actor) -> list[Secret]:
    """Vault secrets a credential may be chosen from — only for someone allowed to use them."""
    from agenticos.services import pickable_secrets

    return list(pickable_secrets(actor))


def highlighted_url(url: str) -> SafeString:
    """The URL escaped, each `{path_param}` wrapped in <mark> so the form shows which parts the call fills."""
    parts: list[str] = []
    last = 0
    for match in PATH_PARAM_RE.finditer(url):
        parts.append(escape(url[last:match.start()]))
        parts.append(f'<mark data-path-param="{escape(match.group(1))}">{escape(match.group(0))}</mark>')
        last = match.end()
    parts.append(escape(url[last:]))
    return mark_safe("".join(parts))  # noqa: S308 - every piece is escaped above


# ------------------------------------------------------------------ the list, grouping and budget


def group_of(tool: CustomTool) -> str:
    """Provider grouping: the kit's provider name, else the template's, else the first tag."""
    if tool.kit_name:
        return tool.kit_name
    if tool.template_key and tool.template_key in templates.TEMPLATES:
        return str(templates.TEMPLATES[tool.template_key]["provider"])
    return str(tool.tags[0]).capitalize() if tool.tags else _("Other")


def _groups(tools: list[CustomTool]) -> list[dict[str, Any]]:
    grouped: OrderedDict[str, list[CustomTool]] = OrderedDict()
    for tool in sorted(tools, key=lambda t: (group_of(t).lower(), t.name.lower())):
        grouped.setdefault(group_of(tool), []).append(tool)
    return [{"name": name, "tools": rows} for name, rows in grouped.items()]


def agent_budgets(actor: Actor) -> list[dict[str, Any]]:
    """Per agent using custom tools or database connections: its slots out of 25 (the draft's spec).
    The same count as `budget.slots`, with the organization's connections read once for every agent."""
    from agents.models import Agent
    from capabilities.models import DatabaseConnection

    connections = {pk: (name, permission) for pk, name, permission in org_queryset(actor, DatabaseConnection)
                   .values_list("pk", "name", "permission")}
    rows = []
    for agent in org_queryset(actor, Agent).only("pk", "name", "draft_spec").order_by("name"):
        spec = agent.draft_spec or {}
        tool_ids, connection_ids = budget.custom_tool_ids(spec), budget.connection_ids(spec)
        if not (tool_ids or connection_ids):
            continue
        used = {connections[pk][0]: budget.CONNECTION_SLOTS[connections[pk][1]]
                for pk in connection_ids if pk in connections}
        total = len(tool_ids) + sum(used.values())
        rows.append({"agent": agent, "usage": {"total": total, "custom_tools": len(tool_ids), "connections": used},
                     "max": budget.MAX_SLOTS, "percent": min(100, round(total * 100 / budget.MAX_SLOTS)),
                     "over": total > budget.MAX_SLOTS})
    return rows


@console_view(READ)
def tool_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    tools = list(org_queryset(actor, CustomTool).select_related("credential")
                 .defer("credential__wrapped_key", "credential__ciphertext"))
    context = {
        "nav": "tools", "groups": _groups(tools), "count": len(tools), "budgets": agent_budgets(actor),
        "max_slots": budget.MAX_SLOTS, "slot_costs": budget.CONNECTION_SLOTS, "gallery": templates.catalog(),
        "installed": {t.template_key for t in tools if t.template_key}, "can_edit": actor.has(WRITE),
        "secrets": secrets_for(actor),
    }
    return screen(request, "console/tools/list.html", context)


@require_POST
@console_view(WRITE)
def template_install(request: HttpRequest, actor: Actor, key: str) -> HttpResponse:
    try:
        tool = templates.install(actor=with_ip(actor, request), key=key,
                                 alias=(request.POST.get("alias") or "").strip() or None,
                                 credential_id=request.POST.get("credential_id") or None)
    except (Invalid, Conflict) as exc:
        messages.error(request, " ".join(line for _field, line in error_lines(form_errors(exc))))
        return redirect(reverse("console-tools:list") + "#gallery")
    messages.success(request, _("Installed a copy of the template as %(name)s: add its credential and edit it "
                                "as you like.") % {"name": tool.name})
    return redirect(reverse("console-tools:edit", args=[tool.pk]))


# ------------------------------------------------------------------ the manual builder form


def _typed(kind: str, text: str) -> Any:
    """A typed value from a text box, as the definition wants it; what does not parse stays text so the
    service names the problem at its field."""
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
        if kind == "boolean":
            return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}[text.lower()]
        if kind == "array":
            return json.loads(text)
    except (ValueError, KeyError):
        return text
    return text


def _rows(post: Any, prefix: str) -> list[int]:
    found = {int(m.group(1)) for key in post for m in [re.match(rf"^{prefix}-(\d+)-", key)] if m}
    return sorted(i for i in found if i < MAX_ROWS)


def parameters_from_post(post: Any) -> list[dict[str, Any]]:
    params = []
    for i in _rows(post, "p"):
        name = (post.get(f"p-{i}-name") or "").strip()
        if not name:
            continue
        kind = post.get(f"p-{i}-type") or "string"
        param: dict[str, Any] = {"name": name, "location": post.get(f"p-{i}-location") or "query", "type": kind,
                                 "required": post.get(f"p-{i}-required") == "on",
                                 "mode": "fixed" if post.get(f"p-{i}-mode") == "fixed" else "ai",
                                 "description": (post.get(f"p-{i}-description") or "").strip()}
        value = post.get(f"p-{i}-value") or ""
        if param["mode"] == "fixed":
            param["value"] = _typed(kind, value) if value != "" else None
        params.append(param)
    return params


def warnings_from_post(post: Any) -> list[dict[str, str]]:
    return [{"level": post.get(f"w-{i}-level") or "warning", "text": (post.get(f"w-{i}-text") or "").strip()}
            for i in _rows(post, "w") if (post.get(f"w-{i}-text") or "").strip()]


def definition_from_post(post: Any) -> dict[str, Any]:
    """The definition dict the API takes (POST /api/v1/tools), built from the form's fields."""
    family = post.get("auth_family") or "none"
    auth: dict[str, Any] = {"family": family}
    for key in ("header_name", "prefix", "query_name", "signature_header", "timestamp_header", "jwt_algorithm"):
        if f"auth_{key}" in post:
            auth[key] = post.get(f"auth_{key}")
    if "auth_prefix" in post:
        auth["prefix"] = post.get("auth_prefix")  # "Bearer " keeps its trailing space
    definition: dict[str, Any] = {
        "name": (post.get("name") or "").strip(), "alias": (post.get("alias") or "").strip(),
        "description": (post.get("description") or "").strip(), "usage_notes": (post.get("usage_notes") or "").strip(),
        "method": post.get("method") or "GET", "url": (post.get("url") or "").strip(),
        "parameters": parameters_from_post(post), "auth": auth,
        "tags": [t.strip().lower() for t in (post.get("tags") or "").split(",") if t.strip()],
    }
    timeout = (post.get("timeout_secs") or "").strip()
    if timeout:
        definition["timeout_secs"] = _typed("number", timeout)
    return definition


def _form_of(tool: CustomTool | None) -> dict[str, Any]:
    if tool is None:
        return {"method": "GET", "url": "", "parameters": [], "auth": {"family": "none"}, "tags": [], "warnings": [],
                "credential_id": ""}
    return {"name": tool.name, "alias": tool.alias, "description": tool.description, "usage_notes": tool.usage_notes,
            "method": tool.method, "url": tool.url, "parameters": tool.parameters, "auth": tool.auth or {},
            "tags": tool.tags, "timeout_secs": tool.timeout_secs, "warnings": tool.warnings,
            "credential_id": str(tool.credential_id or "")}


def _form_from_post(post: Any) -> dict[str, Any]:
    definition = definition_from_post(post)
    for param in definition["parameters"]:
        if param.get("mode") == "fixed" and not isinstance(param.get("value"), str) and param.get("value") is not None:
            param["value"] = json.dumps(param["value"]) if param["type"] == "array" else str(param["value"]).lower() \
                if isinstance(param["value"], bool) else str(param["value"])
    return {**definition, "timeout_secs": post.get("timeout_secs") or "", "warnings": warnings_from_post(post),
            "credential_id": post.get("credential_id") or ""}


def _form_context(actor: Actor, form: dict[str, Any]) -> dict[str, Any]:
    auth = {"header_name": "Authorization", "prefix": "Bearer ", "query_name": "api_key",
            "signature_header": "X-Signature", "timestamp_header": "X-Timestamp", "jwt_algorithm": "HS256",
            **(form.get("auth") or {})}
    params = [*form.get("parameters", []), *[{} for _ in range(BLANK_PARAM_ROWS)]]
    for param in params:
        value = param.get("value")
        param["shown_value"] = "" if value is None else (json.dumps(value) if isinstance(value, list) else
                                                         str(value).lower() if isinstance(value, bool) else str(value))
    return {
        "form": form, "auth": auth, "params": params,
        "warning_rows": [*form.get("warnings", []), *[{} for _ in range(BLANK_WARNING_ROWS)]],
        "tags_text": ", ".join(form.get("tags") or []), "url_html": highlighted_url(form.get("url") or ""),
        "secrets": secrets_for(actor), "locations": LOCATIONS, "param_types": PARAM_TYPES, "methods": METHODS,
        "auth_families": AUTH_FAMILIES, "warning_levels": WARNING_LEVELS,
    }


def _editor(request: HttpRequest, actor: Actor, tool: CustomTool | None, form: dict[str, Any], *,
            status: int = 200, **extra: Any) -> HttpResponse:
    context = {"nav": "tools", "tool": tool, "can_edit": actor.has(WRITE), "errors": {}, "test": None,
               **_form_context(actor, form), **extra}
    if tool is not None:
        tried = (context["test"] or {}).get("args") or {}
        context["test_params"] = [{**p, "arg": arg_name_of(p), "tried": tried.get(arg_name_of(p), "")}
                                  for p in (tool.parameters or []) if p.get("mode", "ai") == "ai"]
        context["group"] = group_of(tool)
    return screen(request, "console/tools/edit.html", context, status=status)


def arg_name_of(param: dict[str, Any]) -> str:
    from capabilities.custom_tools.schema import Param

    return arg_name(Param.model_construct(**param))


def _credential(post: Any) -> str | None:
    return post.get("credential_id") or None


@console_view(READ)
def tool_new(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method != "POST":
        actor.require(WRITE)
        return _editor(request, actor, None, _form_of(None))
    actor.require(WRITE)
    try:
        tool = services.create_tool(actor=with_ip(actor, request), definition=definition_from_post(request.POST),
                                    credential_id=_credential(request.POST),
                                    warnings=warnings_from_post(request.POST))
    except (Invalid, Conflict, Forbidden) as exc:
        return _editor(request, actor, None, _form_from_post(request.POST),
                       status=403 if isinstance(exc, Forbidden) else 422, errors=form_errors(exc))
    messages.success(request, _("The tool %(name)s was created. Try it with Test.") % {"name": tool.name})
    return redirect(reverse("console-tools:edit", args=[tool.pk]))


def _tool(actor: Actor, pk: Any) -> CustomTool:
    return org_get(actor, CustomTool, pk, queryset=org_queryset(actor, CustomTool).select_related("credential"))


@console_view(READ)
def tool_edit(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    tool = _tool(actor, pk)
    if request.method != "POST":
        return _editor(request, actor, tool, _form_of(tool))
    actor.require(WRITE)
    changes = {**definition_from_post(request.POST), "warnings": warnings_from_post(request.POST)}
    if actor.has("secrets:view"):  # someone who cannot see the vault keeps the tool's credential as it is
        changes["credential_id"] = _credential(request.POST)
    try:
        tool = services.update_tool(actor=with_ip(actor, request), tool=tool, changes=changes)
    except (Invalid, Conflict, Forbidden) as exc:
        return _editor(request, actor, tool, _form_from_post(request.POST),
                       status=403 if isinstance(exc, Forbidden) else 422, errors=form_errors(exc))
    messages.success(request, _("Saved."))
    return redirect(reverse("console-tools:edit", args=[tool.pk]))


def args_from_post(tool: CustomTool, post: Any) -> dict[str, Any]:
    args = {}
    for param in tool.parameters or []:
        if param.get("mode", "ai") != "ai":
            continue
        name = arg_name_of(param)
        text = (post.get(f"arg.{name}") or "").strip()
        if text:
            args[name] = _typed(param.get("type", "string"), text)
    return args


@require_POST
@console_view(WRITE)
def tool_test(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """A real call to the tool's URL with its credential injected; the page shows the compact preview."""
    tool = _tool(actor, pk)
    args = args_from_post(tool, request.POST)
    result = services.test_tool(actor=with_ip(actor, request), tool=tool, args=args)
    return _editor(request, actor, tool, _form_of(tool), test={**result, "args": args})


@require_POST
@console_view(WRITE)
def tool_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    tool = _tool(actor, pk)
    services.delete_tool(actor=with_ip(actor, request), tool=tool)
    messages.success(request, _("The tool %(name)s was deleted.") % {"name": tool.name})
    return redirect(reverse("console-tools:list"))


# ------------------------------------------------------------------ the AI tool builder


@console_view(READ)
def ai_sessions(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method == "POST":
        actor.require(WRITE)
        session = services.create_session(actor=actor, title=(request.POST.get("title") or "").strip())
        return redirect(reverse("console-tools:ai-session", args=[session.pk]))
    sessions = list(org_queryset(actor, ToolBuilderSession).order_by("-created_at")[:100])
    return screen(request, "console/tools/ai_sessions.html",
                  {"nav": "tools", "sessions": sessions, "can_edit": actor.has(WRITE)})


def _session(actor: Actor, pk: Any) -> ToolBuilderSession:
    return org_get(actor, ToolBuilderSession, pk)


def _transcript(session: ToolBuilderSession) -> tuple[list[Any], bool]:
    """The conversation's messages in order, and whether a turn is still running (the page then refreshes)."""
    from agents.models import Message, Run, RunStatus

    if session.conversation_id is None:
        return [], False
    # Whether a turn runs is read before the messages: a run ends with its answer in the same statement, so a
    # turn found ended has its answer in the messages read next. Read the other way round, a turn ending
    # between the two reads drew the page with neither the answer nor a refresh to bring it (seen in fc25).
    busy = Run.objects.filter(conversation_id=session.conversation_id,
                              status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).exists()
    rows = list(Message.objects.filter(conversation_id=session.conversation_id).order_by("created_at")
                .only("role", "content", "created_at", "author_label"))
    return rows, busy


def _session_page(request: HttpRequest, actor: Actor, session: ToolBuilderSession, *, status: int = 200,
                  **extra: Any) -> HttpResponse:
    kits = list(org_queryset(actor, ToolKit).filter(session=session).select_related("credential")
                .defer("credential__wrapped_key", "credential__ciphertext").prefetch_related("drafts")
                .order_by("created_at"))
    transcript, busy = _transcript(session)
    from agents import tool_builder as builder

    chosen = builder.session_model(session) or builder.default_model(actor.organization)
    context = {"nav": "tools", "session": session, "kits": kits, "transcript": transcript, "busy": busy,
               "model_profiles": list(builder.chat_models(actor.organization)),
               "chosen_model": str(chosen.pk) if chosen is not None else "",
               "can_edit": actor.has(WRITE), "can_run": actor.has(WRITE) and actor.has("agents:run"),
               "secrets": secrets_for(actor), "errors": {}, "field_errors": {}, **extra}
    return screen(request, "console/tools/ai_session.html", context, status=status)


@console_view(READ)
def ai_session(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    return _session_page(request, actor, _session(actor, pk))


@post_form("console-tools:ai-session")
@console_view(WRITE)
def ai_say(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """One turn of the builder conversation (the same `builder.say` as POST …/sessions/{id}/messages), on the
    chat model the person chose."""
    from agents import tool_builder as builder

    actor.require("agents:run")
    session = _session(actor, pk)
    prompt = (request.POST.get("prompt") or "").strip()
    if not prompt:
        return _session_page(request, actor, session, status=422, field_errors={"prompt": _("Say what to build.")})
    try:
        builder.say(actor=actor, session=session, prompt=prompt,
                    model_profile_id=request.POST.get("model_profile_id") or None)
    except Invalid as exc:
        # Those of the chosen model and the message at their fields, the rest (a publish problem of the tool
        # builder on that model) in the notice above: none dropped, none twice.
        found = form_errors(exc)
        return _session_page(request, actor, session, status=422, field_errors=found, errors=found, prompt=prompt)
    return redirect(reverse("console-tools:ai-session", args=[session.pk]) + "#transcript")


@require_POST
@console_view(WRITE)
def ai_restart(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    session = _session(actor, pk)
    services.restart_session(actor=actor, session=session)
    messages.success(request, _("Started over: kits not yet finalized were dropped; created tools stay."))
    return redirect(reverse("console-tools:ai-session", args=[session.pk]))


@require_POST
@console_view(WRITE)
def ai_kit(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """Start a kit by hand: one provider + one credential (what the builder's start_kit does)."""
    session = _session(actor, pk)
    try:
        services.create_kit(actor=actor, session=session, name=request.POST.get("name") or "",
                            provider=request.POST.get("provider") or "",
                            credential_id=request.POST.get("credential_id") or None)
    except (Invalid, Conflict) as exc:
        return _session_page(request, actor, session, status=422, errors=form_errors(exc))
    return redirect(reverse("console-tools:ai-session", args=[session.pk]) + "#kits")


def _kit(actor: Actor, pk: Any) -> ToolKit:
    return org_get(actor, ToolKit, pk, queryset=org_queryset(actor, ToolKit).select_related("session"))


@require_POST
@console_view(WRITE)
def ai_finalize(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    kit = _kit(actor, pk)
    try:
        created = services.finalize_kit(actor=actor, kit=kit)
    except (Invalid, Conflict) as exc:
        details = exc.details if isinstance(exc.details, dict) else {}
        names = details.get("not_validated") or details.get("needs_warning") or []
        return _session_page(request, actor, kit.session, status=409,
                             errors={"kit": exc.message + (f" ({', '.join(names)})" if names else "")})
    messages.success(request, _("Created %(n)s tool(s) from the kit %(kit)s.") % {"n": len(created), "kit": kit.name})
    return redirect(reverse("console-tools:list"))


@require_POST
@console_view(WRITE)
def ai_draft_test(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """Test a configured draft again for real (the builder's test_drafts, for one draft)."""
    draft: ToolDraft = services.get_draft(actor, pk)
    args_text = (request.POST.get("args") or "").strip()
    try:
        args = json.loads(args_text) if args_text else (draft.test_args or {})
        if not isinstance(args, dict):
            raise Invalid(_("The arguments must be a JSON object."))
        services.test_draft(actor=actor, draft=draft, args=args)
    except ValueError:
        return _session_page(request, actor, draft.kit.session, status=422,
                             errors={"args": _("The arguments must be a JSON object.")})
    except (Invalid, Conflict) as exc:
        return _session_page(request, actor, draft.kit.session, status=422, errors=form_errors(exc))
    return redirect(reverse("console-tools:ai-session", args=[draft.kit.session_id]) + f"#draft-{draft.pk}")
