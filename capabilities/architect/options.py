"""What this organization can give a new agent, for the person the run acts for: its chat models, the
collections the person may bind, the capabilities of the catalog (and the keys the organization holds for those
that need one, by name), and the organization's monthly budget. Names and ids only — never a secret's value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenticos.tenancy import Actor


def setup_options(actor: Actor) -> dict[str, Any]:
    from agenticos.models import Secret
    from agents.models import ModelProfile
    from capabilities import registry
    from knowledge.grants import unusable_collection_ids, visible_collections

    org = actor.organization
    profiles = ModelProfile.objects.filter(organization=org, kind=ModelProfile.Kind.CHAT).order_by("label")
    visible = list(visible_collections(actor).order_by("name").values_list("pk", "name", "description"))
    unusable = set(unusable_collection_ids(actor, [pk for pk, _, _ in visible]))
    secrets: dict[str, list[dict[str, str]]] = {}
    for pk, name, kind in Secret.objects.filter(organization=org).order_by("name").values_list("pk", "name", "kind"):
        secrets.setdefault(kind, []).append({"id": str(pk), "name": name})
    capabilities = []
    for cap in registry.all_capabilities():
        if not cap.selectable:
            continue
        entry: dict[str, Any] = {"id": cap.id, "name": cap.name, "offers": cap.offers or cap.description,
                                 "settings": sorted(cap.config_schema().get("properties", {}))}
        if cap.key is not None:
            entry["needs_key"] = {"kind": cap.key.kind, "when": cap.key.when,
                                  "secrets": secrets.get(cap.key.kind, [])}
        capabilities.append(entry)
    budget = org.monthly_budget_usd
    return {
        "models": [{"id": str(p.pk), "label": p.label, "provider": p.provider, "model": p.model} for p in profiles],
        "collections": [{"id": str(pk), "name": name, "description": description[:200]}
                        for pk, name, description in visible if str(pk) not in unusable],
        "capabilities": capabilities,
        "organization_monthly_budget_usd": str(budget) if budget is not None else None,
    }
