"""Which of the agents app's rows a person may read, for every layer that serves them one (web chat, the
capabilities' own pages and APIs, the surfaces). Kernel and models only, so the capabilities can use it without
importing web chat (agents.chat, a layer above them: the contract in pyproject.toml)."""

from __future__ import annotations

from agenticos.errors import NotFound
from agenticos.tenancy import Actor, org_get
from agents.models import Run


def member_run(actor: Actor, run_id) -> Run:
    """A run the actor may see: their own, or any of the organization's with runs:view."""
    qs = Run.objects.filter(organization=actor.organization).select_related("agent", "version")
    if not actor.has("runs:view"):
        qs = qs.filter(user_id=actor.user_id)
    try:
        return org_get(actor, Run, run_id, queryset=qs)
    except NotFound:
        raise NotFound("Run not found.") from None
