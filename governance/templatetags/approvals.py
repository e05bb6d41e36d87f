"""`{% pending_approvals as n %}`: how many calls wait for a decision, for the nav's Approvals link."""

from __future__ import annotations

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_approvals(context: template.Context) -> int:
    request = context.get("request")
    actor = getattr(request, "actor", None) if request is not None else None
    if actor is None:
        return 0
    from governance.services import pending_count

    return pending_count(actor)
