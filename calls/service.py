"""A voice call with an agent: admission, the call's fixed tools, its turns, its spend and its hand-offs.

Everything here is sync (ORM) and called from the consumer through `database_sync_to_async`.

- `admit` is the whole check before anything reaches the provider: the run right, the agent at USE in
  production, the caller's own conversation (another member's is not found), the organization's realtime model
  profile, and every budget cap (`governance.metered.check`): a refused call opened no provider connection.
- The call's tools come from the catalog's `voice` field (capability-catalog, "La columna Voz"): `hand_off`
  capabilities are reached through one tool, "Pasar trabajo" (`pass_work`), which starts a run of the agent's
  text model through the one runner; `ask_user` asks on a card in the call view; `never` ones are left out.
- Each transcript is a turn of the conversation (a `Message`), after the guardrails of its edge.
- `live` capabilities run in the call itself (calls.tools: built by the registry, gated as a text run's tools);
  a tool that needs approval waits for the caller's decision on a card when they may decide
  (`approvals:decide`), and the decision is audited like any approval.
- `thinking` maps to the realtime model's reasoning setting; the agent's spec names its realtime profile
  (`realtime_profile_id`), else the organization's first.
- Each `response.done` is priced (genai-prices, audio tokens apart) and written through the one metered path.
- A connected call is a run (`start_call_run`): a `Run` row marked `voice_call`, running for as long as the call
  lasts, beaten by the consumer (`beat`) and ended with it (`end_call`). Its turns, its tool calls (`ToolCall`
  rows), its gated calls (`Approval` rows, decided through governance.services like a parked run's) and its
  spend (the ledger rows and the run's totals) are the run's, as a text run's are — so Activity, the run's
  page, the runs API and every tool that reads its run see it. Why a run and not a record of its own:
  docs/architecture.md, "Voice calls".
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from agenticos import secret_access, vault
from agenticos.errors import Invalid, NotFound
from agenticos.queries import Insert, Update, write_together
from agenticos.tenancy import Actor
from agents import branches
from agents.chat import own_conversation, start_member_run
from agents.models import Conversation, Message, ModelProfile, Run, RunStatus, Surface, ToolCall
from agents.run_handle import result_for_storage
from agents.runner import finish
from agents.runs import stop_signalled
from agents.services import agent_and_version
from agents.spec import AgentSpec
from calls import tools
from calls.realtime import CallTool, SessionConfig
from calls.tools import ToolBox
from capabilities import registry
from capabilities.guardrails.config import GuardrailsConfig
from capabilities.guardrails.screen import Screen
from governance import metered, pricing, signals
from governance import services as governance
from governance.grants import USE
from governance.models import Approval

PASS_WORK = "pass_work"  # noqa: S105 (a tool name, "Pasar trabajo")
ASK_USER = "ask_user_question"
# The capability each of the call's own functions stands for, on its ToolCall row (the registry's tools carry theirs).
CAPABILITY_OF = {ASK_USER: "ask_user", tools.LOAD_SKILL: "skills"}
CALL_TITLE = "Voice call"
MAX_TASK_CHARS = 4000

CALL_NOTE = (
    "You are talking with the person in a live voice call. Speak briefly and naturally; never read out long "
    "lists, code or links."
)
HAND_OFF_NOTE = (
    "Some work takes your text model: {names}. For that, call pass_work with the whole task in one sentence; it "
    "runs in the background while you keep talking, and its result comes back to you as a message to tell the "
    "person."
)


@dataclass(frozen=True)
class CallCapabilities:
    """What a call can do for an agent, by the catalog's `voice` field (the Builder's Voice card reads this)."""

    live: tuple[str, ...] = ()
    hand_off: tuple[str, ...] = ()
    never: tuple[str, ...] = ()


def call_capabilities(spec: AgentSpec) -> CallCapabilities:
    return capabilities_in_a_call([binding.id for binding in spec.capabilities if binding.enabled])


def capabilities_in_a_call(capability_ids: list[str]) -> CallCapabilities:
    """The enabled capabilities split by how they join a call (the catalog's `voice` field)."""
    split: dict[str, list[str]] = {"live": [], "hand_off": [], "never": []}
    for capability_id in capability_ids:
        try:
            capability = registry.get(capability_id)
        except registry.UnknownCapability:
            continue
        split[capability.voice].append(capability.id)
    return CallCapabilities(tuple(split["live"]), tuple(split["hand_off"]), tuple(split["never"]))


def voice_card(draft_spec: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """The Builder's Voice card: what a call can and cannot do for this agent, by name, from its draft (read
    as stored: a draft may not validate yet, and the card still says what its bindings would do)."""
    bindings = [b for b in (draft_spec or {}).get("capabilities") or [] if isinstance(b, dict)]
    split = capabilities_in_a_call([str(b.get("id")) for b in bindings if b.get("enabled", True) is not False])

    def named(ids: tuple[str, ...]) -> list[dict[str, str]]:
        return [{"id": cid, "name": registry.get(cid).name} for cid in ids]

    return {"live": named(split.live), "hand_off": named(split.hand_off), "never": named(split.never)}


def call_tools(spec: AgentSpec, capabilities: CallCapabilities) -> tuple[CallTool, ...]:
    tools: list[CallTool] = []
    if capabilities.hand_off:
        tools.append(CallTool(
            name=PASS_WORK,
            description="Pasar trabajo: hand a task to your text model, which can "
                        + ", ".join(registry.get(cid).name.lower() for cid in capabilities.hand_off)
                        + ". It runs in the background; keep talking while it works.",
            parameters={"type": "object", "properties": {"task": {
                "type": "string", "description": "The whole task, as you would ask a colleague."}},
                "required": ["task"]}))
    if "ask_user" in capabilities.live:
        tools.append(CallTool(
            name=ASK_USER,
            description="Ask the person a question on a card in the call view, when a choice is easier to read "
                        "than to hear.",
            parameters={"type": "object", "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}, "maxItems": 6}},
                "required": ["question"]}))
    return tuple(tools)


def _guardrails(spec: AgentSpec) -> GuardrailsConfig | None:
    for binding in spec.capabilities:
        if binding.id == "guardrails" and binding.enabled:
            return GuardrailsConfig.model_validate(binding.config)
    return None


@dataclass
class CallPlan:
    """An admitted call: who, which agent and version, which conversation, which model, what it may do."""

    actor: Actor
    agent_id: Any
    agent_name: str
    version_id: Any
    conversation_id: Any
    created_conversation: bool
    profile_id: Any
    model: str
    base_url: str
    session: SessionConfig
    capabilities: CallCapabilities
    meter: metered.Meter
    spec: AgentSpec
    # The call's run id (the tools see it from the start; its row is written when the call connects).
    call_id: uuid.UUID = field(default_factory=uuid.uuid4)
    screens: dict[str, Screen | None] = field(default_factory=dict)
    run_started: bool = False

    def screen(self, edge: str) -> Screen | None:
        return self.screens.get(edge)


def realtime_profile(actor: Actor, spec: AgentSpec) -> ModelProfile:
    """The realtime profile the agent's spec names, else the organization's first (by label)."""
    profiles = ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.REALTIME,
                                           provider="openai").select_related("secret")
    if spec.realtime_profile_id:
        wanted = _uuid_or_none(spec.realtime_profile_id)
        profile = profiles.filter(pk=wanted).first() if wanted is not None else None
        if profile is None:
            raise Invalid("The realtime voice model this agent names no longer exists; choose another in the "
                          "Builder and publish.", code="no_realtime_model")
    else:
        profile = profiles.order_by("label").first()
    if profile is None or profile.secret is None:
        raise Invalid("This organization has no realtime voice model: an admin adds a model profile of kind "
                      "Realtime voice (OpenAI) with its key.", code="no_realtime_model")
    return profile


def admit(*, actor: Actor, agent_id: Any, conversation_id: Any = None) -> CallPlan:
    """Every check before the provider is called; raises a DomainError or `budgets.BudgetExceeded`."""
    actor.require("agents:run")
    agent, version = agent_and_version(actor=actor, agent_id=agent_id, level=USE)
    conversation = own_conversation(actor, conversation_id, agent, draft=False) if conversation_id else None
    spec = AgentSpec.model_validate(version.spec)
    profile = realtime_profile(actor, spec)
    meter = metered.for_agent(actor.organization.pk, agent.pk, kind=metered.VOICE_CALL, surface=Surface.WEB)
    metered.check(meter)
    capabilities = call_capabilities(spec)
    instructions = "\n\n".join(part for part in (
        spec.instructions.strip(), CALL_NOTE,
        HAND_OFF_NOTE.format(names=", ".join(registry.get(c).name for c in capabilities.hand_off))
        if capabilities.hand_off else "") if part)
    voice = str((profile.settings or {}).get("voice") or "alloy")
    session = SessionConfig(instructions=instructions, tools=call_tools(spec, capabilities), voice=voice,
                            reasoning_effort=reasoning_effort(spec))
    created = conversation is None
    if conversation is None:
        conversation = Conversation.objects.create(
            organization=actor.organization, agent=agent, owner=actor.user, surface=Surface.WEB, title=CALL_TITLE)
    guard = _guardrails(spec)
    screens = {edge: Screen.for_edge(guard, edge) if guard else None for edge in ("in", "out", "tool")}
    return CallPlan(actor=actor, agent_id=agent.pk, agent_name=agent.name, version_id=version.pk,
                    conversation_id=conversation.pk, created_conversation=created, profile_id=profile.pk,
                    model=profile.model, base_url=profile.base_url, session=session, capabilities=capabilities,
                    meter=meter, spec=spec, screens=screens)


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


# Thinking's portable effort → the realtime model's reasoning effort (OpenAI's: minimal, low, medium, high).
REASONING_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high",
                    "max": "high"}


