"""Fixtures for the runner: a real Celery worker (threads pool, real Redis broker) in this process,
published agents on the demo model, and scripted FunctionModels for the model side (the outside world)."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker

from agenticos.celery import app as celery_app
from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from agents.models import ModelProfile


@pytest.fixture(scope="session")
def celery_worker_session(django_db_setup, django_db_blocker):
    """One real worker consuming the `runs` and `default` queues for the whole session."""
    celery_app.conf.task_always_eager = False
    with django_db_blocker.unblock():
        with start_worker(
            celery_app,
            pool="threads",
            concurrency=8,
            perform_ping_check=False,
            queues=["runs", "default"],
            loglevel="WARNING",
            shutdown_timeout=30,
        ) as worker:
            yield worker


@pytest.fixture
def celery_worker(celery_worker_session, transactional_db):
    return celery_worker_session


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
def scripted_model(monkeypatch):
    """Replace the provider's model with a FunctionModel for every run this test starts."""

    def install(model):
        monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
        return model

    return install
