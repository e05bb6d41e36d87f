"""What other apps' signals leave in people's notifications."""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch, reverse


def approval_requested(sender: Any = None, *, run_id: Any, approval_ids: list[str] | tuple[str, ...] = (),
                       **_kwargs: Any) -> None:
    """A run parked on gated calls: everyone who may decide them reads it in the bell (the Approvals page counts
    them too). Sent after the parking commits; one notification per person per parking."""
    from agents.models import Run
    from governance.models import Approval
    from governance.services import deciders
    from notifications.models import Notification
    from notifications.services import notify_each

    run = Run.objects.select_related("agent", "user").filter(pk=run_id).first()
    if run is None:
        return
    tools = sorted(set(Approval.objects.filter(run=run, pk__in=list(approval_ids), status=Approval.Status.PENDING)
                       .values_list("tool_name", flat=True)))
    recipients = deciders(run.organization_id)
    if not tools or not recipients:
        return
    who = (run.user.get_full_name() or run.user.email) if run.user is not None else "A visitor"
    text = f"{run.agent.name} waits for a decision: {who}'s run wants to use {', '.join(tools)}."
    try:
        link = reverse("console:approvals")
    except NoReverseMatch:  # a deployment serving the API only has no console page to link to
        link = ""
    notify_each(organization_id=run.organization_id, recipient_ids=recipients,
                kind=Notification.Kind.APPROVAL_REQUESTED, text=text, link=link)
