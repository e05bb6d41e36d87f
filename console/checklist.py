"""The home page's first-run checklist (issue 44 §9): the five steps from a new organization to an agent that
people use — connect a model, make an agent, add knowledge, try it, put it somewhere. Each step is done when
the organization's data says so (not when someone ticks it), so the list is right for every member and goes
away by itself once every step is done."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from agenticos.tenancy import Actor
from agents.architect import SLUG as ARCHITECT_SLUG
from agents.models import Agent, ModelProfile, Provider, Run
from capabilities.custom_tools.builder import BUILDER_SLUG
from channelbots.models import Binding
from embeds.models import Embed
from knowledge.models import Document

# Agents the platform makes for itself: having one is not having made an agent.
SYSTEM_AGENT_SLUGS = (ARCHITECT_SLUG, BUILDER_SLUG)


def first_run_checklist(actor: Actor) -> dict[str, Any] | None:
    """The steps with their state and where each is done, or None when there is nothing left to do or the
    person cannot build (a member who only chats is not asked to connect models). Five small queries."""
    if not actor.has("agents:edit"):
        return None
    org = actor.organization
    own_agents = Agent.objects.filter(organization=org).exclude(slug__in=SYSTEM_AGENT_SLUGS)
    first_agent = own_agents.order_by("created_at", "pk").only("pk").first()
    steps = [
        {"key": "model", "label": _("Connect a model"),
         "help": _("A model profile with your provider's key, or a local model server."),
         "done": ModelProfile.objects.filter(organization=org, kind=ModelProfile.Kind.CHAT)
         .exclude(provider=Provider.DEMO).exists(),
         "href": reverse("console:settings-models")},
        {"key": "agent", "label": _("Make an agent"),
         "help": _("Its instructions, its model and the tools it may use."),
         "done": first_agent is not None, "href": reverse("console:agent-new")},
        {"key": "knowledge", "label": _("Add knowledge"),
         "help": _("Upload documents to a collection and bind it in the Builder."),
         "done": Document.objects.filter(organization=org).exists(),
         "href": reverse("console-knowledge:list")},
        {"key": "try", "label": _("Try it"),
         "help": _("Ask it something in the chat or in the Builder's test chat."),
         "done": Run.objects.filter(organization=org).exclude(agent__slug__in=SYSTEM_AGENT_SLUGS).exists(),
         "href": reverse("console:chat")},
        {"key": "share", "label": _("Put it somewhere"),
         "help": _("On a website, in Slack, Telegram or Mattermost."),
         "done": Embed.objects.filter(organization=org).exists() or Binding.objects.filter(organization=org).exists(),
         "href": (reverse("console:builder", args=[first_agent.pk]) + "#availability") if first_agent
         else reverse("console:agents")},
    ]
    done = sum(1 for step in steps if step["done"])
    if done == len(steps):
        return None
    return {"steps": steps, "done": done, "total": len(steps)}
