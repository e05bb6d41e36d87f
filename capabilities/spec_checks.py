"""What is wrong with an agent spec, all at once, each with its field path: the checks publishing runs (and the
Builder, the Architect's proposal, the tool builder's turns and an evaluation's draft run ask before it).

They live in the catalog, not beside publishing (agents.services), because they ask every capability
(capabilities.registry, the `publish_problems` lifecycle hooks) and because capabilities that write specs (the
Architect, the tool builder) check theirs here without reaching up into the runner's services (issue 38).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db import models
from pydantic import ValidationError

from agenticos.models import Secret
from agenticos.strings import digits_only
from agents.diff import format_path
from agents.models import Agent, Environment, ModelProfile
from agents.spec import AgentSpec, dump_spec
from capabilities import lifecycle
from capabilities.custom_tools.budget import slot_problems

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

PRODUCTION = "production"

# Spec reference lists → the model that must hold each id in the same organization. A model that does
# not exist yet (its app's issue has not landed) holds nothing, so every id in that list is dangling.
REFERENCE_MODELS: dict[str, tuple[str, str, str]] = {
    "collection_ids": ("knowledge", "Collection", "collection"),
    "context_ids": ("knowledge", "ContextFile", "context file"),
    "skill_ids": ("knowledge", "Skill", "skill"),
    "custom_tool_ids": ("capabilities", "CustomTool", "custom tool"),
}

Problem = dict[str, str]


def problem(field: str, message: str) -> Problem:
    return {"field": field, "message": message}


def as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


def uuids(values: Any) -> list[uuid.UUID]:
    """The well-formed ids among `values` (a malformed one cannot match a row anyway)."""
    return [u for u in (as_uuid(v) for v in values or []) if u is not None]


def list_field(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def structural_problems(data: Any) -> tuple[AgentSpec | None, list[Problem]]:
    """Parse a spec; every pydantic problem with a readable path (`capabilities[clock].approval`)."""
    if not isinstance(data, dict):
        return None, [problem("spec", "The spec must be an object.")]
    try:
        return AgentSpec.model_validate(data), []
    except ValidationError as exc:
        return None, [
            problem(format_path(err["loc"], data) or "spec",
                     "Unknown field." if err["type"] == "extra_forbidden" else err["msg"])
            for err in exc.errors()
        ]


def _model_exists(app_label: str, model_name: str) -> type[models.Model] | None:
    try:
        return apps.get_model(app_label, model_name)
    except LookupError:
        return None


def reference_problems(
    actor: Actor, data: dict[str, Any], *, agent: Agent | None = None, require_model: bool = True
) -> list[Problem]:
    """Dangling references in a (possibly invalid) spec dict: model profile, secrets, knowledge, sub-agents."""
    org = actor.organization
    problems: list[Problem] = []
    profile_id = data.get("model_profile_id")
    if profile_id:
        profile = ModelProfile.objects.filter(organization=org, pk__in=uuids([profile_id])).only("kind").first()
        if profile is None:
            problems.append(problem("model_profile_id", f"No model profile {profile_id} in this organization."))
        elif profile.kind != ModelProfile.Kind.CHAT:
            problems.append(problem("model_profile_id", "The model profile must be a chat model."))
    elif require_model:
        problems.append(problem("model_profile_id", "Choose a model profile before publishing."))
    realtime_id = data.get("realtime_profile_id")
    if realtime_id and not ModelProfile.objects.filter(organization=org, pk__in=uuids([realtime_id]),
                                                       kind=ModelProfile.Kind.REALTIME).exists():
        # Said without the id: the Builder shows it at the Voice card's picker, where a person reads names.
        problems.append(problem("realtime_profile_id", "The voice model for calls is not one of this "
                                                        "organization's realtime voice models: choose another, or none."))

    bindings = list_field(data, "capabilities")
    seen: set[str] = set()
    secret_refs: dict[str, str] = {}
    for index, binding in enumerate(bindings):
        if not isinstance(binding, dict):
            continue
        path = format_path(("capabilities", index), data)
        cap_id = binding.get("id")
        if isinstance(cap_id, str):
            if cap_id in seen:
                problems.append(problem(f"{path}.id", f"The capability {cap_id} is bound twice."))
            seen.add(cap_id)
        if binding.get("secret_id"):
            secret_refs[f"{path}.secret_id"] = str(binding["secret_id"])
    if secret_refs:
        found = {
            str(pk)
            for pk in Secret.objects.filter(
                organization=org, pk__in=uuids(secret_refs.values())
            ).values_list("pk", flat=True)
        }
        for path, secret_id in secret_refs.items():
            if str(as_uuid(secret_id)) not in found:
                problems.append(problem(path, f"No secret {secret_id} in this organization."))
            elif not actor.has("secrets:view"):
                problems.append(problem(path, "Your role cannot use secrets."))

    for field, (app_label, model_name, noun) in REFERENCE_MODELS.items():
        ids = list_field(data, field)
        if not ids:
            continue
        model = _model_exists(app_label, model_name)
        found = set()
        if model is not None:
            found = {str(pk) for pk in model._default_manager.filter(organization=org, pk__in=uuids(ids))
                     .values_list("pk", flat=True)}
        # A collection can be private: binding one needs `use` on it (role or grant, knowledge/grants.py).
        # One the agent's latest *published* version already binds stays bindable (someone who could use it
        # published it), so an editor without access can still publish the rest of the spec. Not the draft's:
        # a draft is saved with its references unchecked, so "already in the draft" would let anyone with edit
        # on an agent bind any private collection whose id they know and publish it.
        unusable: set[str] = set()
        if field == "collection_ids" and found:
            from knowledge.grants import unusable_collection_ids

            published = (agent.versions.filter(number__gt=0).order_by("-number").values_list("spec", flat=True)
                         .first() if agent is not None and agent.pk else None)
            already = {str(as_uuid(x)) for x in list_field(published or {}, field)}
            unusable = set(unusable_collection_ids(actor, sorted(found - already)))
        for index, ref in enumerate(ids):
            key = str(as_uuid(ref))
            if key not in found:
                problems.append(problem(f"{field}[{index}]", f"No {noun} {ref} in this organization."))
            elif key in unusable:
                problems.append(problem(f"{field}[{index}]", f"You need use access to the {noun} {ref} to bind it."))

    subagents = list_field(data, "subagents")
    for index, sub in enumerate(subagents):
        if not isinstance(sub, dict) or not sub.get("agent_id"):
            continue
        path = f"{format_path(('subagents', index), data)}.agent_id"
        target_ids = uuids([sub["agent_id"]])
        if agent is not None and agent.pk in target_ids:
            problems.append(problem(path, "An agent cannot be its own sub-agent."))
        elif not Environment.objects.filter(agent__organization=org, agent_id__in=target_ids, name=PRODUCTION).exists():
            problems.append(problem(path, f"No published agent {sub['agent_id']} in this organization."))
    # The checks that need the person publishing, each capability's own (capabilities/lifecycle.py).
    for check in lifecycle.hooks("publish_problems"):
        problems += [problem(p["field"], p["message"]) for p in check(actor, data, format_path)]
    return problems


def _can_view_secret(actor: Actor) -> Callable[[Any], bool]:
    def check(secret_id: Any) -> bool:
        return actor.has("secrets:view") and Secret.objects.filter(
            organization=actor.organization, pk__in=uuids([secret_id])
        ).exists()

    return check


def capability_problems(actor: Actor, spec: AgentSpec) -> list[Problem]:
    """The capability registry's checks. Imported here, not at the top: the registry imports every capability,
    and some of them import this module. (No `except ImportError`: a broken import must fail publish loudly.)"""
    from capabilities.registry import validate_bindings

    found = validate_bindings(spec, organization=actor.organization, can_view_secret=_can_view_secret(actor)) or []
    data = dump_spec(spec)
    problems = []
    for item in found:
        if isinstance(item, dict):
            field = str(item.get("field") or item.get("path") or "capabilities")
            problems.append(problem(_keyed_path(field, data), str(item.get("message") or item)))
        else:
            problems.append(problem("capabilities", str(item)))
    return problems


def _keyed_path(field: str, data: dict) -> str:
    """"capabilities.3.config.x" → "capabilities[clock].config.x" (the registry reports positions)."""
    parts: list[Any] = [int(p) if digits_only(p) else p for p in re.split(r"\.|\[|\]\.?", field) if p != ""]
    return format_path(tuple(parts), data) if parts else field


def publish_problems(actor: Actor, data: Any, *, agent: Agent | None = None) -> list[Problem]:
    """Everything wrong with a spec, all at once, each with its field path."""
    spec, problems = structural_problems(data)
    from_registry = capability_problems(actor, spec) if spec is not None else []
    if isinstance(data, dict):
        # The registry knows capabilities best; keep ours only where it said nothing about that field.
        claimed = {p["field"] for p in from_registry}
        problems += [p for p in reference_problems(actor, data, agent=agent) if p["field"] not in claimed]
        problems += slot_problems(data, actor.organization.pk)
    return problems + from_registry
