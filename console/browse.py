"""The console page of a browse's live view (`/browse/{run_id}/{call_id}`); the socket does the rest."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from agenticos.tenancy import Actor
from capabilities.browser import live
from console.base import console_view, screen


@console_view()
def browse_live(request: HttpRequest, actor: Actor, run_id: str, call_id: str) -> HttpResponse:
    run, can_control = live.viewer_of(actor, run_id)
    return screen(request, "console/browse_live.html", {
        "nav": "activity", "run": run, "call_id": call_id, "can_control": can_control,
        "socket_path": f"/ws/browse/{run.pk}/{call_id}/",
        "control_minutes": live.CONTROL_SECONDS // 60,
    })