def reasoning_effort(spec: AgentSpec) -> str | None:
    """The catalog's "mapeada": a bound, enabled `thinking` becomes the realtime model's own reasoning setting
    (its effort, or medium when the author left the provider's default); without it the call sends none."""
    for binding in spec.capabilities:
        if binding.id == "thinking" and binding.enabled:
            return REASONING_EFFORT.get(str((binding.config or {}).get("effort") or "medium"), "medium")
    return None


def toolbox(plan: CallPlan) -> ToolBox:
    """The call's live tools (calls.tools), built for this caller, agent version and conversation; a text model
    that is gone is a readable refusal (calls.tools.text_profile)."""
    if not plan.spec.model_profile_id:
        return tools.ToolBox(toolset=None, context=None)
    return tools.build_toolbox(actor=plan.actor, spec=plan.spec, agent_id=plan.agent_id, version_id=plan.version_id,
                               conversation_id=plan.conversation_id, call_id=plan.call_id)


def may_decide(plan: CallPlan) -> bool:
    return plan.actor.has("approvals:decide")


def decide(plan: CallPlan, *, call_id: str, approved: bool) -> None:
    """The caller's decision on a gated call of their call, through the one decision service (its audit, its
    broadcast to the run's group — which the call hears and acts on, wherever the decision was made)."""
    approval = Approval.objects.filter(run_id=plan.call_id, organization=plan.actor.organization,
                                       tool_call_id=call_id).first()
    if approval is None:
        raise NotFound("That call is not waiting for a decision.")
    governance.decide_approval(actor=plan.actor, approval=approval, decision="approve" if approved else "reject",
                               via="call")


