"""Follow-ups (spec "Follow-ups"): suggested next steps under an answer, and setup cards.

- `suggest_next_steps` is declared (so a policy can name it and old specs keep their settings) and offered to
  nobody: the steps are written by a separate model (`model_profile_id`; unset = none) after the answer is
  committed, in a Celery task (`capabilities.follow_ups.service`), never by the main model, which neither calls
  it nor waits for it.
- `propose_setup` is the main model's: up to three cards — a trigger (routine), an agent, a connection — drawn
  under the answer from the stored tool call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from agents.run_handle import RunDeps
from capabilities.architect.proposal import AgentSetup
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset, tool_text
from capabilities.lifecycle import RunHandle, RunHooks

# The spec's fixed limits of the follow-up model's work.
MAX_STEPS = 3
TIMEOUT_SECONDS = 15.0
MAX_OUTPUT_TOKENS = 512
MAX_CARDS = 3
STEP_MAX_CHARS = 120


class FollowUpsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_profile_id: str | None = Field(
        default=None, title="Model for next steps",
        description="The model that writes the suggested next steps after each answer. Unset: no suggestions.")

    @field_validator("model_profile_id")
    @classmethod
    def _a_uuid(cls, value: str | None) -> str | None:
        import uuid

        if value in (None, ""):
            return None
        try:
            return str(uuid.UUID(str(value)))
        except ValueError:
            raise ValueError("must be a model profile id") from None


def organization_problems(config: FollowUpsConfig, organization: Any) -> list[tuple[str, str]]:
    """The next-steps model must be one of the publishing organization's chat profiles (the runtime filters by
    organization too, but a foreign id must be refused at publish like every other profile reference)."""
    if not config.model_profile_id:
        return []
    from agents.models import ModelProfile

    exists = ModelProfile.objects.filter(pk=config.model_profile_id, organization=organization,
                                         kind=ModelProfile.Kind.CHAT).exists()
    return [] if exists else [("model_profile_id", "No such chat model profile in this organization.")]


class SetupCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["trigger", "agent", "connection"]
    title: str = Field(min_length=1, max_length=80)
    detail: str = Field(default="", max_length=300)
    # trigger: a cron line or an event name to prefill; connection: the catalog key of the server, if any.
    schedule: str = Field(default="", max_length=120)
    server_key: str = Field(default="", max_length=80)
    # agent: the whole setup, when the proposer designed it (the Architect); the person accepts it as a draft.
    setup: AgentSetup | None = None


async def propose_setup(ctx: RunContext[RunDeps], cards: list[SetupCard]) -> dict:
    """Propose up to three things for the person to set up, drawn as cards under your answer.

    Use it when a request would be served better by something the person has not set up yet: a routine that
    runs on a schedule, an agent of their own, or a service to connect. Do not use it for the answer itself.

    Args:
        cards: one to three cards; each has kind (trigger, agent or connection), title (short), optional
            detail, optional schedule (for a trigger, e.g. '0 9 * * 1') and optional server_key (for a
            connection, the catalog key of the service: github, linear, notion, atlassian, sentry or stripe;
            leave it empty for any other MCP server) and optional setup (for an agent you designed: name,
            description, instructions, model_profile_id, capabilities [{id, config, secret_id}], collection_ids,
            knowledge_to_upload, monthly_budget_usd, where, and optional trigger {name, prompt, cron or
            every_seconds, timezone} when the agent runs on a schedule — ids as list_setup_options gives them).

    Returns:
        {"cards": [...]} as they will be drawn; more than three cards, or a setup naming something this
        organization does not offer the person, is refused with a message and nothing is drawn.
    """
    if not cards:
        return {"cards": [], "error": "Give at least one card."}
    if len(cards) > MAX_CARDS:
        return {"cards": [], "error": f"At most {MAX_CARDS} cards; nothing was drawn."}
    if any(card.setup is not None for card in cards):
        return await _checked(ctx.deps, cards)
    return draw(cards)


def draw(cards: list[SetupCard]) -> dict:
    """The cards as they are drawn (a connection naming a catalog service carries it)."""
    return {"cards": [_with_service(card.model_dump(mode="json", exclude_none=True)) for card in cards]}


async def _checked(deps: RunDeps, cards: list[SetupCard]) -> dict:
    """Agent setups are checked for the run's person as the console checks their draft (proposal.problems)
    and drawn with the names the person knows; one refused setup draws nothing."""
    from capabilities.architect import proposal
    from capabilities.architect.capability import run_actor

    def check() -> dict:
        actor = run_actor(deps.organization_id, deps.user_id)
        if actor is None:
            return {"cards": [], "error": "An agent setup needs a signed-in person to accept it; nothing was drawn."}
        if not actor.has("agents:edit"):
            return {"cards": [], "error": proposal.NOT_A_BUILDER}
        found = []
        for n, card in enumerate(cards):
            if card.setup is not None and card.kind != "agent":
                found.append(f"cards.{n}.setup: only an agent card carries a setup")
            elif card.setup is not None:
                found += [f"cards.{n}.setup.{p}" for p in proposal.problems(actor, card.setup)]
        if found:
            return {"cards": [], "error": proposal.refusal(found)}
        drawn = draw(cards)
        for card, data in zip(cards, drawn["cards"], strict=True):
            if card.setup is not None:
                data["setup"] = proposal.display(actor, card.setup)
        return drawn

    if deps.execution is not None:
        return await deps.execution.db(check)
    from asgiref.sync import sync_to_async

    return await sync_to_async(check)()


def _with_service(card: dict) -> dict:
    """A connection card that names a catalog service carries it (name, logo, the Connect address): the
    console draws the service's card (its Connect posts to /connections/catalog/<key>/connect); an unknown key is dropped, so the card opens the MCP servers page."""
    if card["kind"] != "connection" or not card["server_key"]:
        return card
    from django.templatetags.static import static

    from capabilities.mcp import catalog

    entry = catalog.get(card["server_key"])
    if entry is None or not entry.available:
        return {**card, "server_key": ""}
    return {**card, "service": {"key": entry.key, "name": entry.name, "logo": static(entry.logo)}}


