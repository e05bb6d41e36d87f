"""Feedback on answers (agents.feedback) in Activity: the list with its comments, and a 👎 made an evaluation case
of its agent in one click (evals.services.case_from_feedback)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.tenancy import Actor
from agents import feedback as feedback_service
from agents.models import Feedback
from console import selectors
from console.base import console_view, screen
from evals import services as evals
from governance.grants import EDIT, at_least


def page_feedback(run_ids: list[Any]) -> dict[str, dict[str, int]]:
    """The 👍 / 👎 counts of a page of runs (one query): Activity's column."""
    counts: dict[str, dict[str, int]] = {}
    for row in Feedback.objects.filter(run_id__in=run_ids).values("run_id", "rating"):
        slot = counts.setdefault(str(row["run_id"]), {"up": 0, "down": 0})
        slot[row["rating"]] += 1
    return counts


@console_view("agents:view")
def feedback_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    rating = request.GET.get("rating", "")
    visible = {str(a.pk): level for a, level in selectors.agents_with_access(actor)}
    qs = feedback_service.organization_feedback(actor).filter(agent_id__in=list(visible))
    if rating in Feedback.Rating.values:
        qs = qs.filter(rating=rating)
    page = Paginator(qs.order_by("-updated_at"), 50).get_page(request.GET.get("page"))
    rows = [{"feedback": f, "can_make_case": f.rating == Feedback.Rating.DOWN and at_least(visible.get(str(f.agent_id)), EDIT)}
            for f in page]
    return screen(request, "console/feedback.html", {
        "nav": "activity", "page": page, "rows": rows, "rating": rating, "ratings": Feedback.Rating.choices,
    })


@require_POST
@console_view("agents:view")
def feedback_to_case(request: HttpRequest, actor: Actor, feedback_id: int) -> HttpResponse:
    feedback = feedback_service.feedback_for(actor, feedback_id)
    case = evals.case_from_feedback(actor=actor, feedback=feedback)
    messages.success(request, _("The answer is now the case “%(name)s” of the suite “%(suite)s”.")
                     % {"name": case.name, "suite": case.suite.name})
    return redirect(reverse("console-evals:list", args=[feedback.agent_id]))
