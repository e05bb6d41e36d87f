"""The console's notifications page: mine in this organization; opening one marks it read and follows its link.
Which kinds also come by e-mail is each person's choice here (notifications.services.set_email_kinds)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.tenancy import Actor
from console.base import console_view, screen
from notifications import services
from notifications.models import Notification


def email_choices() -> list[tuple[str, str]]:
    """Each kind of notification in the words of the page."""
    return [
        (Notification.Kind.APPROVAL_REQUESTED, _("A run waits for my decision on a tool call")),
        (Notification.Kind.CAPABILITY_REQUEST, _("Someone asks for a tool one of my agents lacks")),
        (Notification.Kind.ROLLOUT_ROLLED_BACK, _("A rollout of my agent was rolled back by itself")),
    ]


@console_view()
def notification_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    page = Paginator(services.mine(actor).order_by("-created_at"), 50).get_page(request.GET.get("page"))
    return screen(request, "console/notifications.html", {
        "nav": "notifications", "page": page, "email_choices": email_choices(),
        "email_kinds": services.email_kinds(actor), "email_address": getattr(actor.user, "email", ""),
    })


@require_POST
@console_view()
def notification_email(request: HttpRequest, actor: Actor) -> HttpResponse:
    kinds = services.set_email_kinds(actor=actor, kinds=request.POST.getlist("kinds"))
    messages.success(request, _("Saved: these also come by e-mail.") if kinds else _("Saved: nothing comes by e-mail."))
    return redirect("notifications:list")


@require_POST
@console_view()
def notification_open(request: HttpRequest, actor: Actor, notification_id: str) -> HttpResponse:
    found = services.mark_read(actor=actor, notification_id=notification_id)
    return redirect(found.link or "notifications:list")


@require_POST
@console_view()
def notification_read_all(request: HttpRequest, actor: Actor) -> HttpResponse:
    services.mark_all_read(actor=actor)
    return redirect("notifications:list")


app_name = "notifications"
urlpatterns = [
    path("notifications/", notification_list, name="list"),
    path("notifications/read", notification_read_all, name="read-all"),
    path("notifications/email", notification_email, name="email"),
    path("notifications/<uuid:notification_id>/open", notification_open, name="open"),
]
