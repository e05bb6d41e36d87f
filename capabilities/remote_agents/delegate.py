"""A remote agent as a delegate: the spec's `external_agents`, called with the same `task` tool.

The delegation library runs a delegate as a pydantic-ai `Agent` (its sync and background execution, chat
traces, panels, cancellation). A remote agent is one too, whose **model** is the remote agent: `A2AModel`
answers a model request with one A2A `message/send` of the latest request, and keeps the remote `contextId`
on the response (`provider_details`). The library carries a delegation's messages into its follow-ups
(`chat_trace_id`), so a follow-up sends the same `contextId` and continues that remote conversation, while
two tasks sent at once are two histories with one context each. Wrapping this way, rather than a second
delegation path, is why nothing of the library is rewritten here.

Before each call the run's budget is checked (`governance.metered.check`, after the run's unrecorded spend is
written); after an answer arrives the call is written to the ledger at zero and **partial**: what a call costs
is the remote provider's price, which nobody publishes. An `input-required` or `auth-required` task, a failed
one and an unreachable agent all come back as text saying so, and the parent run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import DeferredToolRequests
from subagents_pydantic_ai.prompts import get_task_instructions_prompt

from agenticos import netguard
from capabilities.remote_agents import client

if TYPE_CHECKING:
    from capabilities.lifecycle import RunHandle
    from capabilities.subagents.delegates import BuiltDelegate, DelegationContext

logger = logging.getLogger(__name__)

KIND = "remote_agent"  # SpendEntry.kind of an A2A call
CONTEXT_KEY = "a2a_context_id"
_SENTINEL = "\x00"
# The library wraps the parent's task in its own framing; a remote agent is sent the task as written.
_BEFORE, _AFTER = get_task_instructions_prompt(_SENTINEL, can_ask_questions=False).split(_SENTINEL)


class RemoteAgentMissing(Exception):
    """The spec names a registration that no longer exists: the run fails naming it."""


def latest_request(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            prompts = [p.content for p in message.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
            if prompts:
                text = prompts[-1]
                if text.startswith(_BEFORE) and text.endswith(_AFTER):
                    text = text[len(_BEFORE):len(text) - len(_AFTER)]
                return text
    return ""


def carried_context(messages: list[ModelMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, ModelResponse) and message.provider_details:
            found = message.provider_details.get(CONTEXT_KEY)
            if found:
                return str(found)
    return None


def answer_text(name: str, answer: client.Answer) -> str:
    said = answer.text.strip()
    if answer.state in ("completed", "message"):
        return said or f"The remote agent {name} answered with nothing."
    if answer.state == "input-required":
        return (f"The remote agent {name} needs more input before it can go on (input-required): "
                f"{said or 'it said nothing more'}. To answer it, send a follow-up task with this delegation's "
                "chat trace id.")
    if answer.state == "auth-required":
        return (f"The remote agent {name} needs authorization first (auth-required): {said or 'it said nothing more'}. "
                "It cannot be given here; say so in your answer.")
    return f"The remote agent {name} did not complete the task ({answer.state}): {said or 'no reason given'}."


class A2AModel(Model):
    """The remote agent, reached as a model (see the module docstring). A plain class, not a dataclass: the
    base `Model` has a `label` property, which a dataclass field of that name would take as its default."""

    def __init__(self, *, name: str, registration_id: str, card: dict[str, Any], endpoint_url: str,
                 key: str | None, dctx: DelegationContext) -> None:
        super().__init__()
        self.name = name
        self.registration_id = registration_id
        self.card = card
        self.endpoint_url = endpoint_url
        self._key = key  # from the vault; never in a repr, a log line or a frame
        self.dctx = dctx

    def __repr__(self) -> str:
        return f"A2AModel(name={self.name!r}, registration_id={self.registration_id!r})"

    @property
    def model_name(self) -> str:
        return f"a2a:{self.name}"

    @property
    def system(self) -> str:
        return "a2a"

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        context_id = carried_context(messages)
        text, new_context = await self._call(latest_request(messages), context_id)
        details = {CONTEXT_KEY: new_context or context_id or ""}
        return ModelResponse(parts=[TextPart(content=text)], model_name=self.model_name, provider_name="a2a",
                             provider_details=details)

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: Any = None) -> AsyncGenerator[StreamedResponse]:
        # message/send answers at once; where a panel draws the delegation, the answer is one text part.
        response = await self.request(messages, model_settings, model_request_parameters)
        yield CompletedStreamedResponse(response, model_request_parameters=model_request_parameters,
                                        replay_events=True)

    async def _call(self, text: str, context_id: str | None) -> tuple[str, str | None]:
        from governance import metered

        ex: RunHandle | None = self.dctx.execution
        if ex is None:
            return f"The remote agent {self.name} is called only inside a run.", None
        run = ex.run
        meter = metered.Meter(organization_id=run.organization_id, kind=KIND, run_id=run.pk,
                              agent_id=run.agent_id, embed_id=run.embed_id, surface=run.surface,
                              agent_budget=ex.spec.budget.monthly_usd)
        await ex.db(ex.record_spend)
        await ex.db(metered.check, meter)  # raises BudgetExceeded: nothing is sent
        try:
            answer = await client.send(self.card, self.endpoint_url, text, key=self._key, context_id=context_id)
        except netguard.Refused as exc:
            return f"The remote agent {self.name} could not be reached: {exc} Carry on without it.", None
        except Exception as exc:  # a transport error can quote the URL or a header: only its kind
            refusal = netguard.refusal_in(exc)
            reason = str(refusal) if refusal is not None else type(exc).__name__
            logger.info("remote agent %s unreachable: %s", self.registration_id, reason)
            return f"The remote agent {self.name} could not be reached ({reason}). Carry on without it.", None
        await ex.db(metered.record, meter, model=self.model_name, cost=Decimal("0"), partial=True, chat=False)
        self._count()
        return answer_text(self.name, answer), answer.context_id or None

    def _count(self) -> None:
        from capabilities.subagents.delegates import CURRENT_TASK, DelegateUsage

        task_id = CURRENT_TASK.get()
        if task_id is not None:
            spent = self.dctx.usage.setdefault(task_id, DelegateUsage())
            spent.requests += 1
            spent.partial = True


def remote_delegates(dctx: DelegationContext, parent_spec: Any) -> list[BuiltDelegate]:
    """The spec's `external_agents`, each from its registration in this organization. One deleted since
    publish fails the run, naming it (AssemblyError), as the catalog says."""
    from agents.run_handle import AssemblyError, RunDeps
    from capabilities.remote_agents.models import RemoteAgent
    from capabilities.subagents.delegates import BuiltDelegate, _delegate_deps, _uuids

    entries = list(getattr(parent_spec, "external_agents", []) or [])
    if not entries:
        return []
    rows = {str(r.pk): r for r in RemoteAgent.objects.filter(
        organization_id=dctx.organization_id, pk__in=_uuids([e.remote_agent_id for e in entries])
    ).select_related("secret")}
    out: list[BuiltDelegate] = []
    for entry in entries:
        row = rows.get(str(entry.remote_agent_id))
        if row is None:
            raise AssemblyError(f"The remote agent {entry.name} ({entry.remote_agent_id}) this version delegates to "
                                "was deleted. Edit the agent and publish again.")
        from agenticos import vault

        key = vault.reveal(row.secret) if row.secret is not None else None
        model = A2AModel(name=entry.name, registration_id=str(row.pk), card=row.card, endpoint_url=row.endpoint_url,
                         key=key, dctx=dctx)
        agent: Agent[RunDeps, Any] = Agent(model, output_type=[str, DeferredToolRequests], deps_type=RunDeps,
                                           retries=0, name=entry.name)
        deps = _delegate_deps(dctx, agent_id=dctx.parent_deps.agent_id, version_id=dctx.parent_deps.version_id)
        out.append(BuiltDelegate(name=entry.name, description=entry.description or row.description or row.name,
                                 agent=agent, deps=deps, kind="remote", mode=entry.mode, agent_id=None,
                                 max_steps=2))
    return out