def drop_if_empty(plan: CallPlan) -> None:
    """A call that made its conversation and stored nothing in it (the provider refused, nobody spoke) leaves
    no empty conversation in the person's list — nor a run of it that did nothing (no tool call, no spend); a
    call that ran a tool or spent keeps its run and so its conversation."""
    if not plan.created_conversation:
        return
    empty = Conversation.objects.filter(pk=plan.conversation_id, organization=plan.actor.organization,
                                        messages__isnull=True)
    runs = Run.objects.filter(conversation_id=plan.conversation_id)
    if (runs.exclude(options__voice_call=True).exists() or runs.filter(cost_usd__gt=0).exists()
            or ToolCall.objects.filter(run__conversation_id=plan.conversation_id).exists()):
        return
    empty.delete()


# Endings after which a call that stored nothing leaves nothing (`drop_if_empty`): the person dialled and left.
# One that failed, was stopped, blocked or ran out of budget keeps its run to be read, even with nothing said.
QUIET_ENDINGS = frozenset({"hung_up", "left"})


def start_call_run(plan: CallPlan, opened: secret_access.RunUses | None = None) -> None:
    """The call's run, written once the provider took the call: running from now (a worker never takes it:
    it is never queued), under the caller's authority, marked a voice call. Its spend goes on its ledger.
    `opened`: the secrets opened to connect, audited in the same statement (as a text run's step writes its)."""
    now = timezone.now()
    run = Run(
        id=plan.call_id, organization=plan.actor.organization, agent_id=plan.agent_id, version_id=plan.version_id,
        conversation_id=plan.conversation_id, surface=Surface.WEB, user=plan.actor.user,
        acting_role=plan.actor.role or "", status=RunStatus.RUNNING, started_at=now, heartbeat_at=now,
        options={"voice_call": True, "realtime_model": plan.model})
    write_together(Insert([run]), *_secret_uses(plan, opened))
    plan.meter = replace(plan.meter, run_id=plan.call_id)
    plan.run_started = True


