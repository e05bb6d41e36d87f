"""Publish checks of the coding agent that need the whole spec or the publisher's organization (the config alone
is checked by `CodingAgentConfig`): meant to be called beside `capabilities.subagents.publish.delegate_problems`
from `capabilities.spec_checks.reference_problems`.

- the coding agent runs in the agent's sandbox: `sandbox` must be bound and enabled, on the `service` backend
  with its shell (`include_execute`) — stored files have nowhere to run a harness;
- the bound key must fit the harness: a key saved for the other provider is refused, naming what the harness
  takes (an OpenAI key bound to Claude Code would publish and then fail every task). A `custom` secret fits both,
  and with `base_url` the key is the gateway's, so Claude Code takes any. Whose key it is is read from its
  documented prefix (sk-ant-… Anthropic, sk-… OpenAI) inside this function; the value goes nowhere else. A
  ChatGPT sign-in (`codex_chatgpt`) fits Codex only, told by its kind without opening it;
- a `base_url` (a gateway the tenant names) passes the outbound guard (`agenticos/netguard.py`, the model
  providers' allowance), here and again before each task starts.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError


def coding_agent_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    from capabilities.coding_agent.capability import CodingAgentConfig

    bindings = [b for b in (data.get("capabilities") or []) if isinstance(b, dict)]
    binding = next((b for b in bindings if b.get("id") == "coding_agent" and b.get("enabled", True)), None)
    if binding is None:
        return []
    index = (data.get("capabilities") or []).index(binding)
    base = format_path(("capabilities", index), data)
    problems: list[dict[str, str]] = []
    sandbox = next((b for b in bindings if b.get("id") == "sandbox" and b.get("enabled", True)), None)
    sandbox_config = (sandbox or {}).get("config") or {}
    if sandbox is None:
        problems.append({"field": f"{base}.id", "message": "The coding agent works in the agent's sandbox: bind "
                         "sandbox on a sandbox connection (backend service) with its shell."})
    elif sandbox_config.get("backend", "state") != "service" or sandbox_config.get("include_execute") is False:
        problems.append({"field": f"{base}.id", "message": "The coding agent needs the sandbox on the service "
                         "backend with shell commands on (include_execute); stored files have no shell."})
    elif _on_daytona(actor.organization, sandbox_config.get("connection_id")):
        problems.append({"field": f"{base}.id", "message": "The coding agent runs as a background task, which a "
                         "Daytona sandbox connection cannot run: choose a sandboxd connection for the sandbox."})
    try:
        config = CodingAgentConfig.model_validate(binding.get("config") or {})
    except ValidationError:
        return problems  # the config's own errors are reported by the registry
    if config.base_url:
        problem = _gateway_problem(actor, config.base_url)
        if problem:
            problems.append({"field": f"{base}.config.base_url", "message": problem})
    secret_id = binding.get("secret_id")
    if secret_id:
        problem = _key_problem(actor.organization, str(secret_id), config)
        if problem:
            problems.append({"field": f"{base}.secret_id", "message": problem})
    return problems


def _gateway_problem(actor: Any, base_url: str) -> str | None:
    """The outbound guard's verdict on the gateway the tenant named, as for a model profile's base URL: a
    private, loopback, link-local or metadata address is refused unless the operator allows it
    (MODEL_ALLOWED_PRIVATE_HOSTS, named only to who may read the deployment's settings)."""
    from agenticos import netguard
    from agenticos.tenancy import sees_deployment_settings

    try:
        netguard.check_url_blocking(base_url, allowance=netguard.MODEL_HOSTS)
    except netguard.Refused as exc:
        return netguard.operator_text(exc) if sees_deployment_settings(actor) else str(exc)
    return None


def _on_daytona(organization: Any, connection_id: Any) -> bool:
    """Whether the sandbox names one of this organization's Daytona connections (another organization's id, or
    none, is the sandbox's own publish problem)."""
    from workspaces.models import SandboxConnection

    try:
        pk = uuid.UUID(str(connection_id))
    except ValueError:
        return False
    return SandboxConnection.objects.filter(pk=pk, organization=organization,
                                            kind=SandboxConnection.Kind.DAYTONA).exists()


def _key_problem(organization: Any, secret_id: str, config: Any) -> str | None:
    from agenticos import vault
    from agenticos.models import Secret
    from capabilities.coding_agent.capability import SIGN_IN, key_problem

    try:
        pk = uuid.UUID(secret_id)
    except ValueError:
        return None  # the registry says "No such secret"
    secret = Secret.objects.filter(pk=pk, organization=organization).first()
    if secret is None:
        return None  # refused by the registry, in the same words as another organization's
    if secret.kind == SIGN_IN:
        return key_problem(config, "", kind=secret.kind)  # its kind says it all: the sign-in stays sealed
    return key_problem(config, vault.reveal(secret), kind=secret.kind)
