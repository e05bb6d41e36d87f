"""The console's notifications page: mine in this organization; opening one marks it read and follows its link."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_POST

from agenticos.tenancy import Actor
from console.base import console_view, screen
from notifications import services


@console_view()
def notification_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    page = Paginator(services.mine(actor).order_by("-created_at"), 50).get_page(request.GET.get("page"))
    return screen(request, "console/notifications.html", {"nav": "notifications", "page": page})


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
    path("notifications/<uuid:notification_id>/open", notification_open, name="open"),
]
