"""Apps: the applications agents published (capabilities/artifacts) — mine / shared with me, one app with
its version history and share dialog, and the page itself at its stable link.

The page (`raw`) is served with the sandbox's own policy (capabilities/artifacts/sandbox.py): an opaque
origin, `connect-src 'none'`, nothing remote but the library bundle. The console frames it with
`sandbox="allow-scripts"` (never allow-same-origin), so the page can reach neither the network nor the console.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt, xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from agenticos.errors import Invalid
from agenticos.models import Membership
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get
from capabilities.artifacts import access, sandbox, services
from capabilities.artifacts.models import Artifact
from capabilities.visuals import frame as visual_frames
from console.base import console_view, screen


def _artifact(actor: Actor, artifact_id: Any, level: str = access.VIEW) -> tuple[Artifact, str]:
    artifact = org_get(actor, Artifact, artifact_id)
    return artifact, access.require_access(actor, artifact, level)


@console_view("agents:view")
def app_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    qs = access.visible_artifacts(actor).select_related("agent", "owner").order_by("-updated_at", "pk")
    rows = list(qs)
    mine = [a for a in rows if a.owner_id == actor.user_id]
    shared = [a for a in rows if a.owner_id != actor.user_id]
    return screen(request, "console/apps.html", {"nav": "apps", "mine": mine, "shared": shared})


@console_view("agents:view")
def app_detail(request: HttpRequest, actor: Actor, artifact_id: Any) -> HttpResponse:
    artifact, level = _artifact(actor, artifact_id)
    versions = list(artifact.versions.order_by("-number").only("number", "format", "size", "created_at", "run_id"))
    shown = _version_number(request, artifact)
    can_share = access.GRANTS.at_least(level, access.EDIT) and actor.has(access.SHARE_PERMISSION)
    members: list[Membership] = []
    if can_share:
        qs = Membership.objects.filter(organization=actor.organization, is_suspended=False).select_related("user")
        if artifact.owner_id is not None:
            qs = qs.exclude(user_id=artifact.owner_id)
        members = list(qs.order_by("user__email"))
    return screen(request, "console/apps_detail.html", {
        "nav": "apps", "artifact": artifact, "level": level, "versions": versions, "shown": shown,
        "can_share": can_share, "grants": access.GRANTS.holders(artifact) if can_share else [], "members": members,
        "levels": access.LEVELS, "raw_url": reverse("console-apps:raw", args=[artifact.pk]) + f"?version={shown}",
    })


def _version_number(request: HttpRequest, artifact: Artifact) -> int:
    raw = request.GET.get("version", "")
    return int(raw) if digits_only(raw) and 0 < int(raw) <= artifact.current_version else artifact.current_version


@xframe_options_sameorigin
@console_view("agents:view")
def app_raw(request: HttpRequest, actor: Actor, artifact_id: Any) -> HttpResponse:
    artifact, _level = _artifact(actor, artifact_id)
    version = artifact.versions.filter(number=_version_number(request, artifact)).first()
    if version is None:
        raise Http404("No version yet.")
    response = HttpResponse(sandbox.document(version.format, version.content, artifact.title or artifact.name),
                            content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = sandbox.policy(f"{request.scheme}://{request.get_host()}")
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, no-store"
    return response


# The document a drawing's frame loads (visuals.js): it takes the drawing from its parent by message and writes it
# in place. A srcdoc frame would inherit the parent page's Content-Security-Policy on top of its own (the console
# admits no inline script), so a drawing's scripts and handlers could not run; a frame loaded from this URL has
# only the policy below (the sandbox, no network, the library bundle, the map tiles) and the drawing's own meta
# policy, which narrows it (no script at all but the frame's own while the drawing streams).
VISUAL_FRAME = (
    '<!doctype html><html><head><meta charset="utf-8"></head><body><script>addEventListener("message",function(e){'
    'var d=e.data;if(e.source!==parent||!d||d.agenticos!=="document")return;'
    'document.open();document.write(String(d.html));document.close()});'
    'parent.postMessage({agenticos:"frame_ready"},"*")</script></body></html>'
)


@require_GET
@xframe_options_exempt  # the website widget draws on its customers' pages: any page may frame it
def visual_frame(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(VISUAL_FRAME, content_type="text/html; charset=utf-8")
    origin = f"{request.scheme}://{request.get_host()}"
    # The drawings' own policy (capabilities/visuals/frame.py), but for its base: a drawing on a customer's page
    # names this server as its base (visuals.js), which its own meta policy admits.
    policy = visual_frames.policy(origin).replace("base-uri 'none'", f"base-uri {origin}/")
    response["Content-Security-Policy"] = "sandbox allow-scripts; " + policy
    response["X-Content-Type-Options"] = "nosniff"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "public, max-age=300"
    return response


@require_GET
def app_library(request: HttpRequest, name: str) -> FileResponse:
    """The library bundle, the one remote source a page or a drawing may load (sandbox.LIBRARY_PATH). Public
    code, served to anyone: a sandboxed frame is an opaque origin that sends no cookies, and it loads an ES
    module (three.js) only with `Access-Control-Allow-Origin`. Only the listed files; nothing else is a path."""
    if name not in sandbox.LIBRARY_FILES:
        raise Http404("No such library.")
    content_type = "text/css; charset=utf-8" if name.endswith(".css") else "text/javascript; charset=utf-8"
    response = FileResponse((sandbox.LIBRARY_DIR / name).open("rb"), content_type=content_type)
    response["Access-Control-Allow-Origin"] = "*"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_POST
@console_view("agents:view")
def app_share(request: HttpRequest, actor: Actor, artifact_id: Any) -> HttpResponse:
    artifact, _level = _artifact(actor, artifact_id)
    action = request.POST.get("action", "")
    if action == "visibility":
        services.set_visibility(actor=actor, artifact=artifact, visibility=request.POST.get("visibility", ""))
        messages.success(request, _("Who can open it was changed."))
    elif action == "grant":
        user_id = request.POST.get("user_id", "")
        if not digits_only(user_id):
            raise Invalid(_("Choose a member."), details={"field": "user_id"})
        services.share(actor=actor, artifact=artifact, user_id=int(user_id), level=request.POST.get("level", ""))
        messages.success(request, _("Shared."))
    elif action == "revoke":
        user_id = request.POST.get("user_id", "")
        services.revoke(actor=actor, artifact=artifact, user_id=int(user_id) if digits_only(user_id) else 0)
        messages.success(request, _("Access removed."))
    else:
        raise Invalid(_("Unknown action."))
    return redirect(reverse("console-apps:detail", args=[artifact.pk]))
