"""Channels: the organization's Slack, Telegram and Mattermost bots, and a binding's full settings.

Thin views over `channelbots.services`, with the API's rules: changing a bot needs `bots:manage`, and a bot that
answers as an agent also needs edit access to that agent (channelbots/api.py `changeable_bot`); a binding is
read with view access to its agent and changed with edit access. Everyone in the organization sees the page
read-only; nothing on it ever carries a credential, only whether one is stored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset, sees_deployment_settings
from agents.models import Agent, Environment
from channelbots import services
from channelbots.api import webhook_url
from channelbots.models import (
    AccessMode,
    Binding,
    BotCredential,
    ChannelBot,
    ConnectionState,
    FooterMode,
    Platform,
    Transport,
)
from console.base import console_view, problems_by_field, screen
from governance.grants import EDIT, VIEW, at_least, require_agent_access, visible_agents

BOT_ACTIONS = ("pause", "resume", "delete", "register-webhook", "use-polling")

# The bot scopes the manifest asks for, each with what needs it (shown under the manifest). Two are not Web API
# methods: files:read downloads url_private_download, app_mentions:read delivers the app_mention event.
SLACK_SCOPES: tuple[tuple[str, str], ...] = (
    ("chat:write", "chat.postMessage, chat.update, chat.postEphemeral"),
    ("files:write", "files.getUploadURLExternal / completeUploadExternal (a chart or file the agent sends)"),
    ("files:read", "url_private_download of a file someone posted"),
    ("app_mentions:read", "the app_mention event"),
    ("users:read", "users.info (member ids into people)"),
    ("channels:read", "conversations.info / .list / .members in public channels"),
    ("groups:read", "conversations.info / .members in private channels"),
    ("channels:history", "message.channels events and conversations.history / .replies"),
    ("groups:history", "message.groups events and history in private channels"),
    ("im:history", "message.im events (direct messages)"),
    ("mpim:history", "message.mpim events (group direct messages)"),
    ("im:read", "conversations.members in a direct message (the membership check)"),
    ("mpim:read", "conversations.members in a group direct message"),
)
SLACK_EVENTS = ("app_mention", "message.channels", "message.groups", "message.im", "message.mpim")
_HISTORY = ("channels:history", "groups:history", "im:history", "mpim:history")
# Each Web API method the Slack adapter calls with the bot token, and the bot scopes it needs. A test reads the
# adapter's source for the methods it calls: a new call without its entry here, or an entry whose scope the
# manifest lacks, fails there — so the manifest keeps asking for what the adapter really uses.
SLACK_METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "auth.test": (),
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "files_upload_v2": ("files:write",),
    "conversations.info": ("channels:read", "groups:read"),
    "conversations.list": ("channels:read", "groups:read"),
    "conversations.members": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.history": _HISTORY,
    "conversations.replies": _HISTORY,
    "users.info": ("users:read",),
}

# What each client really renders, for a new binding's extra prompt (spec: "Una nueva se abre con lo que ese
# cliente renderiza de verdad"). From then on it is the binding's own text.
STARTER_TEXT = {
    Platform.SLACK: (
        "You are answering in Slack. Slack does not render Markdown: write *bold* with single asterisks, "
        "_italic_ with underscores, `code` and ```blocks```, bullet lists with •. No headings and no tables. "
        "Write a link as <https://example.com|the text>. When a reply points to an action or a destination, "
        "start that line with an emoji (👉, 📄, ✅)."
    ),
    Platform.MATTERMOST: (
        "You are answering in Mattermost. It renders Markdown: headings, **bold**, tables, fenced code and "
        "lists are fine. Write a link as [the text](https://example.com). When a reply points to an action or "
        "a destination, start that line with an emoji (👉, 📄, ✅)."
    ),
    Platform.TELEGRAM: (
        "You are answering in Telegram. Keep formatting simple: Telegram refuses a message with an unclosed * "
        "or _, so use plain text with short paragraphs, and a bare URL for a link (https://example.com). When a "
        "reply points to an action or a destination, start that line with an emoji (👉, 📄, ✅)."
    ),
}
PLACEHOLDER_HELP = {
    "channel_name": "get_channel_info",
    "channel_purpose": "get_channel_info",
    "channel_topic": "get_channel_info",
    "member_count": "get_channel_info",
    "member_list": "list_channel_members",
}


def _ip(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR")


# ------------------------------------------------------------------ reads


def _visible_agent_ids(actor: Actor, bots: list[ChannelBot]) -> set[Any]:
    """Which of the agents behind these bots the actor may see (one query). Everyone in the organization sees
    the bots; the agent a bot answers as is named only to those who can see that agent — a private agent's
    name is not the business of a viewer who happens to open Channels."""
    agent_ids = {bot.binding.agent_id for bot in bots if _binding_of(bot) is not None}
    if not agent_ids:
        return set()
    return set(visible_agents(actor).filter(pk__in=agent_ids).values_list("pk", flat=True))


def _binding_of(bot: ChannelBot) -> Binding | None:
    try:
        return bot.binding
    except Binding.DoesNotExist:
        return None


def _bots(actor: Actor) -> list[ChannelBot]:
    bots = list(org_queryset(actor, ChannelBot).select_related("binding__agent").order_by("name", "id"))
    kinds: dict[Any, set[str]] = {}
    for bot_id, kind in BotCredential.objects.filter(bot__in=bots).values_list("bot_id", "kind"):
        kinds.setdefault(bot_id, set()).add(kind)
    visible = _visible_agent_ids(actor, bots)
    for bot in bots:
        have = kinds.get(bot.pk, set())
        bot.flags = {name: kind in have for name, kind in services.CREDENTIAL_FIELDS.items()}  # type: ignore[attr-defined]
        _decorate(bot, visible)
    return bots


def _decorate(bot: ChannelBot, visible_agent_ids: set[Any]) -> None:
    bot.bound = _binding_of(bot)  # type: ignore[attr-defined]
    # Bound to an agent this person cannot see: say that it answers, never as whom.
    bot.bound_hidden = bot.bound is not None and bot.bound.agent_id not in visible_agent_ids  # type: ignore[attr-defined]
    bot.events_url = webhook_url(bot)  # type: ignore[attr-defined]
    bot.interactions_url = (  # type: ignore[attr-defined]
        f"{settings.FRONTEND_URL.rstrip('/')}/api/v1/slack/{bot.pk}/interactions" if bot.platform == Platform.SLACK
        else "")
    bot.not_started = bot.connection_state in (ConnectionState.NOT_STARTED, ConnectionState.RETRYING)  # type: ignore[attr-defined]
    flags = getattr(bot, "flags", None) or {}
    warning = ""
    if bot.platform == Platform.SLACK and bot.transport == Transport.WEBHOOK and not flags.get("signing_secret"):
        warning = _("No signing secret: the Events URL answers 500 to everything, Slack's challenge included.")
    elif bot.platform == Platform.SLACK and bot.transport == Transport.POLLING and not flags.get("app_token"):
        warning = _("Socket Mode needs the app-level token (xapp-…): until it is stored the bot is not started.")
    elif bot.platform == Platform.MATTERMOST and bot.transport == Transport.WEBHOOK and not flags.get("webhook_secret"):
        warning = _("No outgoing-webhook token: every webhook call is refused.")
    bot.warning = warning  # type: ignore[attr-defined]


def _bot(actor: Actor, bot_id: Any) -> ChannelBot:
    bot = org_get(actor, ChannelBot, bot_id,
                  queryset=org_queryset(actor, ChannelBot).select_related("binding__agent"))
    bot.flags = {name: False for name in services.CREDENTIAL_FIELDS}  # type: ignore[attr-defined]
    for kind in BotCredential.objects.filter(bot=bot).values_list("kind", flat=True):
        for name, k in services.CREDENTIAL_FIELDS.items():
            if k == kind:
                bot.flags[name] = True  # type: ignore[attr-defined]
    _decorate(bot, _visible_agent_ids(actor, [bot]))
    return bot


def _changeable(actor: Actor, bot: ChannelBot) -> ChannelBot:
    """As the API's `changeable_bot`: a bound bot is part of its agent's exposure, so changing it needs edit
    access to that agent as well as `bots:manage`."""
    actor.require("bots:manage")
    try:
        agent = bot.binding.agent
    except Binding.DoesNotExist:
        return bot
    try:
        require_agent_access(actor, agent, EDIT)
    except NotFound:
        raise Forbidden(_("This bot answers as an agent you cannot edit.")) from None
    return bot


def slack_manifest(bot: ChannelBot | None, *, socket_mode: bool) -> str:
    """The app manifest (YAML) for api.slack.com → App Manifest: the scopes and events above, the Messages
    tab, token rotation off, and for the Events API this deployment's Request URLs for this bot."""
    name = (bot.name if bot else "AgenticOS")[:35]
    lines = [
        "display_information:",
        f"  name: {json.dumps(name)}",
        "features:",
        "  bot_user:",
        f"    display_name: {json.dumps(name)}",
        "    always_online: true",
        "  app_home:",
        "    messages_tab_enabled: true",
        "    messages_tab_read_only_enabled: false",
        "oauth_config:",
        "  scopes:",
        "    bot:",
        *[f"      - {scope}" for scope, _why in SLACK_SCOPES],
        "settings:",
        "  event_subscriptions:",
    ]
    if not socket_mode and bot is not None:
        lines.append(f"    request_url: {webhook_url(bot)}")
    lines += ["    bot_events:", *[f"      - {event}" for event in SLACK_EVENTS]]
    if not socket_mode and bot is not None:
        lines += ["  interactivity:", "    is_enabled: true",
                  f"    request_url: {settings.FRONTEND_URL.rstrip('/')}/api/v1/slack/{bot.pk}/interactions"]
    else:
        lines += ["  interactivity:", "    is_enabled: true"]
    lines += [f"  socket_mode_enabled: {'true' if socket_mode else 'false'}", "  token_rotation_enabled: false"]
    return "\n".join(lines) + "\n"


