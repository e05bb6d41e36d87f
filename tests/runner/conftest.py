"""Helpers for the runner tests (the worker and scripted-model fixtures live in tests/conftest.py): a real Celery worker (threads pool, real Redis broker) in this process,
published agents on the demo model, and scripted FunctionModels for the model side (the outside world)."""

from __future__ import annotations

import pytest

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


@pytest.fixture
def runs_queue_to_ourselves():
    """The hand-back sends a run to the `runs` queue, which the session worker of this process consumes once an
    earlier test started it: it would go on with the run before the test could look at it handed back. Stop its
    consuming `runs` (remote control, as an operator would) for the test, and give it back after."""
    from config.celery import app
    from tests.conftest import _SessionWorker

    running = _SessionWorker.running
    name = running.worker.hostname if running is not None and running.worker is not None else None
    if name is None:
        yield
        return
    replies = app.control.cancel_consumer("runs", destination=[name], reply=True, timeout=10)
    assert replies, f"the session worker {name} did not answer the cancel_consumer request"
    try:
        yield
    finally:
        app.control.add_consumer("runs", destination=[name], reply=True, timeout=10)
