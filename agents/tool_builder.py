"""The tool builder's session: the organization's built-in builder agent, each turn frozen on the chat model the
person chose and started as every run starts (agents.runs.start_run).

The builder's tools are a capability (capabilities.custom_tools.builder); the agent that uses them is made and run
here, beside the services that make and run agents — the catalog never reaches up into them (issue 38).
"""

from __future__ import annotations

from typing import Any

from capabilities.custom_tools.builder import BUILDER_INSTRUCTIONS, BUILDER_SLUG

# The builder's conversations belong to the Tools page, not the person's Chat list (agents.chat leaves out every
# conversation whose key starts with "builder:", like the Builder's test chat).
CONVERSATION_KEY = "builder:tools"


def builder_spec(model_profile_id: str | None) -> dict[str, Any]:
    return {
        "name": "Tool builder", "description": "Builds custom REST tools from a provider's documentation.",
        "instructions": BUILDER_INSTRUCTIONS, "model_profile_id": model_profile_id,
        "capabilities": [{"id": "web_research"}, {"id": "web_fetch"}, {"id": "tool_builder"}],
        "max_steps": 60,
    }


def chat_models(organization: Any):
    """The model profiles the builder may run on: the organization's chat models (never an embedding one)."""
    from agents.models import ModelProfile

    return ModelProfile.objects.filter(organization=organization, kind=ModelProfile.Kind.CHAT).order_by(
        "created_at", "label")


def default_model(organization: Any):
    """A sensible default: the first chat model connected that is not the offline demo (which answers from a
    script and cannot build anything), else the demo; None when there is no chat model at all."""
    models = list(chat_models(organization))
    return next((p for p in models if p.provider != "demo"), models[0] if models else None)


def session_model(session: Any):
    """The model the session's latest turn ran on, while it is still one of the organization's chat models."""
    from agents.models import Run

    if session.conversation_id is None:
        return None
    run = (Run.objects.filter(conversation_id=session.conversation_id).select_related("version")
           .order_by("-created_at").only("version__spec").first())
    chosen = (run.version.spec or {}).get("model_profile_id") if run is not None and run.version_id else None
    return chat_models(session.organization_id).filter(pk=chosen).first() if chosen else None


def choose_model(actor: Any, session: Any, model_profile_id: str | None):
    """The person's choice (one of the organization's chat models), else the session's, else the default."""
    from agenticos.errors import Invalid
    from agenticos.tenancy import parse_uuid

    if model_profile_id:
        profile = chat_models(actor.organization).filter(pk=parse_uuid(str(model_profile_id))).first() \
            if parse_uuid(str(model_profile_id)) else None
        if profile is None:
            raise Invalid("Choose one of the organization's chat models.",
                          details={"problems": [{"field": "model_profile_id",
                                                 "message": "Choose one of the organization's chat models."}]})
        return profile
    profile = session_model(session) or default_model(actor.organization)
    if profile is None:
        raise Invalid("Connect a chat model first (Settings → Models): the tool builder needs one to work.",
                      details={"problems": [{"field": "model_profile_id", "message": "No chat model yet."}]})
    return profile


def ensure_builder_agent(actor: Any, *, model_profile_id: str | None = None):
    """The organization's built-in builder agent (created once, on first use). It is never published: each turn
    runs a frozen snapshot of its spec on the model the person chose (`builder_version`), so a model that cannot
    be used fails that turn only, never the builder for the whole organization."""
    from agents import services as agent_services
    from agents.models import Agent

    agent = Agent.objects.filter(organization=actor.organization, slug=BUILDER_SLUG).first()
    if agent is not None:
        return agent
    default = default_model(actor.organization)
    profile_id = model_profile_id or (str(default.pk) if default is not None else None)
    return agent_services.create_agent(actor=actor, name="Tool builder", slug=BUILDER_SLUG,
                                       spec=builder_spec(str(profile_id) if profile_id else None),
                                       visibility="private")


def builder_version(actor: Any, agent: Any, profile: Any):
    """The builder's spec on `profile`, frozen as an unnumbered snapshot (like a Builder draft run: no
    environment points at it, no version list shows it), reused while identical. Checked as publish checks it."""
    from agenticos.errors import Invalid
    from agents.models import AgentVersion
    from agents.spec import AgentSpec, dump_spec
    from capabilities.spec_checks import publish_problems

    data = builder_spec(str(profile.pk))
    problems = publish_problems(actor, data, agent=agent)
    if problems:
        raise Invalid("The tool builder cannot run on this model: " + "; ".join(p["message"] for p in problems),
                      details={"problems": problems})
    spec = dump_spec(AgentSpec.model_validate(data))
    same = AgentVersion.objects.filter(agent=agent, number=0, spec=spec).order_by("-created_at").first()
    if same is not None:
        return same
    return AgentVersion.objects.create(agent=agent, number=0, spec=spec, published_by=actor.user,
                                       note="Tool builder turn")


def attach_conversation(*, actor: Any, session: Any, model_profile_id: str | None = None):
    """Give a session its long-lived conversation with the built-in builder agent (once)."""
    from agents.models import Conversation

    if session.conversation_id is not None:
        # A session from before the key: its conversation leaves the person's Chat list too.
        Conversation.objects.filter(pk=session.conversation_id, external_key="").update(external_key=CONVERSATION_KEY)
        return session
    agent = ensure_builder_agent(actor, model_profile_id=model_profile_id)
    conversation = Conversation.objects.create(organization=actor.organization, agent=agent, owner=actor.user,
                                               title=session.title or "Tool builder", external_key=CONVERSATION_KEY)
    session.conversation = conversation
    session.save(update_fields=["conversation"])
    return session


def say(*, actor: Any, session: Any, prompt: str, model_profile_id: str | None = None, enqueue: bool = True):
    """One turn of the builder conversation through the one runner (surface web), on the chat model the person
    chose (else the session's last, else the organization's default). The person can come back to the same
    session later: the conversation, its kits and drafts persist."""
    from agents.runs import start_run

    profile = choose_model(actor, session, model_profile_id)
    session = attach_conversation(actor=actor, session=session, model_profile_id=str(profile.pk))
    agent = session.conversation.agent
    version = builder_version(actor, agent, profile)
    return start_run(agent=agent, version=version, surface="web", prompt=prompt,
                     user=actor.user, acting_role=actor.role or "", conversation=session.conversation,
                     enqueue=enqueue)
