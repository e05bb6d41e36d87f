"""Helpers for the runner tests (the worker and scripted-model fixtures live in tests/conftest.py): a real Celery worker (threads pool, real Redis broker) in this process,
published agents on the demo model, and scripted FunctionModels for the model side (the outside world)."""

from __future__ import annotations

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents.models import ModelProfile


def actor_of(user, org):
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


def demo_profile(org) -> ModelProfile:
    profile, _ = ModelProfile.objects.get_or_create(
        organization=org, label="Demo", defaults={"provider": "demo", "model": "demo"}
    )
    return profile


def publish(org, user, *, name="Helper", capabilities=None, budget=None, visibility="organization", **spec):
    actor = actor_of(user, org)
    profile = demo_profile(org)
    data = {
        "name": name,
        "instructions": "You are a helpful test agent.",
        "model_profile_id": str(profile.pk),
        "capabilities": capabilities or [],
        **spec,
    }
    if budget is not None:
        data["budget"] = {"monthly_usd": str(budget)}
    agent = agent_services.create_agent(actor=actor, name=name, spec=data, visibility=visibility)
    version = agent_services.publish_agent(actor=actor, agent=agent, note="test")
    return agent, version