def beat(plan: CallPlan) -> bool:
    """The call is alive (the stale sweep ends a call's run whose beat stops: its process is gone). True when
    someone asked to stop the run (its page, the runs API): the consumer then ends the call."""
    stopping = Run.objects.filter(pk=plan.call_id, organization=plan.actor.organization, status=RunStatus.RUNNING)
    if not stopping.update(heartbeat_at=timezone.now()):
        return True  # ended elsewhere (a sweep, a stop of a parked state): the call has no run to go on in
    return stop_signalled(plan.call_id) or stopping.filter(cancel_requested=True).exists()


# How the consumer's ending reasons end the call's run.
ENDINGS: dict[str, tuple[str, dict[str, str]]] = {
    "hung_up": (RunStatus.COMPLETED, {}),
    "left": (RunStatus.CANCELLED, {"type": "CallerLeft", "message": "The caller's page closed without hanging up."}),
    "stopped": (RunStatus.CANCELLED, {"type": "Cancelled", "message": "Stopped by request."}),
    "budget_exceeded": (RunStatus.BUDGET_EXCEEDED, {"type": "BudgetExceeded",
                                                    "message": "A budget cap was used up during the call."}),
    "guardrail_blocked": (RunStatus.GUARDRAIL_BLOCKED, {"type": "GuardrailBlocked",
                                                        "message": "One of this agent's guardrails ended the call."}),
    "provider_closed": (RunStatus.FAILED, {"type": "ProviderClosed",
                                           "message": "The voice model closed the call."}),
}


def end_call(plan: CallPlan, reason: str, detail: str = "") -> None:
    """The call's run ends with the call: completed when the person hung up, else failed, cancelled, blocked or
    over budget as the call ended. Its transcript, tool calls and spend stay as written."""
    if not plan.run_started:
        return
    status, error = ENDINGS.get(reason, (RunStatus.FAILED, {"type": "CallFailed", "message": detail[:300]
                                                            or "The call ended on an error."}))
    if reason == "provider_error" and detail:
        error = {"type": "ProviderError", "message": detail[:300]}
    last = (Message.objects.filter(run_id=plan.call_id, role=Message.Role.ASSISTANT).order_by("-id")
            .values_list("content", flat=True).first())
    finish.end_live(plan.call_id, status, error, output=last or "")


def tool_started(plan: CallPlan, *, call_id: str, name: str, capability_id: str, args: dict[str, Any]) -> None:
    """A live tool call as a text run's is written (agents.runner.transcript): a row on the call's run."""
    ToolCall.objects.update_or_create(run_id=plan.call_id, tool_call_id=call_id[:200], defaults={
        "tool_name": name[:200], "capability_id": capability_id, "args": result_for_storage(args),
        "status": ToolCall.Status.RUNNING, "started_at": timezone.now()})


def tool_finished(plan: CallPlan, *, call_id: str, output: str, ok: bool,
                  opened: secret_access.RunUses | None = None) -> None:
    """Its result as the model read it (after the guardrails), or its error; with the secrets the call of it
    opened (`secret.used` of the call's run, its person the actor), in one statement."""
    try:
        stored: Any = json.loads(output)
    except ValueError:
        stored = output
    write_together(Update(ToolCall.objects.filter(run_id=plan.call_id, tool_call_id=call_id[:200]), {
        "result": result_for_storage(stored), "status": ToolCall.Status.OK if ok else ToolCall.Status.ERROR,
        "finished_at": timezone.now()}), *_secret_uses(plan, opened))