def private_hosts(actor: Actor) -> dict[str, Any]:
    """The operator's choice about bots' servers on private addresses (CHANNEL_ALLOWED_PRIVATE_HOSTS), for the
    server-address field: the setting's name and entries only to those who may see deployment settings."""
    return {"show_setting": sees_deployment_settings(actor),
            "names": list(getattr(settings, "CHANNEL_ALLOWED_PRIVATE_HOSTS", []))}


def _page_context(actor: Actor, **extra: Any) -> dict[str, Any]:
    return {
        "nav": "channels",
        "bots": _bots(actor),
        "can_manage": actor.has("bots:manage"),
        "platforms": Platform.choices,
        "stt_choices": _stt_choices(),
        "stt_keys": _stt_keys(actor),
        "modes": AccessMode.choices,
        "socket_manifest": slack_manifest(None, socket_mode=True),
        "slack_scopes": SLACK_SCOPES,
        "slack_events": SLACK_EVENTS,
        "private_hosts": private_hosts(actor),
        "form": {},
        "errors": {},
        **extra,
    }


def _stt_choices() -> list[tuple[str, str]]:
    """Each voice-note model under its provider's name as people know it ("OpenAI · whisper-1"), not its id."""
    return [(f"{p}:{m}", f"{entry['label']} · {m}") for p, entry in services.STT_CATALOG.items()
            for m in entry["models"]]


