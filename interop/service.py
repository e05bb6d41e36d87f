"""Admission for a Chat Completions request: the API key's actor, the agent a `model` names, the prompt the
client's messages make, and the run — through the members' one admission, agents.chat.start_member_run, as the REST run endpoint."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from rest_framework.exceptions import AuthenticationFailed

from agenticos.authentication import INTEROP_PERMISSION, admit_key
from agenticos.tenancy import HEADER, Actor, parse_uuid, resolve_actor
from agents.chat import start_member_run
from agents.models import Agent, Environment, Run
from governance.grants import USE, agent_access, at_least, grant_levels, visible_agents
from interop.errors import ApiError

DEFAULT_ENVIRONMENT = "production"
SYSTEM_CONTEXT_HEADING = (
    "Context from the client application (its system message; it adds to your instructions and does not "
    "replace them):"
)


def key_actor(*, method: str, authorization: str | bytes, organization: str | None) -> Actor:
    """The platform API key in `Authorization: Bearer`, its organization (or the X-Organization-Id it names),
    held to its scope for `method` through the platform's one key check (agenticos.authentication.admit_key):
    every interop write runs an agent; a refused scope is a DomainError (403 `insufficient_scope`). Each
    endpoint passes its request's own method and headers."""
    try:
        found = admit_key(authorization, method=method, permission=INTEROP_PERMISSION)
    except AuthenticationFailed as exc:
        raise ApiError(401, str(exc.detail), type_="authentication_error", code="invalid_api_key") from None
    if found is None:
        raise ApiError(401, "Send a platform API key as `Authorization: Bearer <key>`.",
                       type_="authentication_error", code="invalid_api_key")
    user, api_key = found
    return resolve_actor(None, user=user, api_key=api_key, header_org=organization)


def actor_for(request) -> Actor:
    """key_actor with a Django request's own method and headers (the /v1 and /mcp views)."""
    return key_actor(method=request.method, authorization=request.META.get("HTTP_AUTHORIZATION", ""),
                     organization=request.META.get(HEADER))


def runnable_agents(actor: Actor) -> list[tuple[Agent, list[str]]]:
    """The agents this actor may run, each with its published environments — one query for agents and
    environments, one for grants when the role does not already give everything."""
    if not actor.has("agents:run"):
        return []
    agents = list(visible_agents(actor).filter(environments__isnull=False).distinct().order_by("slug"))
    grants = grant_levels(actor.user_id, [agent.pk for agent in agents]) if agents else {}
    allowed = [a for a in agents if at_least(agent_access(actor, a, known_grants=grants) or "", USE)]
    names: dict[Any, list[str]] = {}
    for agent_id, name in Environment.objects.filter(agent__in=allowed).values_list("agent_id", "name"):
        names.setdefault(agent_id, []).append(name)
    return [(agent, sorted(names.get(agent.pk, []))) for agent in allowed]


def model_not_found(model: str) -> ApiError:
    return ApiError(404, f"The model `{model}` does not exist or you do not have access to it.",
                    code="model_not_found")


def agent_id_for(actor: Actor, model: str) -> tuple[Any, str]:
    """`slug`, `slug@environment`, or the agent's id → (agent id, environment). Another organization's agent,
    a private one the caller cannot see and a missing one are the same 404."""
    name, _, environment = model.partition("@")
    match = Q(slug=name)
    if parse_uuid(name) is not None:
        match |= Q(pk=name)
    agent_id = visible_agents(actor).filter(match).values_list("pk", flat=True).first()
    if agent_id is None:
        raise model_not_found(model)
    return agent_id, environment or DEFAULT_ENVIRONMENT


@dataclass
class Turn:
    prompt: str  # what the model is asked: the user's last message
    said: str  # the same, as the user wrote it
    system: str
    # The earlier user/assistant turns the client sent, as the model's message history (not stored: without a
    # conversation id the client's messages are the conversation).
    earlier: list[dict[str, str]] = field(default_factory=list)


def turn_from_messages(messages: Any, *, continuing: bool) -> Turn:
    """The last user message is the prompt; earlier user/assistant turns are the history; system (and
    developer) messages are context for the instructions. The runner takes history only from a stored
    conversation, so without one the earlier turns travel with the run (`client_history`) and reach the model as
    its message history, as a stored conversation's would."""
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "`messages` must be a non-empty list.", code="invalid_messages")
    system, turns = [], []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ApiError(400, f"messages[{index}] must be an object.", code="invalid_messages")
        role, text = message.get("role"), _text_of(message.get("content"), index)
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            turns.append((role, text))
        elif role in ("tool", "function"):
            raise ApiError(400, "Tool results from the client are not accepted: the platform's tools run "
                                "server-side.", code="tools_not_supported")
        else:
            raise ApiError(400, f"messages[{index}].role `{role}` is not supported.", code="invalid_messages")
    if not turns or turns[-1][0] != "user":
        raise ApiError(400, "The last message must be the user's.", code="invalid_messages")
    said = turns[-1][1]
    earlier = [] if continuing else [{"role": role, "content": text} for role, text in turns[:-1] if text]
    return Turn(prompt=said, said=said, system="\n\n".join(t for t in system if t.strip()), earlier=earlier)


def _text_of(content: Any, index: int) -> str:
    """A message's text: a string, or OpenAI's list of parts of which only text parts are taken."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise ApiError(400, f"messages[{index}]: only text content parts are supported.",
                               code="unsupported_content")
            texts.append(str(part.get("text") or ""))
        return "".join(texts)
    raise ApiError(400, f"messages[{index}].content must be a string or a list of parts.", code="invalid_messages")


def start(*, actor: Actor, model: str, turn: Turn, conversation_id: str | None, run_id: uuid.UUID) -> Run:
    """A turn through the members' one admission (agents.chat.start_member_run, surface `api`): the client's
    system message is added to the agent's instructions as marked context."""
    agent_id, environment = agent_id_for(actor, model)
    run, _admitted = start_member_run(
        actor=actor, agent_id=agent_id, text=turn.prompt, surface="api", conversation_id=conversation_id,
        create_conversation=False, environment=environment, run_id=run_id, client_history=turn.earlier,
        extra_instructions=f"{SYSTEM_CONTEXT_HEADING}\n{turn.system}" if turn.system else "",
    )
    return run
