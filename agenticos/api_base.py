"""The one API base class: authenticate, resolve the organization, check the declared permission."""

from __future__ import annotations

from typing import Any

from rest_framework import generics
from rest_framework.request import Request

from agenticos.models import ApiKey
from agenticos.tenancy import HEADER, Actor, org_get, org_queryset, resolve_actor


class OrgAPIView(generics.GenericAPIView):
    # Every org-scoped endpoint derives from this (a comment, not a docstring: drf-spectacular would
    # show a docstring as every endpoint's description). `permission_map` maps an HTTP method to the
    # permission it needs ("*" for any method); the actor is `self.actor`; every read goes through
    # `self.org_queryset` / `self.org_get`.

    permission_map: dict[str, str] = {}
    actor: Actor

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        api_key = request.auth if isinstance(request.auth, ApiKey) else None
        self.actor = resolve_actor(
            request, user=request.user, api_key=api_key, header_org=request.META.get(HEADER)
        )
        needed = self.permission_map.get(request.method or "GET") or self.permission_map.get("*")
        if needed:
            self.actor.require(needed)

    def org_queryset(self, model):
        return org_queryset(self.actor, model)

    def org_get(self, model, pk, queryset=None):
        return org_get(self.actor, model, pk, queryset)

    def client_ip(self) -> str | None:
        return self.request.META.get("REMOTE_ADDR")
