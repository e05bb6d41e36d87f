"""Fixtures for the REST API tests: actors, a model profile, agents in a known state."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import Actor, actor_for_membership
from agents import services as agents
from agents.models import Agent, ModelProfile


def actor_of(user, org) -> Actor:
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


@pytest.fixture
def as_actor():
    return actor_of


@pytest.fixture
def demo_profile(org, owner) -> ModelProfile:
    return agents.create_model_profile(actor=actor_of(owner, org), label="demo", provider="demo", model="demo")


def make_agent(user, org, *, name="Helper", slug=None, visibility="organization", profile=None, **spec) -> Agent:
    data = {"name": name, "instructions": "Be helpful.", **spec}
    if profile is not None:
        data["model_profile_id"] = str(profile.pk)
    return agents.create_agent(actor=actor_of(user, org), slug=slug, visibility=visibility, spec=data)


@pytest.fixture
def agent_factory():
    return make_agent


@pytest.fixture
def published_agent(org, owner, demo_profile) -> Agent:
    agent = make_agent(owner, org, name="Published", slug="published", profile=demo_profile)
    agents.publish_agent(actor=actor_of(owner, org), agent=agent)
    return agent
