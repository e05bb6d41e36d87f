"""Agents and the Builder: list, New agent, basics, the Toolbox, versions, YAML, availability.

Every change goes through `agents.services` (which checks access with `require_agent_access`); the page
shows the draft's publish problems at the field they belong to, all the time, so nothing waits for a failed
publish to be explained.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset
from agents import services as agent_services
from agents.models import Agent, Environment, ModelProfile
from calls.service import voice_card
from capabilities import registry, spec_checks
from console import selectors
from console.base import console_view, post_form, problems_by_field, screen
from console.rollouts import panel as rollout_panel
from console.schema_forms import config_from_post, fields_for
from console.test_chat import test_chat_state
from governance.grants import EDIT, PUBLISH, at_least, require_agent_access

STARTER_SLUG = "getting-started"
APPROVAL_MODES = ("default", "required", "never")
EMBED_KINDS = (
    ("widget", gettext_lazy("Website widget")),
    ("socket", gettext_lazy("Raw WebSocket")),
    ("page", gettext_lazy("Hosted page")),
)


# ------------------------------------------------------------------ list, new, import


@console_view("agents:view")
def agent_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    return screen(request, "console/agents.html", {"nav": "agents", "rows": selectors.agent_rows(actor),
                                                   "templates": AGENT_TEMPLATES})


def starter_spec(actor: Actor, name: str) -> dict[str, Any]:
    """The starter template: the organization's Getting Started agent when it has one (its instructions,
    skills, platform (custom) tools and budget), exactly the Recommended capabilities — configured as the
    template configures them, else with their defaults — and a chat model profile."""
    from agents.management.commands.platform_bootstrap import starter_capabilities, starter_instructions

    starter = Agent.objects.filter(organization=actor.organization, slug=STARTER_SLUG).only("draft_spec").first()
    template = starter.draft_spec if starter is not None else {}
    profile = (
        ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT)
        .order_by("created_at").values_list("pk", flat=True).first()
    )
    bound = {b["id"]: b for b in template.get("capabilities", []) if isinstance(b, dict)}
    return {
        "name": name,
        "instructions": template.get("instructions") or starter_instructions(),
        "model_profile_id": template.get("model_profile_id") or (str(profile) if profile else None),
        "capabilities": [{**bound.get(cap_id, {}), "id": cap_id, "enabled": True}
                         for cap_id in starter_capabilities()],
        "skill_ids": list(template.get("skill_ids") or []),
        "custom_tool_ids": list(template.get("custom_tool_ids") or []),
        "budget": template.get("budget") or {},
    }


STARTER_SELF = "You are the Getting Started assistant of AgenticOS."

# The New agent choices: (id, label, one line, capabilities bound, instructions with {name}). The starter is
# computed (starter_spec); the others are small, fixed and useful from the first message. Every one binds ask_user
# (spec: on by default in every new agent and every template; the author may switch it off).
AGENT_TEMPLATES: tuple[tuple[str, Any, Any, tuple[str, ...], str], ...] = (
    ("starter", gettext_lazy("Starter"),
     gettext_lazy("The organization's starter: its instructions, the Recommended capabilities and its budget."),
     (), ""),
    ("blank", gettext_lazy("Blank"),
     gettext_lazy("Just a model that can ask the person a question: you write the instructions."), ("ask_user",),
     "You are {name}."),
    ("analyst", gettext_lazy("Data analyst"),
     gettext_lazy("Calculates with code and draws charts from the numbers people give it."),
     ("code_execution", "charts", "ask_user"),
     "You are {name}, a data analyst. Check every figure by calculating it with code, never by guessing; when "
     "numbers compare or change over time, draw a chart. Say which assumptions you made."),
    ("researcher", gettext_lazy("Web researcher"),
     gettext_lazy("Searches the web and reads pages, and answers with the sources it used."),
     ("web_research", "web_fetch", "clock", "ask_user"),
     "You are {name}, a research assistant. Search before you answer anything that may have changed, read the "
     "pages you cite, and end with the list of sources (title and address). Say so when sources disagree."),
)
TEMPLATE_IDS = {t[0] for t in AGENT_TEMPLATES}


def template_spec(actor: Actor, template_id: str, name: str) -> dict[str, Any]:
    """The draft a New agent template makes, named for the agent it creates."""
    if template_id == "starter":
        spec = starter_spec(actor, name)
        # The starter speaks as the platform's Getting Started agent: a new agent is told its own name instead.
        spec["instructions"] = spec["instructions"].replace(STARTER_SELF, f"You are {name}, an assistant on AgenticOS.")
        return spec
    _id, _label, _line, capabilities, instructions = next(t for t in AGENT_TEMPLATES if t[0] == template_id)
    profile = (
        ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT)
        .order_by("created_at").values_list("pk", flat=True).first()
    )
    return {
        "name": name,
        "instructions": instructions.format(name=name),
        "model_profile_id": str(profile) if profile else None,
        "capabilities": [{"id": c.id, "enabled": True} for c in registry.all_capabilities() if c.id in capabilities],
    }


@require_POST
@console_view("agents:edit")
def new_agent(request: HttpRequest, actor: Actor) -> HttpResponse:
    name = (request.POST.get("name") or "").strip() or _("New agent")
    template_id = request.POST.get("template") or "starter"
    if template_id not in TEMPLATE_IDS:
        messages.error(request, _("Choose one of the templates."))
        return redirect("console:agents")
    agent = agent_services.create_agent(actor=actor, name=name, spec=template_spec(actor, template_id, name))
    label = next(t[1] for t in AGENT_TEMPLATES if t[0] == template_id)
    messages.success(request, _("Created %(name)s from the %(template)s template.") % {
        "name": agent.name, "template": label})
    return redirect("console:builder", agent_id=agent.pk)


@post_form("console:agents")
@console_view("agents:edit")
def import_agent(request: HttpRequest, actor: Actor) -> HttpResponse:
    try:
        agent = agent_services.import_agent_yaml(actor=actor, text=_uploaded_yaml(request))
    except Invalid as exc:
        errors = problems_by_field(exc) or {"yaml": exc.message}
        return screen(request, "console/agents.html", {
            "nav": "agents", "rows": selectors.agent_rows(actor), "import_errors": errors,
            "templates": AGENT_TEMPLATES}, status=422)
    messages.success(request, _("Imported %(name)s.") % {"name": agent.name})
    return redirect("console:builder", agent_id=agent.pk)


def _uploaded_yaml(request: HttpRequest) -> str:
    upload = request.FILES.get("file")
    if upload is not None:
        return upload.read(512_000).decode("utf-8", errors="replace")
    return request.POST.get("yaml", "")


# ------------------------------------------------------------------ the Builder page


def _agent(actor: Actor, agent_id: Any) -> tuple[Agent, str]:
    agent = org_get(actor, Agent, agent_id)
    return agent, require_agent_access(actor, agent, "view")


# Settings named for people. A config field without a title of its own gets pydantic's, made from its name
# ("Include Execute", "Timeout Secs"); these say what the setting does. A title a capability wrote wins.
PEOPLE_LABELS: dict[str, str] = {
    "timezone": "Time zone", "effort": "Effort", "timeout_secs": "Time limit (seconds)",
    "max_memory_mb": "Memory limit (MB)", "enable_subtasks": "Let the plan have subtasks",
    "cache_ttl": "Keep the plan cached for (seconds)", "tool_ids": "Custom tools",
    "tool_approval": "Approval per tool", "spill_over_chars": "Longest result kept in the reply (characters)",
    "connection_ids": "Database connections", "connections": "MCP servers", "strategy": "How to choose",
    "max_results": "Most results", "action": "When a result is too long", "threshold": "Size that counts as long",
    "over_tokens": "Long above (tokens)", "max_chars": "Longest kept (characters)",
    "truncation_strategy": "How to shorten", "strip_ansi": "Remove terminal colour codes",
    "summary_prompt": "Instructions for the summary",
    "redact_secrets_in": "Hide secrets in what people write", "redact_pii_in": "Hide personal data in what people write",
    "blocked_keywords_in": "Words that stop a message from people",
    "redact_secrets_out": "Hide secrets in the agent's answers", "redact_pii_out": "Hide personal data in the agent's answers",
    "blocked_keywords_out": "Words that stop an answer",
    "redact_secrets_tool": "Hide secrets in tool results", "redact_pii_tool": "Hide personal data in tool results",
    "blocked_keywords_tool": "Words that stop a tool result",
    "redact_secrets_args": "Hide secrets in what tools are sent", "redact_pii_args": "Hide personal data in what tools are sent",
    "blocked_keywords_args": "Words that stop a tool call", "phone_regions": "Phone number regions to recognise",
    "reminders": "Reminders", "goal_reanchor": "Remind it of the goal", "llm_reminder": "Let the model write reminders",
    "max_fraction": "Share of the context window to fill before summarising", "keep_messages": "Recent messages kept whole",
    "keep_tool_pairs": "Recent tool calls kept whole", "context_window": "Context window (tokens)",
    "fallback_context_window": "Context window when the model does not say (tokens)",
    "threshold_bytes": "Images larger than (bytes)", "method": "Service", "max_content_chars": "Longest page kept (characters)",
    "allowed_domains": "Only these sites", "blocked_domains": "Never these sites", "cdp_url": "Browser address (CDP)",
    "max_steps": "Most steps", "vision": "Let it look at screenshots", "candidate_cap": "Most elements offered per page",
    "preview_width": "Screenshot width (pixels)", "step_model_profile_id": "Model for browsing steps",
    "connection": "Connection", "proxy_url": "Proxy address", "hosted_url": "Hosted browser address",
    "hosted_key_param": "Name of the key parameter", "locale": "Language and region",
    "default_top_k": "Passages per search", "self_query_enabled": "Let it filter by document details",
    "query_analysis_mode": "Rewrite questions before searching", "query_analysis_max_variants": "Most rewrites",
    "parent_context": "Include the surrounding text", "modes": "What it may read", "read_tool_enabled": "Let it open files",
    "allow_personal_memory": "Keep a memory per person", "base_url": "Service address", "top_k": "Memories per recall",
    "backend": "Where it runs", "connection_id": "Connection", "session_scope": "Keep files for",
    "runtime": "Runtime", "include_execute": "Let it run shell commands", "inline": "Answer inside the reply",
    "mode": "Mode", "allow_questions": "Let delegates ask questions", "allow_dynamic": "Let it write new specialists",
    "max_depth": "Most levels of delegation", "max_fanout": "Most delegates at once",
    "max_result_chars": "Longest delegate result (characters)", "share_with_delegates": "Share with delegates",
    "model_profile_id": "Model", "provider": "Provider", "model": "Model", "quality": "Quality", "size": "Size",
    "background": "Background", "output_format": "File format", "aspect_ratio": "Aspect ratio", "voice": "Voice",
    "voices": "Voices it may choose", "max_characters": "Longest text (characters)", "resolution": "Resolution",
    "max_resolution": "Highest resolution", "seconds": "Length (seconds)", "max_seconds": "Longest video (seconds)",
    "audio": "With sound", "timeout_seconds": "Time limit (seconds)", "harness": "Coding tool",
    "access": "What it may change", "timeout_minutes": "Time limit (minutes)",
}


# Options named for people. A select whose capability gave no labels shows its values ("xai", "png", "auto");
# these are the names people know them by. A label a capability wrote wins; a model's or region's id stays as is.
OPTION_LABELS: dict[str, str] = {
    "openai": "OpenAI", "google": "Google", "elevenlabs": "ElevenLabs", "alibaba": "Alibaba Cloud",
    "byteplus": "BytePlus", "xai": "xAI", "anthropic": "Anthropic",
    "low": "Low", "medium": "Medium", "high": "High", "auto": "Automatic",
    "transparent": "Transparent", "opaque": "Opaque",
    "png": "PNG", "webp": "WebP", "jpeg": "JPEG", "mp3": "MP3", "wav": "WAV", "opus": "Opus", "aac": "AAC",
    "flac": "FLAC", "pcm": "PCM", "mp4": "MP4",
}


def readable_options(field: dict[str, Any]) -> None:
    """A select's options and its "Default:" in words a person uses (OPTION_LABELS), where the capability left
    the raw value."""
    if field.get("kind") != "select":
        return
    for option in field["options"]:
        if option["label"] == option["value"] and option["value"] in OPTION_LABELS:
            option["label"] = OPTION_LABELS[option["value"]]
    if field.get("has_default"):
        field["default_text"] = next((o["label"] for o in field["options"] if o["value"] == field["default"]),
                                     field.get("default_text", ""))


def readable_label(name: str, label: str) -> str:
    """The label a person reads: a capability's own title, else ours, else the name in a sentence."""
    machine = name.replace("_", " ")
    if label and label.lower() != machine.lower():
        return label
    return PEOPLE_LABELS.get(name) or machine.capitalize()