# ------------------------------------------------------------------ forms


def _stt_keys(actor: Actor) -> list[tuple[str, str]]:
    """The organization's model profiles whose key can pay for a voice note, for the picker (the service checks
    the one chosen serves the chosen provider)."""
    seen: dict[str, str] = {}
    for provider in services.STT_CATALOG:
        for profile in services.stt_profiles(actor.organization.pk, provider):
            seen.setdefault(str(profile.pk), profile.label)
    return sorted(seen.items(), key=lambda item: item[1].lower())


def _stt(post: Any) -> dict[str, str | None]:
    choice = post.get("stt", "")
    provider, _sep, model = choice.partition(":")
    return {"stt_provider": provider, "stt_model": model, "stt_profile_id": post.get("stt_key") or None}


def _policy(post: Any) -> dict[str, Any]:
    raw_rpm = (post.get("rate_limit_rpm") or "").strip()
    if raw_rpm and not digits_only(raw_rpm):
        raise Invalid(_("The rate limit is a whole number of messages per minute."),
                      details={"field": "access_policy.rate_limit_rpm"})
    return {
        "mode": post.get("mode", AccessMode.OPEN),
        "whitelist": [line.strip() for line in post.get("whitelist", "").splitlines() if line.strip()],
        "allowed_groups": [line.strip() for line in post.get("allowed_groups", "").splitlines() if line.strip()],
        "require_link": post.get("require_link") == "on",
        "rate_limit_rpm": int(raw_rpm) if raw_rpm else 10,
        "denied_message": post.get("denied_message", ""),
    }


