"""`{% notifications_bell %}`: the header bell with the unread count (console/templates/console/_notifications_bell.html)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.inclusion_tag("console/_notifications_bell.html", takes_context=True)
def notifications_bell(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    actor = getattr(request, "actor", None) if request is not None else None
    if actor is None:
        return {"show": False}
    from notifications.services import unread_count

    return {"show": True, "unread": unread_count(actor)}