def _capability_cards(actor: Actor, spec: dict[str, Any], problems: dict[str, str]) -> list[dict[str, Any]]:
    bindings = {b.get("id"): b for b in spec.get("capabilities", []) if isinstance(b, dict)}
    from agenticos.services import pickable_secrets

    catalog = registry.catalog_json()["capabilities"]
    # Every kind a capability's picker asks for, some of which no picker offers unasked (a ChatGPT sign-in).
    wanted = tuple({kind for entry in catalog if entry["key"] for kind in entry["key"]["kinds"]})
    secrets = list(pickable_secrets(actor, kinds=wanted))
    cards = []
    for entry in catalog:
        if not entry["selectable"]:
            continue
        cap_id = entry["id"]
        binding = bindings.get(cap_id) or {}
        prefix = f"capabilities[{cap_id}]"
        mine = {path[len(prefix) + 1:]: msg for path, msg in problems.items() if path.startswith(prefix + ".")}
        config_errors = {path[len("config."):]: msg for path, msg in mine.items() if path.startswith("config.")}
        config = binding.get("config") or {}
        fields = fields_for(entry["config_schema"], config, prefix=f"cap-{cap_id}", errors=config_errors,
                            organization_id=actor.organization.pk)  # pickers of the organization's own objects
        for f in fields:
            f["label"] = readable_label(f["name"], f.get("label") or "")
            readable_options(f)
        tool_approval = binding.get("tool_approval") or {}
        overrides = binding.get("tool_overrides") or {}
        tools = [
            {
                **tool,
                "approval": tool_approval.get(tool["id"], "default"),
                "override_name": (overrides.get(tool["id"]) or {}).get("name") or "",
                "override_description": (overrides.get(tool["id"]) or {}).get("description") or "",
                "error": next((m for p, m in mine.items() if p.startswith(f"tool_approval.{tool['id']}")
                               or p.startswith(f"tool_overrides.{tool['id']}")), ""),
            }
            for tool in entry["tools"]
        ]
        key = entry["key"]
        placed = {f"config.{f['name']}" for f in fields if f["error"]}
        picker = knowledge_picker(actor, spec, problems, binding) if cap_id == KNOWLEDGE else None
        cards.append({
            **entry,
            "bound": bool(binding),
            "enabled": bool(binding) and binding.get("enabled", True),
            "approval": binding.get("approval", "default"),
            "fields": fields,
            "basic_fields": [f for f in fields if not f["advanced"]],
            "advanced_fields": [f for f in fields if f["advanced"]],
            "advanced_open": any(f["advanced"] and (f["is_set"] or f["error"]) for f in fields),
            "tools": tools,
            # Tool rows fold away unless one was changed or has a problem.
            "tools_open": any(t["approval"] != "default" or t["override_name"] or t["override_description"]
                              or t["error"] for t in tools),
            "secret_id": binding.get("secret_id") or "",
            "secrets": [s for s in secrets if key and s.kind in key["kinds"]],
            "secret_error": mine.get("secret_id", ""),
            "picker": picker,
            "other_errors": [m for p, m in mine.items()
                             if p not in placed and p != "secret_id" and not p.startswith(("tool_approval.",
                                                                                              "tool_overrides."))],
        })
    return cards


