"""What every console view shares: sign-in, the current organization, and domain errors as pages."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render

from agenticos.errors import DomainError, Forbidden, NotFound
from agenticos.tenancy import Actor

View = Callable[..., HttpResponse]


def console_view(permission: str | None = None) -> Callable[[View], View]:
    """Signed in, in an organization, holding `permission` (when given). A foreign object is a 404 page,
    a too-weak role a 403 page; other domain errors become a 400 page with the service's message."""

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            actor: Actor | None = getattr(request, "actor", None)
            if actor is None:
                return screen(request, "console/no_organization.html", status=403)
            try:
                if permission:
                    actor.require(permission)
                return view(request, actor, *args, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from None
            except Forbidden as exc:
                return screen(request, "console/forbidden.html", {"message": exc.message}, status=403)
            except DomainError as exc:
                return screen(request, "console/error.html", {"message": exc.message}, status=exc.status)

        return inner

    return wrap


def post_form(back: str, keep: tuple[str, ...] | None = None) -> Callable[[View], View]:
    """A form's POST URL that may answer with a page (its errors at their fields). Reloading that page, or
    following its address later, is a GET: it goes back to the page the form lives on (`back`, reversed with
    the URL's arguments — those named in `keep`, else all) instead of a bare 405."""

    def wrap(view: View) -> View:
        @functools.wraps(view)
        def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method in ("GET", "HEAD"):
                kept = kwargs if keep is None else {k: v for k, v in kwargs.items() if k in keep}
                return redirect(back, *args, **kept)
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return view(request, *args, **kwargs)

        return inner

    return wrap


def problems_by_field(exc: DomainError) -> dict[str, str]:
    """{"field path": "message"} from an Invalid's details, so a form shows each error at its field."""
    details = exc.details if isinstance(exc.details, dict) else {}
    found: dict[str, str] = {}
    for item in details.get("problems") or []:
        if isinstance(item, dict):
            found.setdefault(str(item.get("field") or "all"), str(item.get("message") or ""))
    if not found and details.get("field"):
        found[str(details["field"])] = exc.message
    return found


def can_map(actor: Actor | None) -> dict[str, bool]:
    """{"agents_edit": True, …}: what the actor's role allows, for templates (which cannot call has())."""
    from agenticos.permissions import PERMISSIONS

    return {p.replace(":", "_"): bool(actor and actor.has(p)) for p in PERMISSIONS}


def screen(request: HttpRequest, template: str, context: dict[str, Any] | None = None, *, status: int = 200
           ) -> HttpResponse:
    """render() plus `can` (the role's permissions) for the navigation and edit controls."""
    data = {"can": can_map(getattr(request, "actor", None)), **(context or {})}
    return render(request, template, data, status=status)