SUGGEST = ToolDecl(
    id="suggest_next_steps",
    description=tool_text(
        what="Suggest up to three short next steps the person may want, shown as buttons under the answer.",
        when="Never called by the agent: a separate model writes the steps after the answer is saved.",
        returns="Nothing to the agent; the buttons appear under the answer.",
    ),
)
TOOLS = (SUGGEST, ToolDecl.from_function(propose_setup))


@dataclass
class ServiceCards(AbstractCapability[Any]):
    """Which catalog services the run's person has connected, in the instructions: the spec's agent "offers a
    connection card whenever a request needs a service the person has not connected", which it can only do if
    it knows which those are (a catalog server nobody connected is left out of the run without a word)."""

    text: str = ""

    def get_instructions(self):
        return self.text


def service_cards_text(organization_id: Any, user_id: int | None) -> str:
    from capabilities.mcp import catalog
    from capabilities.mcp.services import catalog_connected

    offered = [entry for entry in catalog.entries() if entry.available]
    if not offered:
        return ""
    connected = catalog_connected(organization_id, user_id)
    lines = [f"- {entry.name} (server_key {entry.key}): {entry.description} "
             + ("Connected." if entry.key in connected else "Not connected.") for entry in offered]
    return ("Services the person can connect with one click:\n" + "\n".join(lines) + "\n"
            "When a request needs one of these services and it is not connected, offer its card with propose_setup "
            "(kind connection, its server_key) instead of saying you cannot reach it; never offer a service that "
            "is connected already.")


# The AgenticOS starter agent (platform_bootstrap's AGENT_SLUG, which lives in a layer above this one).
STARTER_SLUG = "getting-started"

WELCOME_INTERVIEW = """This conversation is the welcome interview: it is the first anyone in this organization has \
had with you. Welcome the person in one sentence, then ask — one or two questions at a time, with \
ask_user_question when the answer is a choice — what they want agents to do for them, and which services their \
work lives in (code, issues, documents, chat, payments). End the interview with propose_setup: a connection card \
(kind connection, its server_key) for each service they named that is not connected, and, when they want an agent \
of their own, an agent card with its idea, which asks the Architect to design it. If they ask for something else \
straight away, help with that first."""


def is_welcome_interview(organization_id: Any, agent_id: str, conversation_id: str | None) -> bool:
    """The starter agent's first web conversation in its organization (spec: the AgenticOS agent ends its
    welcome interview with connection cards) — every turn of that conversation, and no other. One query."""
    from agenticos.tenancy import parse_uuid
    from agents.models import Conversation

    agent_pk = parse_uuid(agent_id)
    if not conversation_id or agent_pk is None:
        return False
    first = (Conversation.objects.filter(organization_id=organization_id, agent_id=agent_pk,
                                         agent__slug=STARTER_SLUG, surface="web")
             .order_by("created_at", "pk").values_list("pk", flat=True).first())
    return first is not None and str(first) == str(conversation_id)


def build(ctx: BuildContext) -> list[Built]:
    # Only propose_setup is offered: suggest_next_steps is the follow-up model's, after the answer.
    built: list[Built] = [function_toolset([propose_setup])]
    # Cards are the console's (spec: a chat app does not draw them): only web chat's person is told which services
    # wait for a Connect, and only there is the starter's first conversation its welcome interview.
    if ctx.deps.surface == "web" and ctx.deps.user_id is not None:
        text = service_cards_text(ctx.organization_id, ctx.deps.user_id)
        if is_welcome_interview(ctx.organization_id, ctx.deps.agent_id, ctx.deps.conversation_id):
            text = f"{WELCOME_INTERVIEW}\n\n{text}".strip()
        if text:
            built.append(ServiceCards(text=text))
    return built


def _after_answer(handle: RunHandle, message_id: int) -> None:
    """The answer is committed: its follow-ups are written by a task of their own (service.after_answer)."""
    from capabilities.follow_ups.service import after_answer, wanted

    if wanted(handle.run):
        after_answer(handle.run.pk, message_id)


CAPABILITY = Capability(
    id="follow_ups",
    name="Follow-ups",
    category="utility",
    description="Suggested next steps under each answer, written by a separate model after the answer, and "
                "cards proposing a routine, an agent or a connection to set up.",
    offers="suggested next steps as buttons under each answer, and setup cards",
    examples=("Show me three things I could ask next.", "Suggest a routine that sends me this every Monday."),
    never_does="It never gives the follow-up model tools or the agent's instructions, never suggests more than "
               "three steps, and never shows them on a widget, hosted page or raw socket.",
    tools=TOOLS,
    build=build,
    config_model=FollowUpsConfig,
    organization_check=organization_problems,
    voice="never",
    recommended=True,
    hooks=RunHooks(after_answer=_after_answer),
)