KNOWLEDGE = "knowledge"


def knowledge_picker(actor: Actor, spec: dict[str, Any], problems: dict[str, str],
                     binding: dict[str, Any]) -> dict[str, Any]:
    """The Knowledge card's collections: every one the person may bind (use access, knowledge/grants.py) and
    every one the draft binds (named even when this person may not bind it, so an editor sees what the agent
    searches), the bound ones first; a warning when the capability is on and nothing is bound."""
    from django.db.models import Count

    from knowledge import grants
    from knowledge.models import Collection

    bound = [str(x) for x in spec.get("collection_ids") or []]
    visible = {str(c.pk): c for c in grants.visible_collections(actor).annotate(n_documents=Count("documents"))}
    named = {str(c.pk): c for c in Collection.objects.filter(organization=actor.organization,
                                                             pk__in=[b for b in bound if _is_uuid(b)])}
    levels = grants.grant_levels(actor.user_id, list(visible))
    rows = []
    for cid in [*bound, *sorted((c for c in visible if c not in bound), key=lambda c: visible[c].name.lower())]:
        collection = visible.get(cid) or named.get(cid)
        level = grants.collection_access(actor, visible[cid], known_grants=levels) if cid in visible else None
        rows.append({
            "id": cid, "bound": cid in bound, "missing": collection is None,
            "name": collection.name if collection is not None else "",
            "documents": getattr(collection, "n_documents", None),
            # Unbinding is always possible; binding needs use access (the publish check says the same).
            "usable": cid in bound or grants.at_least(level, grants.USE),
        })
    errors = [m for p, m in problems.items() if p.removeprefix("spec.").startswith("collection_ids")]
    return {
        "rows": rows, "bound_names": [r["name"] for r in rows if r["bound"] and r["name"]],
        "none_bound": not bound, "enabled": bool(binding) and binding.get("enabled", True), "errors": errors,
    }