def _bot_data(post: Any, *, creating: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"name": post.get("name", "").strip(), "api_base_url": post.get("api_base_url", "").strip()}
    if creating:
        data["platform"] = post.get("platform", "")
        data["transport"] = post.get("transport", Transport.WEBHOOK)
    # The pencil: a credential field left empty keeps what is stored (the service skips empty values).
    for name in services.CREDENTIAL_FIELDS:
        value = post.get(name, "")
        if value:
            data[name] = value
    data.update(_stt(post))
    if "mode" in post:
        data["access_policy"] = _policy(post)
    return data


def _errors(exc: Invalid | Conflict | Forbidden) -> dict[str, str]:
    return problems_by_field(exc) or {"all": exc.message}


def _safe_form(post: Any) -> dict[str, str]:
    """What to put back into a refused form: never a credential someone typed."""
    return {k: v for k, v in post.items() if k not in services.CREDENTIAL_FIELDS and k != "csrfmiddlewaretoken"}


# ------------------------------------------------------------------ views


@console_view()
def channel_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method != "POST":
        return screen(request, "console/channels/list.html", _page_context(actor))
    actor.require("bots:manage")
    try:
        bot = services.create_bot(actor=actor, data=_bot_data(request.POST, creating=True), ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        return screen(request, "console/channels/list.html",
                      _page_context(actor, form=_safe_form(request.POST), errors=_errors(exc)), status=422)
    messages.success(request, _("The bot %(name)s was added.") % {"name": bot.name})
    if bot.platform == Platform.TELEGRAM and bot.transport == Transport.WEBHOOK:
        # Its secret was minted just now and Telegram learns it only from setWebhook: until then every call
        # to the webhook is refused, so the next step is the button.
        messages.warning(request, _("Next: Register the webhook. Until then Telegram's calls are refused."))
    return redirect(reverse("console-channels:bot", args=[bot.pk]))


def _bot_page(request: HttpRequest, actor: Actor, bot: ChannelBot, *, status: int = 200, **extra: Any) -> HttpResponse:
    can_change = actor.has("bots:manage")
    if can_change:
        try:
            _changeable(actor, bot)
        except Forbidden:
            can_change = False
    context = {
        "nav": "channels",
        "bot": bot,
        "can_change": can_change,
        "stt_choices": _stt_choices(),
        "stt_current": f"{bot.stt_provider}:{bot.stt_model}" if bot.stt_provider else "",
        "stt_keys": _stt_keys(actor),
        "stt_key_current": str(bot.stt_profile_id or ""),
        "modes": AccessMode.choices,
        "policy": bot.policy,
        "credentials": [{"name": name, "stored": bot.flags[name]}  # type: ignore[attr-defined]
                        for name in services.PLATFORM_CREDENTIALS[Platform(bot.platform)]],
        "manifest": slack_manifest(bot, socket_mode=bot.transport == Transport.POLLING)
        if bot.platform == Platform.SLACK else "",
        "private_hosts": private_hosts(actor),
        "slack_scopes": SLACK_SCOPES,
        "slack_events": SLACK_EVENTS,
        "errors": {},
        **extra,
    }
    return screen(request, "console/channels/bot.html", context, status=status)


@console_view()
def bot_detail(request: HttpRequest, actor: Actor, bot_id: Any) -> HttpResponse:
    bot = _bot(actor, bot_id)
    if request.method != "POST":
        return _bot_page(request, actor, bot)
    _changeable(actor, bot)
    try:
        services.update_bot(actor=actor, bot=bot, data=_bot_data(request.POST, creating=False), ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        return _bot_page(request, actor, _bot(actor, bot_id), status=422, errors=_errors(exc))
    messages.success(request, _("Saved."))
    return redirect(reverse("console-channels:bot", args=[bot.pk]))


@require_POST
@console_view("bots:manage")
def bot_action(request: HttpRequest, actor: Actor, bot_id: Any, action: str) -> HttpResponse:
    bot = _bot(actor, bot_id)
    if action not in BOT_ACTIONS:
        raise NotFound(_("Unknown action."))
    _changeable(actor, bot)
    back = redirect(reverse("console-channels:bot", args=[bot.pk]))
    if action == "delete":
        services.delete_bot(actor=actor, bot=bot, ip_address=_ip(request))
        messages.success(request, _("The bot %(name)s was deleted.") % {"name": bot.name})
        return redirect(reverse("console-channels:list"))
    if action in ("pause", "resume"):
        services.set_paused(actor=actor, bot=bot, paused=action == "pause", ip_address=_ip(request))
        messages.success(request, _("Paused: the bot answers nothing.") if action == "pause"
                         else _("The bot answers again."))
        return back
    if action == "use-polling":
        services.set_transport(actor=actor, bot=bot, transport=Transport.POLLING, ip_address=_ip(request))
        messages.success(request, _("The bot now keeps its own connection open."))
        return back
    try:
        url = services.register_webhook(actor=actor, bot=bot, ip_address=_ip(request))
    except Invalid as exc:
        return _bot_page(request, actor, _bot(actor, bot_id), status=422, errors={"webhook": exc.message})
    if bot.platform == Platform.TELEGRAM:
        messages.success(request, _("Telegram webhook registered: %(url)s") % {"url": url})
    else:
        messages.success(request, _("Webhook mode: paste %(url)s into %(platform)s.") % {
            "url": url, "platform": bot.get_platform_display()})
    return back


# ------------------------------------------------------------------ a binding's settings


# pydantic-ai wraps a docstring's parts in tags so the model can tell the summary from the shape of the answer;
# a person reads the same words without them.
_DOC_MARKUP = re.compile(r"</?(summary|description)>")


def _readable(description: str) -> str:
    text = _DOC_MARKUP.sub("", description).replace("<returns>", "\n").replace("</returns>", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def tool_descriptions(platform: str) -> list[dict[str, Any]]:
    """The channel tools this platform can answer, each with the description the model reads: the tool
    definitions of the very toolset the capability builds (capabilities.channel_tools), markup aside."""
    from capabilities.base import function_toolset
    from capabilities.channel_tools.capability import FUNCTIONS

    allowed = services.TELEGRAM_CHANNEL_TOOLS if platform == Platform.TELEGRAM else services.CHANNEL_TOOL_IDS
    tools = function_toolset([FUNCTIONS[tool_id] for tool_id in allowed]).tools
    found = []
    for tool_id in allowed:
        tool = tools[tool_id]
        properties = tool.function_schema.json_schema.get("properties") or {}
        found.append({
            "id": tool_id,
            "description": _readable(tool.description or ""),
            "parameters": [{"name": name, "description": spec.get("description", "")}
                           for name, spec in properties.items()],
        })
    return found


def sandbox_scope(binding: Binding) -> str | None:
    """Who shares the workspace according to the version this binding serves (the sandbox's session_scope),
    or None when that version keeps no files — then there is nothing for the binding to override."""
    from capabilities.sandbox.capability import SandboxConfig

    env = Environment.objects.filter(agent_id=binding.agent_id, name=binding.environment).select_related(
        "version").first()
    for cap in (env.version.spec.get("capabilities") or []) if env else []:
        if isinstance(cap, dict) and cap.get("id") == "sandbox" and cap.get("enabled", True) is not False:
            return str((cap.get("config") or {}).get("session_scope")
                       or SandboxConfig.model_fields["session_scope"].default)
    return None


def _binding(actor: Actor, agent_id: Any, binding_id: Any, level: str) -> tuple[Agent, str, Binding]:
    agent = org_get(actor, Agent, agent_id)
    have = require_agent_access(actor, agent, level)
    rows = org_queryset(actor, Binding).filter(agent=agent).select_related("bot", "agent")
    return agent, have, org_get(actor, Binding, binding_id, queryset=rows)


def _binding_data(post: Any) -> dict[str, Any]:
    def number(field: str) -> int:
        raw = (post.get(field) or "").strip()
        if not digits_only(raw):
            raise Invalid(_("Enter a whole number."), details={"field": field})
        return int(raw)

    data = {
        "environment": post.get("environment", "production"),
        "extra_prompt": post.get("extra_prompt", ""),
        "channel_tools": post.getlist("channel_tools"),
        "channel_tools_limit": number("channel_tools_limit"),
        "footer_mode": post.get("footer_mode", FooterMode.NEAR_LIMIT),
        "footer_every_n": number("footer_every_n"),
    }
    # The scope control is only on the page for an agent that keeps files: absent, the stored value stays.
    if "workspace_scope" in post:
        data["workspace_scope"] = post["workspace_scope"]
    if "footer_threshold_percent" in post:
        data["footer_threshold_percent"] = number("footer_threshold_percent")
    return data


def _binding_page(request: HttpRequest, actor: Actor, agent: Agent, level: str, binding: Binding, *,
                  status: int = 200, **extra: Any) -> HttpResponse:
    bot = _bot(actor, binding.bot_id)
    platform = bot.platform
    placeholders = [{"name": name, "tool": tool} for name, tool in PLACEHOLDER_HELP.items()]
    descriptions = {t["id"]: t["description"] for t in tool_descriptions(Platform.SLACK)}
    for item in placeholders:
        item["description"] = descriptions.get(item["tool"], "")
    # A binding nobody has saved yet: its extra prompt opens with what this platform renders.
    from agenticos.models import AuditEvent

    fresh = not binding.extra_prompt and not AuditEvent.objects.filter(
        organization=actor.organization, action="channelbinding.update", target_id=str(binding.pk)).exists()
    context = {
        "nav": "channels",
        "agent": agent,
        "binding": binding,
        "bot": bot,
        "can_edit": at_least(level, EDIT) and actor.has("bots:manage"),
        "environments": list(Environment.objects.filter(agent=agent).order_by("name")),
        "tools": tool_descriptions(platform),
        "placeholders": placeholders,
        "starter": STARTER_TEXT[Platform(platform)],
        "extra_prompt": STARTER_TEXT[Platform(platform)] if fresh else binding.extra_prompt,
        "fresh": fresh,
        "scopes": services.WORKSPACE_SCOPES,
        # The control shows for an agent that keeps files, or to clear a value stored before it stopped.
        "spec_scope": sandbox_scope(binding),
        "footer_modes": FooterMode.choices,
        "modes": AccessMode.choices,
        "policy": bot.policy,
        "tools_max": services.CHANNEL_TOOLS_MAX_LIMIT,
        "errors": {},
        **extra,
    }
    return screen(request, "console/channels/binding.html", context, status=status)


@console_view("agents:view")
def binding_detail(request: HttpRequest, actor: Actor, agent_id: Any, binding_id: Any) -> HttpResponse:
    agent, level, binding = _binding(actor, agent_id, binding_id, VIEW)
    if request.method != "POST":
        return _binding_page(request, actor, agent, level, binding)
    actor.require("bots:manage")
    require_agent_access(actor, agent, EDIT)
    try:
        data = _binding_data(request.POST)
        from django.db import transaction

        with transaction.atomic():
            services.update_binding(actor=actor, binding=binding, data=data, ip_address=_ip(request))
            if "mode" in request.POST:
                services.update_bot(actor=actor, bot=binding.bot, data={"access_policy": _policy(request.POST)},
                                    ip_address=_ip(request))
    except (Invalid, Conflict) as exc:
        binding.refresh_from_db()
        return _binding_page(request, actor, agent, level, binding, status=422, errors=_errors(exc),
                             extra_prompt=request.POST.get("extra_prompt", ""))
    messages.success(request, _("Binding saved."))
    return redirect(reverse("console-channels:binding", args=[agent.pk, binding.pk]))
