"""Public endpoints: no session, no cookie. The script, the hosted page, its config and logo, uploads.

Every one of them is reachable by a stranger, so every one is rate-limited in Redis and answers
an unknown key, a paused embed and a key of the wrong kind the same way.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from agenticos import images, ratelimit
from agenticos.errors import DomainError, json_error
from agents import uploads
from capabilities.visuals import maps
from embeds import services
from embeds.api import max_embed_upload_bytes
from embeds.consumers import PUBLIC_KEY_PATTERN
from embeds.models import Embed
from media import store as generated_store
from media.views import NOT_FOUND as GENERATED_NOT_FOUND
from media.views import served as served_generated

STATIC_DIR = Path(__file__).resolve().parent / "static" / "embeds"


def find_embed(key: str) -> Embed | None:
    """The embed of a well-formed public key; None (answered "not available") for any other string, before
    it reaches a query — a NUL byte in the path was a database error (500)."""
    if not re.fullmatch(PUBLIC_KEY_PATTERN, key):
        return None
    return services.find_embed(key)


def _address(request: HttpRequest) -> str:
    return ratelimit.client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def _rate_limited(retry_after: int) -> JsonResponse:
    response = json_error(429, "rate_limited", "Too many requests. Wait and retry.", {"retry_after": retry_after})
    response["Retry-After"] = str(retry_after)
    return response


def _not_available() -> JsonResponse:
    return json_error(404, "not_available", "Not available.")


@lru_cache(maxsize=8)
def _static_text(name: str) -> str:
    return (STATIC_DIR / name).read_text(encoding="utf-8")


def static_text(name: str) -> str:
    # Re-read on every request in DEBUG so an edited script shows up without a restart.
    if settings.DEBUG:
        return (STATIC_DIR / name).read_text(encoding="utf-8")
    return _static_text(name)


def widget_source(config: dict) -> str:
    return (
        "(function(){\nvar AOS_CONFIG = "
        + json.dumps(config).replace("</", "<\\/")
        + ";\n"
        + static_text("widget.js")
        + "\n})();\n"
    )


def widget_config(embed: Embed) -> dict[str, Any]:
    """What widget.js is told about its looks (the console's preview draws the same)."""
    return {
        "key": embed.public_key,
        "title": embed.title or embed.agent.name,
        "subtitle": embed.subtitle,
        "greeting": embed.greeting,
        "emptyText": embed.empty_text or "Ask a question…",
        "launcherText": embed.launcher_text or "Chat",
        "accent": embed.accent_color,
        "corner": embed.corner,
        # The map tile origin a drawing's frame admits (VISUAL_MAP_TILES), as web chat's page names it in a meta.
        "mapTiles": maps.tile_origin(),
    }


@require_GET
def widget_js(request: HttpRequest, key: str) -> HttpResponse:
    limit = int(getattr(settings, "RATE_LIMIT_EMBED_PER_MINUTE", 30))
    # Its own counter: a page load spends both the script and the admission that follows it.
    allowed, retry = ratelimit.hit("embed-script", _address(request), limit)
    if not allowed:
        response = HttpResponse("/* rate limited */", status=429, content_type="application/javascript")
        response["Retry-After"] = str(retry)
        return response
    embed = find_embed(key)
    if embed is None or embed.kind != Embed.Kind.WIDGET:
        return HttpResponse("/* not available */", status=404, content_type="application/javascript")
    response = HttpResponse(widget_source(widget_config(embed)), content_type="application/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response


def _page_embed(key: str) -> Embed | None:
    embed = find_embed(key)
    if embed is None or embed.kind != Embed.Kind.PAGE:
        return None
    return embed


def _page_limit(request: HttpRequest, embed: Embed) -> tuple[bool, int]:
    """A page load at /e/<key> (a visitor's browser) counts against the caller's address and, when the request
    names one, its visitor key — both must allow it, as for uploads, since the browser mints the key — and only
    then against a per-page ceiling far above normal traffic. One bucket per page let one stranger make the link
    answer 429 for everybody; a stranger refused by their own counters now spends nothing of the ceiling."""
    per_caller = int(getattr(settings, "RATE_LIMIT_HOSTED_PAGE_PER_MINUTE", 120))
    ceiling = int(getattr(settings, "RATE_LIMIT_HOSTED_PAGE_CEILING_PER_MINUTE", 6000))
    own = [("embed-page-addr", f"{embed.pk}:{_address(request)}", per_caller)]
    visitor = services.clean_visitor_key(request.headers.get("X-Visitor") or request.GET.get("visitor"))
    if visitor is not None:
        own.append(("embed-page-visitor", f"{embed.pk}:{visitor}", per_caller))
    return ratelimit.hit_then_share(own, ("embed-page", str(embed.pk), ceiling))


def logo_path(embed: Embed) -> str:
    """Where the page's logo comes from: its own upload, the agent's avatar, the organization's logo."""
    if embed.logo_source == Embed.Logo.UPLOADED:
        return embed.logo_path
    if embed.logo_source == Embed.Logo.AGENT:
        return embed.agent.avatar_path
    if embed.logo_source == Embed.Logo.ORGANIZATION:
        return embed.organization.logo_path
    return ""


def has_logo(embed: Embed) -> bool:
    return images.read(logo_path(embed)) is not None


def page_config(embed: Embed) -> dict[str, Any]:
    return {
        "key": embed.public_key,
        "agentName": embed.agent.name,
        "title": embed.title or embed.agent.name,
        "welcome": embed.welcome,
        "accent": embed.accent_color,
        "logoUrl": f"/api/v1/embed/{embed.public_key}/logo" if has_logo(embed) else None,
        "showToolSteps": embed.show_tool_steps,
        "showToolResults": embed.show_tool_steps and embed.show_tool_results,
        "showThinking": embed.show_thinking,
        "allowNewThread": embed.allow_new_thread,
        "allowMicrophone": embed.allow_microphone,
        "allowUploads": embed.allow_uploads and embed.created_by_id is not None,
        "urlVariables": [v["name"] for v in embed.variables if v.get("url_safe")],
        "paused": embed.is_paused,
    }


@require_GET
def page_config_json(request: HttpRequest, key: str) -> HttpResponse:
    embed = _page_embed(key)
    if embed is None:
        return _not_available()
    allowed, retry = _config_limit(embed)
    if not allowed:
        return _rate_limited(retry)
    return JsonResponse(page_config(embed))


def _config_limit(embed: Embed) -> tuple[bool, int]:
    """The config JSON is counted per page (spec: "la config de una página alojada, por página"): a frontend
    server asks for it, not the visitor's browser, so its address names a container — counted per address, one
    server rendering pages for everybody would put every visitor of the deployment in one bucket. The page the
    browser loads (/e/<key>, `_page_limit`) spends nothing of it."""
    return ratelimit.hit("embed-page-config", str(embed.pk), int(settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE))


def page_response(request: HttpRequest, config: dict[str, Any], *, preview: bool = False) -> HttpResponse:
    """The hosted page drawn with this config; its scripts are files (the page's Content-Security-Policy admits
    no inline script). The console's `preview` puts a socket that answers in the browser before the page's own."""
    return render(request, "embeds/page.html", {"config": config, "preview": preview})


@require_GET
def hosted_page(request: HttpRequest, key: str) -> HttpResponse:
    embed = _page_embed(key)
    if embed is None:
        response = render(request, "embeds/unavailable.html", status=404)
    else:
        allowed, retry = _page_limit(request, embed)
        if not allowed:
            response = render(request, "embeds/unavailable.html", {"rate_limited": True}, status=429)
            response["Retry-After"] = str(retry)
        else:
            response = page_response(request, page_config(embed))
    # A secret link is not a page to index; a crawler following one has published it.
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def logo(request: HttpRequest, key: str) -> HttpResponse:
    embed = _page_embed(key)
    data = images.read(logo_path(embed)) if embed is not None else None
    sniffed = images.sniff(data[:64]) if data else None
    if data is None or sniffed is None:
        # An .html or .svg stored by any route is served as nothing at all, never as a script: the same
        # "not available" envelope as an unknown key.
        return _not_available()
    response = HttpResponse(data, content_type=sniffed[0])
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "public, max-age=300"
    return response


@csrf_exempt
@require_POST
def upload(request: HttpRequest, key: str) -> HttpResponse:
    limit_bytes = max_embed_upload_bytes()
    # The intake web chat shares (agents.uploads): an oversized body is refused before a byte of it is read.
    try:
        uploads.refuse_oversized_body(request, limit_bytes)
    except DomainError as exc:
        return json_error(exc.status, exc.code, exc.message, exc.details)
    embed = _page_embed(key)
    if embed is None or embed.is_paused or not embed.allow_uploads or embed.created_by_id is None:
        # Includes a page whose publisher has no account any more: nobody to store the file under.
        return _not_available()
    origin = services.normalize_origin(request.META.get("HTTP_ORIGIN", ""))
    if origin != services.deployment_origin():
        return _not_available()
    visitor = services.clean_visitor_key(request.headers.get("X-Visitor") or request.GET.get("visitor"))
    if visitor is None:
        return json_error(400, "bad_request", "A visitor key is required.")
    per_minute = int(getattr(settings, "RATE_LIMIT_EMBED_UPLOAD_PER_MINUTE", 10))
    # Both must allow it: the visitor key is minted by the browser, and an address can be shared.
    ok_address, retry_a = ratelimit.hit("embed-upload-addr", f"{embed.pk}:{_address(request)}", per_minute)
    ok_visitor, retry_v = ratelimit.hit("embed-upload-visitor", f"{embed.pk}:{visitor}", per_minute)
    if not (ok_address and ok_visitor):
        return _rate_limited(max(retry_a, retry_v))
    try:
        got = uploads.read_upload(request, limit_bytes)
    except DomainError as exc:
        return json_error(exc.status, exc.code, exc.message, exc.details)
    row = services.store_visitor_file(embed, name=got.name, mime=got.mime, ext=got.ext, data=got.data)
    return JsonResponse({"id": str(row.pk), "name": row.name, "mime": row.mime, "size": row.size}, status=201)


@require_GET
def generated_file(request: HttpRequest, key: str, filename: str) -> HttpResponseBase:
    """`/api/v1/embed/<key>/generated/<filename>?media=<token>`: a file generated in the visitor's own thread.

    The link carries the socket's `media` token (services.media_token), never the continuity key: a URL
    reaches access logs. An anonymous visitor's client may instead name its key in an `X-Visitor` header; a
    signed visitor's thread is their `sub`, which only a token made on their socket names. Anything else — an
    expired or altered token, another embed's, another thread's file — is the same 404 as an unknown name."""
    embed = find_embed(key)
    thread = None
    if embed is not None:
        thread = services.thread_of_media_token(embed, request.GET.get("media"))
        if thread is None and embed.auth_mode != Embed.AuthMode.JWT:
            thread = services.clean_visitor_key(request.headers.get("X-Visitor"))
    conversation = services.find_conversation(embed, thread) if embed is not None and thread else None
    media = None
    if embed is not None and conversation is not None:
        media = generated_store.find(filename, conversation_id=conversation.pk, organization_id=embed.organization_id)
    response = served_generated(media, request)
    if response is None:
        return json_error(404, "not_found", GENERATED_NOT_FOUND)
    # The widget draws it on the customer's page, another origin.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