def _is_uuid(value: str) -> bool:
    from agenticos.tenancy import parse_uuid

    return parse_uuid(value) is not None


def mcp_tool_notice(actor: Actor, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The Toolbox's notice when the agent's MCP bindings add up to more than 30 tools and tool search is not
    on (spec "Búsqueda de herramientas": the Builder warns; it never binds tool search by itself)."""
    from django.core.exceptions import ValidationError

    from capabilities.mcp import services as mcp_services

    search = next((b for b in spec.get("capabilities") or []
                   if isinstance(b, dict) and b.get("id") == "tool_search"), None)
    if search is not None and search.get("enabled", True):
        return None
    try:
        warning = mcp_services.tool_count_warning(spec, actor.organization.pk)
    except ValidationError:  # a draft naming a malformed connection id: its publish problems say so
        return None
    if warning is None:
        return None
    return {**warning, "tool_search_bound": search is not None}


def builder_context(actor: Actor, agent: Agent, level: str, *, diff: dict | None = None) -> dict[str, Any]:
    spec = agent.draft_spec or {}
    problems = {p["field"]: p["message"] for p in spec_checks.publish_problems(actor, spec, agent=agent)}
    cards = _capability_cards(actor, spec, problems)
    versions = list(agent.versions.filter(number__gt=0).select_related("published_by").order_by("-number")[:50])
    environments = list(Environment.objects.filter(agent=agent).select_related("version").order_by("name"))
    budget = (spec.get("budget") or {}).get("monthly_usd")
    model_settings = spec.get("model_settings") or {}
    return {
        "model_settings": model_settings,
        "max_steps": spec.get("max_steps", 20),
        "model_settings_open": any(v is not None for v in model_settings.values()) or spec.get("max_steps", 20) != 20
        or any(p.removeprefix("spec.").startswith(("model_settings", "max_steps")) for p in problems),
        "nav": "agents",
        "agent": agent,
        "spec": spec,
        "level": level,
        "can_edit": at_least(level, EDIT),
        "can_publish": at_least(level, PUBLISH),
        "problems": problems,
        "basics_errors": {k.replace(".", "_"): v for k, v in problems.items() if not k.startswith("capabilities")},
        **toolbox_rows(cards),
        "problem_links": problem_links(problems, cards),
        "toolbox_strings": toolbox_strings(),
        "cards": [c for c in cards if not c["advanced"]],
        "advanced_cards": [c for c in cards if c["advanced"]],
        "advanced_open": any(c["enabled"] for c in cards if c["advanced"]),
        "mcp_notice": mcp_tool_notice(actor, spec),
        "memory_clear": memory_clear_context(actor, agent, spec, level),
        "voice_card": voice_card(spec),  # the Voice card: what a call can do (calls.service)
        "realtime_picker": realtime_picker(actor, spec),
        "approval_modes": APPROVAL_MODES,
        "model_profiles": ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT),
        "budget": "" if budget is None else budget,
        "versions": versions,
        "environments": environments,
        # production behind the latest version: the Builder offers to promote it in one click
        "production_behind": next((e for e in environments if e.name == "production" and versions
                                   and e.version_id != versions[0].pk), None),
        "diff": diff,
        "rollout_panel": rollout_panel(actor, agent, at_least(level, PUBLISH)),
        "api_url": f"{settings.FRONTEND_URL}/api/v1/agents/{agent.pk}/run",
        "can_run": actor.has("agents:run"),
        # The web chat's state for the draft (console.test_chat), for those who may try it.
        "starter_prompts_text": "\n".join(spec.get("starter_prompts") or []),
        "test_chat_state": test_chat_state(actor, agent) if at_least(level, EDIT) and actor.has("agents:run") else None,
        **availability_context(actor, agent, level),
    }


# Where a publish problem is shown: the basics form's fields by their spec path (the anchors in builder.html).
BASICS_ANCHORS: dict[str, tuple[str, Any]] = {
    "name": ("b-name", gettext_lazy("Name")), "instructions": ("b-instructions", gettext_lazy("Instructions")),
    "model_profile_id": ("b-model", gettext_lazy("Model profile")),
    "budget": ("b-budget", gettext_lazy("Monthly budget")),
    "model_settings.temperature": ("b-temperature", gettext_lazy("Temperature")),
    "model_settings.top_p": ("b-top-p", gettext_lazy("Top P")),
    "model_settings.max_tokens": ("b-max-tokens", gettext_lazy("Longest answer")),
    "model_settings.timeout_secs": ("b-timeout", gettext_lazy("Time limit per model request")),
    "max_steps": ("b-max-steps", gettext_lazy("Most steps per answer")),
    "collection_ids": ("cap-knowledge", gettext_lazy("Knowledge: collections it searches")),
    "starter_prompts": ("b-starters", gettext_lazy("Starter prompts")),
    "realtime_profile_id": ("v-realtime", gettext_lazy("Voice model for calls")),
}


def problem_links(problems: dict[str, str], cards: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Each publish problem named by the field it is at, with the anchor that takes a person there."""
    import re

    names = {c["id"]: c for c in cards}
    links = []
    for path, message in problems.items():
        path = path.removeprefix("spec.")
        found = re.match(r"capabilities\[([^\]]+)\](?:\.config\.([a-z0-9_]+))?", path)
        if found and found.group(1) in names:
            card = names[found.group(1)]
            setting = next((f["label"] for f in card["fields"] if f["name"] == found.group(2)), "")
            label = f"{card['name']}: {setting}" if setting else str(card["name"])
            links.append({"href": f"#cap-{card['id']}", "label": label, "message": message})
            continue
        key = next((k for k in BASICS_ANCHORS if path == k or path.startswith((k + ".", k + "["))), None)
        anchor, label = BASICS_ANCHORS[key] if key else ("toolbox", _("Toolbox"))
        links.append({"href": f"#{anchor}", "label": str(label), "message": message})
    return links


# The Toolbox's groups, in the order a builder looks for things; "Advanced" (how a run is carried) comes last,
# folded unless one of its capabilities is on (the spec's "Avanzado", plegado).
CATEGORY_LABELS: dict[str, Any] = {
    "knowledge": gettext_lazy("Knowledge and memory"), "research": gettext_lazy("Web and research"),
    "analysis": gettext_lazy("Analysis and creation"), "reasoning": gettext_lazy("Reasoning and delegation"),
    "utility": gettext_lazy("Tools and connections"), "channels": gettext_lazy("Channels"),
}


def toolbox_rows(cards: list[dict[str, Any]]) -> dict[str, Any]:
    """The Toolbox list: every capability in its category (no scroll box hides any), Advanced apart."""
    rows = [{**c, "problem": bool(c["other_errors"] or c["secret_error"] or any(f["error"] for f in c["fields"])
                                  or any(t["error"] for t in c["tools"]))} for c in cards]
    groups = [{"key": key, "label": label, "rows": [r for r in rows if not r["advanced"] and r["category"] == key]}
              for key, label in CATEGORY_LABELS.items()]
    others = [r for r in rows if not r["advanced"] and r["category"] not in CATEGORY_LABELS]
    if others:
        groups.append({"key": "other", "label": gettext_lazy("Other"), "rows": others})
    advanced = [r for r in rows if r["advanced"]]
    return {"toolbox_groups": [g for g in groups if g["rows"]], "toolbox_advanced": advanced,
            "toolbox_advanced_open": any(r["enabled"] or r["problem"] for r in advanced)}


def toolbox_strings() -> dict[str, str]:
    """The words builder.js writes for the Toolbox's one Save."""
    return {
        "unsaved": _("Unsaved changes"), "saving": _("Saving…"), "saved": _("Saved in the draft."),
        "saved_with_problems": _("Saved in the draft, but something needs fixing before publishing: it is shown "
                                 "at its setting."),
        "not_saved": _("Not saved:"), "failed": _("Not saved: the server did not answer. Try again."),
    }


def availability_context(actor: Actor, agent: Agent, level: str) -> dict[str, Any]:
    """Embeds and bot bindings of the Availability section; the forms start empty, without errors."""
    labels = dict(EMBED_KINDS)
    embeds = [{**row, "kind_label": labels.get(row["embed"].kind, row["embed"].kind)}
              for row in selectors.embed_rows(actor, agent)]
    return {
        "embeds": embeds,
        "bindings": selectors.binding_rows(actor, agent),
        "bots": selectors.bindable_bots(actor),
        "can_manage_embeds": actor.has("embeds:manage"),
        "can_bind": actor.has("bots:manage") and at_least(level, EDIT),
        "embed_kinds": EMBED_KINDS,
        "embed_form": {"kind": "widget", "name": "", "origins": "", "environment": "production"},
        "embed_errors": {},
        "binding_form": {"bot_id": "", "environment": "production"},
        "binding_errors": {},
    }


@console_view("agents:view")
def builder(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    return screen(request, "console/builder.html", builder_context(actor, agent, level))


def _back(agent: Agent, anchor: str = "") -> HttpResponse:
    return redirect(reverse("console:builder", args=[agent.pk]) + (f"#{anchor}" if anchor else ""))


def _render_invalid(request: HttpRequest, actor: Actor, agent: Agent, exc: Invalid,
                    typed: dict[str, Any] | None = None) -> HttpResponse:
    """The Builder with the refused change's problems at their fields (and, from the basics form, the numbers
    as typed, so a person corrects them instead of typing them again)."""
    messages.error(request, exc.message)
    agent.refresh_from_db()
    context = builder_context(actor, agent, require_agent_access(actor, agent, "view"))
    for field, message in problems_by_field(exc).items():
        key = field.removeprefix("spec.").replace(".", "_")
        context["basics_errors"][key] = message
        if key.startswith(("model_settings", "max_steps")):
            context["model_settings_open"] = True
    if typed is not None:
        context["model_settings"] = typed.get("model_settings") or {}
        context["max_steps"] = typed.get("max_steps", context["max_steps"])
    return screen(request, "console/builder.html", context, status=422)


MODEL_SETTINGS = ("temperature", "top_p", "max_tokens", "timeout_secs")


def _number(raw: str | None, *, integer: bool = False) -> Any:
    """A form's number: None when empty, the number when it is one, else the text as typed — so the spec's
    validation names the field ("Input should be a valid number") instead of the value vanishing."""
    text = (raw or "").strip()
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    if integer:
        return int(value) if value == value.to_integral_value() else text
    return float(value)


@post_form("console:builder")
@console_view("agents:view")
def save_basics(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    post = request.POST
    spec = dict(agent.draft_spec or {})
    spec["name"] = str(post["name"] if "name" in post else spec.get("name") or "").strip()
    spec["description"] = post.get("description", "")
    spec["instructions"] = post.get("instructions", "")
    spec["model_profile_id"] = post.get("model_profile_id") or None
    if "starter_prompts" in post:  # one per line; an older form (or a script) without the field keeps the draft's
        spec["starter_prompts"] = [line.strip() for line in post["starter_prompts"].splitlines() if line.strip()]
    if "max_steps" in post:  # the form has them; an older form (or a script) that does not keeps the draft's
        spec["model_settings"] = {name: _number(post.get(name), integer=name == "max_tokens")
                                  for name in MODEL_SETTINGS}
        steps = _number(post.get("max_steps"), integer=True)
        spec["max_steps"] = 20 if steps is None else steps  # empty: the spec's default
    raw_budget = (post.get("budget") or "").strip()
    try:
        spec["budget"] = {"monthly_usd": str(Decimal(raw_budget)) if raw_budget else None}
    except InvalidOperation:
        spec["budget"] = {"monthly_usd": raw_budget}
    try:
        agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    except Invalid as exc:
        return _render_invalid(request, actor, agent, exc, typed=spec)
    messages.success(request, _("Draft saved."))
    return _back(agent, "basics")


def realtime_picker(actor: Actor, spec: dict[str, Any]) -> dict[str, Any]:
    """The Voice card's choice of realtime model: only the organization's realtime-kind profiles (a chat or
    embedding profile cannot carry a call). Unset, a call uses the organization's first realtime profile by label
    (calls.service.realtime_profile), so the empty choice says which one that is — or that there is none."""
    profiles = list(org_queryset(actor, ModelProfile).filter(kind=ModelProfile.Kind.REALTIME)
                    .order_by("label").only("pk", "label", "model"))
    chosen = str(spec.get("realtime_profile_id") or "")
    return {
        "profiles": profiles, "chosen": chosen,
        "first": profiles[0] if profiles else None,
        # A draft naming one that is gone (or was never realtime, set through YAML): said, not silently shown as unset.
        "missing": bool(chosen) and all(str(p.pk) != chosen for p in profiles),
    }


@post_form("console:builder")
@console_view("agents:view")
def save_voice(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    """The Voice card's realtime model, into the draft. Refused at its field unless it is one of this
    organization's realtime profiles: the publish check would catch it too, but a draft should not take a choice
    the picker never offered (a chat profile's id posted by hand)."""
    agent, _level = _agent(actor, agent_id)
    require_agent_access(actor, agent, EDIT)  # a viewer is refused as such, before the choice is judged
    wanted = (request.POST.get("realtime_profile_id") or "").strip()
    if wanted and not (
        _is_uuid(wanted) and org_queryset(actor, ModelProfile).filter(pk=wanted, kind=ModelProfile.Kind.REALTIME)
        .exists()
    ):
        message = _("Choose one of this organization's realtime voice models, or none.")
        return _render_invalid(request, actor, agent, Invalid(message, details={"problems": [
            {"field": "spec.realtime_profile_id", "message": message}]}))
    spec = dict(agent.draft_spec or {})
    spec["realtime_profile_id"] = wanted or None
    try:
        agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    except Invalid as exc:
        return _render_invalid(request, actor, agent, exc)
    messages.success(request, _("Voice model saved in the draft."))
    return _back(agent, "voice")


@post_form("console:builder", keep=("agent_id",))
@console_view("agents:view")
def save_capability(request: HttpRequest, actor: Actor, agent_id: Any, capability_id: str) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    entry = registry.find(capability_id)
    if entry is None or not entry.selectable:
        raise NotFound(_("Unknown capability."))
    post = request.POST
    spec = dict(agent.draft_spec or {})
    bindings = [b for b in spec.get("capabilities", []) if isinstance(b, dict)]
    existing = next((b for b in bindings if b.get("id") == capability_id), None)
    enabled = post.get("enabled") == "on"
    binding: dict[str, Any] = {"id": capability_id, "enabled": enabled,
                               "config": config_from_post(entry.config_schema(), post)}
    approval = post.get("approval", "default")
    binding["approval"] = approval if approval in APPROVAL_MODES else approval
    binding["tool_approval"] = {
        t.id: post.get(f"tool.{t.id}.approval") for t in entry.tools
        if post.get(f"tool.{t.id}.approval", "default") != "default"
    }
    overrides = {}
    for tool in entry.tools:
        name = (post.get(f"tool.{tool.id}.name") or "").strip()
        description = (post.get(f"tool.{tool.id}.description") or "").strip()
        if name or description:
            overrides[tool.id] = {"name": name or None, "description": description or None}
    binding["tool_overrides"] = overrides
    binding["secret_id"] = post.get("secret_id") or None
    if capability_id == KNOWLEDGE and "collection_picker" in post:
        # The card's picker: the collections ticked, in the order shown (the draft's bound ones first). One
        # newly ticked needs use access now: the draft's own are exempt at publish (agents.services), so a
        # collection the person cannot bind must never reach the draft.
        from knowledge.grants import unusable_collection_ids

        require_agent_access(actor, agent, EDIT)  # a viewer is refused as such, before any collection is judged
        wanted = list(dict.fromkeys(post.getlist("collection_ids")))
        already = {str(x) for x in spec.get("collection_ids") or []}
        refused = unusable_collection_ids(actor, [c for c in wanted if c not in already])
        if refused:
            message = _("You cannot bind that collection: it does not exist here or you need use access to it.")
            if request.headers.get("Accept", "").startswith("application/json"):
                return JsonResponse({"saved": False, "message": message,
                                     "problems": {"collection_ids": message}}, status=422)
            messages.error(request, message)
            return _back(agent, f"cap-{capability_id}")
        spec["collection_ids"] = wanted
    wants_json = request.headers.get("Accept", "").startswith("application/json")
    if existing is None and not enabled:
        return JsonResponse({"saved": False, "problems": {}}) if wants_json else _back(agent, f"cap-{capability_id}")
    if existing is None:
        bindings.append(binding)
    else:
        bindings[bindings.index(existing)] = binding
    also = _bind_companions(entry, bindings) if enabled and not (existing or {}).get("enabled", False) else []
    spec["capabilities"] = bindings
    try:
        agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    except Invalid as exc:
        if wants_json:  # the Toolbox's one Save: nothing was saved, each problem goes to its field
            return JsonResponse({"saved": False, "message": exc.message,
                                 "problems": _capability_problems(problems_by_field(exc), capability_id)}, status=422)
        return _render_invalid(request, actor, agent, exc)
    # What is saved but would not publish is said at the field, never under a "saved" banner alone.
    mine = _capability_problems({p["field"]: p["message"] for p in spec_checks.publish_problems(
        actor, spec, agent=agent)}, capability_id)
    if wants_json:
        return JsonResponse({"saved": True, "problems": mine, "also_bound": also})
    if also:
        messages.info(request, _("%(names)s switched on with %(name)s.") % {
            "names": ", ".join(str(c.name) for c in map(registry.find, also) if c), "name": entry.name})
    if mine:
        messages.warning(request, _("%(name)s is saved in the draft, but needs fixing before publishing: see its "
                                    "settings.") % {"name": entry.name})
    else:
        messages.success(request, _("%(name)s saved in the draft.") % {"name": entry.name})
    return _back(agent, f"cap-{capability_id}")


def _bind_companions(entry: Any, bindings: list[dict[str, Any]]) -> list[str]:
    """Bind what a capability switched on brings along (`Capability.binds_with`: Visuals brings Charts, the spec's
    'el Builder lo vincula, junto con Charts, al activar Visuals'). Only what is not bound at all: a companion the
    author switched off stays off. Returns the ids bound."""
    bound = {b.get("id") for b in bindings}
    added = [cid for cid in entry.binds_with if cid not in bound and registry.find(cid) is not None]
    bindings.extend({"id": cid, "enabled": True} for cid in added)
    return added


def _capability_problems(problems: dict[str, str], capability_id: str) -> dict[str, str]:
    """One capability's problems keyed as the Toolbox shows them: "config.<name>", "secret_id", "tool.<id>"…"""
    prefix = f"capabilities[{capability_id}]."
    found = {}
    for path, message in problems.items():
        path = path.removeprefix("spec.")
        if path.startswith(prefix):
            found[path[len(prefix):]] = message
        elif capability_id == KNOWLEDGE and path.startswith("collection_ids"):
            found.setdefault("collection_ids", message)  # shown at the card's collection picker
    return found


@require_POST
@console_view("agents:view")
def clear_memory(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    """The Toolbox's "clear this agent's memory": every owner's notes and mem0 memories, after a confirmation."""
    from knowledge import memory
    from knowledge.mem0 import Mem0Error

    agent, _level = _agent(actor, agent_id)
    require_agent_access(actor, agent, EDIT)
    if request.POST.get("confirm") != "yes":
        messages.error(request, _("Nothing was cleared: tick the box to confirm."))
        return _back(agent, "memory")
    try:
        result = memory.clear_agent(actor=actor, agent=agent)
    except Mem0Error as exc:
        messages.error(request, _("The memory was not cleared: %(reason)s Nothing was deleted here; fix it and "
                                  "clear again.") % {"reason": exc})
        return _back(agent, "memory")
    messages.success(request, _("Cleared %(name)s's memory: %(notes)s notes, %(spaces)s mem0 spaces.") % {
        "name": agent.name, "notes": result["notes_deleted"], "spaces": result["mem0_spaces_cleared"]})
    return _back(agent, "memory")


def memory_clear_context(actor: Actor, agent: Agent, spec: dict[str, Any], level: str) -> dict[str, Any] | None:
    """Shown to editors of an agent that binds memory (in its draft) or still keeps notes."""
    from knowledge.models import MemoryNote

    if not at_least(level, EDIT):
        return None
    notes = MemoryNote.objects.filter(organization=actor.organization, agent=agent).count()
    binds = any(isinstance(b, dict) and b.get("id") in ("memory_files", "memory_mem0")
                for b in spec.get("capabilities") or [])
    return {"notes": notes} if binds or notes else None


# ------------------------------------------------------------------ versions


@post_form("console:builder")
@console_view("agents:view")
def publish(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    try:
        version = agent_services.publish_agent(actor=actor, agent=agent, note=request.POST.get("note", ""),
                                                allow_unchanged=False)
    except Invalid as exc:
        replay_set = (exc.details or {}).get("replay_set") if isinstance(exc.details, dict) else None
        if exc.code == "replay_failed" and replay_set:  # the replay gate: its runs side by side say why
            messages.error(request, exc.message)
            return redirect(reverse("console-replays:detail", args=[agent.pk, replay_set]))
        return _render_invalid(request, actor, agent, exc)
    except Conflict as exc:  # nothing changed since the latest version: no empty version is made
        messages.error(request, exc.message)
        return _back(agent, "versions")
    # Say which environments the publish moved and which stayed behind (production is promoted on purpose).
    envs = Environment.objects.filter(agent=agent).select_related("version").order_by("name")
    moved = [e.name for e in envs if e.version_id == version.pk]
    behind = [f"{e.name} v{e.version.number}" for e in envs if e.version_id != version.pk]
    text = _("Published version %(n)s: %(moved)s now runs it.") % {"n": version.number, "moved": ", ".join(moved)}
    if behind:
        text += " " + _("Still on an older version: %(envs)s.") % {"envs": ", ".join(behind)}
    messages.success(request, text)
    return _back(agent, "versions")


@require_POST
@console_view("agents:view")
def promote(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    environment = request.POST.get("environment", "production")
    version = request.POST.get("version", "")
    env = agent_services.promote_environment(actor=actor, agent=agent, environment=environment,
                                             version=int(version) if digits_only(version) else -1)
    messages.success(request, _("%(env)s now runs version %(n)s.") % {"env": env.name, "n": env.version.number})
    return _back(agent, "versions")


@console_view("agents:view")
def diff(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    result = agent_services.diff_versions(actor=actor, agent=agent, from_ref=request.GET.get("from", ""),
                                          to_ref=request.GET.get("to", "draft"))
    return screen(request, "console/builder.html", builder_context(actor, agent, level, diff=result))


@console_view("agents:view")
def export_yaml(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    version = request.GET.get("version")
    text = agent_services.export_agent_yaml(actor=actor, agent=agent,
                                            version=int(version) if version and digits_only(version) else None)
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{agent.slug}.yaml"'
    return response


@post_form("console:builder")
@console_view("agents:view")
def import_into(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    try:
        agent_services.import_agent_yaml(actor=actor, text=_uploaded_yaml(request), agent=agent)
    except Invalid as exc:
        return _render_invalid(request, actor, agent, exc)
    messages.success(request, _("The draft was replaced from YAML."))
    return _back(agent)