def _secret_uses(plan: CallPlan, opened: secret_access.RunUses | None) -> list[Insert]:
    if opened is None:
        return []
    rows = secret_access.pending_rows(opened, organization_id=plan.actor.organization.pk,
                                      user_id=plan.actor.user.pk if plan.actor.user is not None else None,
                                      api_key_id=None, surface=Surface.WEB)
    return [Insert(rows)] if rows else []


def tool_parked(plan: CallPlan, *, call_id: str, name: str, capability_id: str, args: dict[str, Any]) -> str:
    """A gated call waits for a decision as a parked run's does: its row parked, an `Approval` of the call's run
    (the Approvals page lists it, those who may decide are told), decided in the call view or anywhere else.
    Returns the approval's id."""
    with transaction.atomic():
        ToolCall.objects.filter(run_id=plan.call_id, tool_call_id=call_id[:200]).update(status=ToolCall.Status.PARKED)
        approval = Approval.objects.create(
            organization=plan.actor.organization, run_id=plan.call_id, tool_call_id=call_id[:200], tool_id=name[:200],
            tool_name=name[:200], capability_id=capability_id, args=result_for_storage(args))
        transaction.on_commit(partial(signals.send, signals.approval_requested, run_id=plan.call_id,
                                      approval_ids=[str(approval.pk)]))
    return str(approval.pk)


def provider_key(plan: CallPlan) -> str:
    """The realtime profile's key, from the vault, for the connection only (never kept on the plan)."""
    profile = ModelProfile.objects.select_related("secret").filter(pk=plan.profile_id,
                                                                   organization=plan.actor.organization).first()
    if profile is None or profile.secret is None:  # deleted (or its key removed) since the call was admitted
        raise Invalid("This agent's realtime voice model no longer exists or has no key; an admin sets one in "
                      "Model profiles.", code="no_realtime_model")
    return vault.reveal(profile.secret)


def record_turn(plan: CallPlan, *, role: str, text: str) -> int | None:
    """One transcript as a turn of the call's conversation (the person's, or the agent's)."""
    text = text.strip()
    if not text:
        return None
    user = plan.actor.user
    author = user if role == Message.Role.USER else None
    message = Message(conversation_id=plan.conversation_id, parent_id=branches.leaf(plan.conversation_id),  # type: ignore[misc]
                      run_id=plan.call_id if plan.run_started else None,
                      version_id=plan.version_id, role=role, author=author,
                      author_label=str(author) if author else "", content=text,
                      parts=[{"type": "text", "text": text, "voice": True}])
    write_together(Insert([message]), Update(Conversation.objects.filter(pk=plan.conversation_id),
                                             {"last_active_at": timezone.now()}))
    return message.pk


def record_usage(plan: CallPlan, usage: dict[str, Any] | None) -> Decimal:
    """One realtime response's spend on the ledger; then every cap again (raises `BudgetExceeded` when the
    call has used one up, and the consumer ends the call)."""
    usage = usage if isinstance(usage, dict) else {}
    cost, partial = pricing.price_realtime(plan.model, "openai", usage)
    # The realtime model is the call's own model: its tokens and its request count on the call's run, as a text
    # run's model's do (metered.record with chat=True).
    metered.record(plan.meter, model=plan.model, cost=cost, partial=partial,
                   input_tokens=int(usage.get("input_tokens") or 0),
                   output_tokens=int(usage.get("output_tokens") or 0), chat=plan.run_started)
    metered.check(plan.meter)
    return cost


def hand_off(plan: CallPlan, *, task: str, run_id: uuid.UUID) -> Any:
    """Pasar trabajo: a run of the agent's text model in the call's conversation, through the one runner."""
    task = (task or "").strip()[:MAX_TASK_CHARS]
    if not task:
        raise Invalid("A hand-off needs a task.", code="empty_task")
    run, _admitted = start_member_run(actor=plan.actor, agent_id=plan.agent_id, text=task, surface=Surface.WEB,
                                      conversation_id=plan.conversation_id, create_conversation=False,
                                      run_id=run_id)
    return run.pk
