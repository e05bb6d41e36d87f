"""What every load bench sets up first: an organization of its own without a cap, its owner (no password: a bench
never signs in), and a model profile at the bench's local OpenAI-compatible server. Idempotent, so a bench can run
again against the same database. Called after django.setup()."""

from __future__ import annotations

from typing import Any


def owner_and_model(slug: str, name: str, model_port: int) -> tuple[Any, Any, Any]:
    """(organization, the owner's actor, the `Paced` model profile at http://127.0.0.1:<model_port>/v1)."""
    from agenticos.models import Membership, Organization, User
    from agenticos.tenancy import actor_for_membership
    from agents.models import ModelProfile

    org, _ = Organization.objects.get_or_create(slug=slug, defaults={"name": name, "monthly_budget_usd": None})
    user, created = User.objects.get_or_create(email=f"{slug}@example.com")
    if created:
        user.set_unusable_password()
        user.save()
    membership, _ = Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    profile, _ = ModelProfile.objects.update_or_create(
        organization=org, label="Paced", defaults={"provider": "openai_compatible", "model": "gpt-4o-mini",
                                                   "base_url": f"http://127.0.0.1:{model_port}/v1"})
    return org, actor_for_membership(membership), profile


def scale_agent(org: Any, actor: Any, profile: Any) -> Any:
    """The load benches' agent (bench/concurrency.py, bench/run_cost.py): charts, published. Their model server
    calls `create_chart` once, then answers."""
    from agents import services
    from agents.models import Agent

    agent = Agent.objects.filter(organization=org, slug="scale-charts").first()
    if agent is None:
        agent = services.create_agent(actor=actor, name="Scale", slug="scale-charts", spec={
            "name": "Scale", "instructions": "Answer after drawing a chart.", "model_profile_id": str(profile.pk),
            "capabilities": [{"id": "charts"}]})
    if not agent.versions.exists():  # a bench stopped between the two steps left a draft behind
        services.publish_agent(actor=actor, agent=agent)
    return agent
