"""Publish checks of a binding that only the draft's model can answer: a setting that can never run on it
(native web search or a named tool-search algorithm on a provider without them, reasoning on a model that does
not reason). The model's abilities are pydantic-ai's answer (`Model.profile`), not a list kept here.

Each capability asks from its own `publish_problems` hook (capabilities/lifecycle.py) with `binding_on_model`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_ai.models import Model


@dataclass(frozen=True)
class BoundOnModel:
    index: int  # the binding's position in data["capabilities"]
    config: Any  # the binding's config, parsed by the capability's config model
    model: Model  # the draft's model (never sent a request)
    label: str  # the model profile's label, for messages

    def native_tool_kinds(self) -> frozenset[str]:
        """The `kind` of each native tool the model supports ("web_search", "tool_search", …): pydantic-ai
        keeps some of those classes private (ToolSearchTool), their kinds are public."""
        return frozenset(getattr(tool, "kind", "") for tool in self.model.profile.get("supported_native_tools", ()))

    def reasons(self) -> bool:
        profile = self.model.profile
        return bool(profile.get("supports_thinking") or profile.get("thinking_always_enabled"))


def binding_on_model(actor: Any, data: dict[str, Any], capability_id: str,
                     config_model: type[BaseModel]) -> BoundOnModel | None:
    """The enabled binding of `capability_id` in the draft with the draft's model, or None when there is
    nothing to judge (not bound, switched off, a config or a model profile the other checks already refuse)."""
    from agents.models import ModelProfile
    from agents.providers import model_features

    bindings = data.get("capabilities") if isinstance(data, dict) else None
    if not isinstance(bindings, list):
        return None
    found = next(((i, b) for i, b in enumerate(bindings) if isinstance(b, dict) and b.get("id") == capability_id),
                 None)
    if found is None or found[1].get("enabled", True) is False:
        return None
    index, binding = found
    try:
        config = config_model.model_validate(binding.get("config") or {})
    except ValidationError:
        return None
    try:
        profile_id = uuid.UUID(str(data.get("model_profile_id")))
    except ValueError:  # none, or not an id: refused as a reference already
        return None
    profile = ModelProfile.objects.filter(organization=actor.organization, pk=profile_id).first()
    if profile is None:
        return None
    model = model_features(profile)
    if model is None:
        return None
    return BoundOnModel(index=index, config=config, model=model, label=profile.label)
