"""A throwaway capability with everything the publish check looks at: a key requirement that depends on
config, a provider-executed tool, a scope, and a config with ranges."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.toolsets import FunctionToolset

from capabilities import registry
from capabilities.base import Capability, KeyRequirement, ToolDecl, tool_text


class ProbeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: Literal["free", "paid"] = "free"
    limit: int = Field(default=5, ge=1, le=20)


def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.

    Returns:
        The answer text.
    """
    return f"answer to {query}"


def _build(ctx):
    return [FunctionToolset([lookup])]


PROBE = Capability(
    id="probe_search",
    name="Probe search",
    category="research",
    description="A capability that exists only in tests.",
    tools=(
        ToolDecl.from_function(lookup, side_effecting=True),
        ToolDecl(
            id="native_search",
            description=tool_text(what="Search at the provider.", when="Never here.", returns="Results."),
            provider_executed=True,
        ),
    ),
    scopes=("web:read",),
    key=KeyRequirement(
        kind="api_key",
        description="The paid provider's API key",
        required_when=lambda config: config.provider == "paid",
        when="when provider is paid",
    ),
    config_model=ProbeConfig,
    selectable=True,
    build=_build,
)

BROWSER = Capability(
    id="probe_browser",
    name="Probe browser",
    category="research",
    description="Needs a scope the test deployment does not grant.",
    tools=(),
    scopes=("web:browse",),
    build=lambda ctx: [],
)


@pytest.fixture
def probe_capabilities(settings):
    settings.DEFAULT_GRANTED_SCOPES = ["web:read", "code:execute", "conversations:read"]
    registry.register(PROBE)
    registry.register(BROWSER)
    yield
    registry.unregister(PROBE.id)
    registry.unregister(BROWSER.id)
