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
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from agenticos import audit, vault
from agenticos.errors import Invalid
from agenticos.queries import Insert, Update, write_together
from agenticos.tenancy import Actor
from agents import branches
from agents.chat import own_conversation, start_member_run
from agents.models import Conversation, Message, ModelProfile, Surface
from agents.services import agent_and_version
from agents.spec import AgentSpec
from calls import tools
from calls.realtime import CallTool, SessionConfig
from calls.tools import ToolBox
from capabilities import registry
from capabilities.guardrails.config import GuardrailsConfig
from capabilities.guardrails.screen import Screen
from governance import metered, pricing
from governance.grants import USE

PASS_WORK = "pass_work"  # noqa: S105 (a tool name, "Pasar trabajo")
ASK_USER = "ask_user_question"
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
    call_id: uuid.UUID = field(default_factory=uuid.uuid4)
    screens: dict[str, Screen | None] = field(default_factory=dict)

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
    """The call's live tools (calls.tools), built for this caller, agent version and conversation."""
    if not plan.spec.model_profile_id:
        return tools.ToolBox(toolset=None, context=None)
    try:
        return tools.build_toolbox(actor=plan.actor, spec=plan.spec, agent_id=plan.agent_id,
                                   version_id=plan.version_id, conversation_id=plan.conversation_id,
                                   call_id=plan.call_id)
    except ModelProfile.DoesNotExist:
        raise Invalid("The text model this agent's version names no longer exists; choose another in the "
                      "Builder and publish.", code="no_text_model") from None


def may_decide(plan: CallPlan) -> bool:
    return plan.actor.has("approvals:decide")


def record_decision(plan: CallPlan, *, call_id: str, tool_name: str, capability_id: str, approved: bool) -> None:
    """A decision on a tool of a call, audited as a parked call's decision is (governance.services)."""
    plan.actor.require("approvals:decide")
    status = "approved" if approved else "rejected"
    with transaction.atomic():
        audit.record(actor=plan.actor.user, organization=plan.actor.organization, action=f"approval.{status}",
                     target_type="call_tool", target_id=call_id[:64],
                     target_name=f"{tool_name} in a voice call with {plan.agent_name}",
                     details={"conversation_id": str(plan.conversation_id), "call": str(plan.call_id),
                              "tool": tool_name, "capability": capability_id, "via": "call"})


def drop_if_empty(plan: CallPlan) -> None:
    """A call that made its conversation and stored nothing in it (the provider refused, nobody spoke) leaves
    no empty conversation in the person's list."""
    if plan.created_conversation:
        Conversation.objects.filter(pk=plan.conversation_id, organization=plan.actor.organization,
                                    messages__isnull=True, runs__isnull=True).delete()


def provider_key(plan: CallPlan) -> str:
    """The realtime profile's key, from the vault, for the connection only (never kept on the plan)."""
    profile = ModelProfile.objects.select_related("secret").get(pk=plan.profile_id,
                                                                organization=plan.actor.organization)
    return vault.reveal(profile.secret)


def record_turn(plan: CallPlan, *, role: str, text: str) -> int | None:
    """One transcript as a turn of the call's conversation (the person's, or the agent's)."""
    text = text.strip()
    if not text:
        return None
    user = plan.actor.user
    author = user if role == Message.Role.USER else None
    message = Message(conversation_id=plan.conversation_id, parent_id=branches.leaf(plan.conversation_id),  # type: ignore[misc]
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
    metered.record(plan.meter, model=plan.model, cost=cost, partial=partial,
                   input_tokens=int(usage.get("input_tokens") or 0),
                   output_tokens=int(usage.get("output_tokens") or 0), chat=False)
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
