"""`manage.py platform_bootstrap`: a ready organization, owner, model profile and published agent.

Idempotent: a second run changes nothing unless told to (a real model via --openai-api-key /
--anthropic-api-key / --base-url / --model). The owner's password is printed only when the owner is
created. `--json` prints credentials for scripts and mints a fresh API key each call.
"""

from __future__ import annotations

import json
import secrets as pysecrets
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from agenticos import services as kernel
from agenticos.errors import Invalid
from agenticos.models import Membership, Organization, Secret, SecretKind, User
from agenticos.permissions import Role
from agenticos.tenancy import Actor
from agents import services as agents
from agents.models import Agent, ModelProfile, Provider
from agents.spec import AgentSpec, dump_spec
from capabilities import registry

ORG_NAME = "Acme"
ORG_SLUG = "acme"
OWNER_EMAIL = "admin@example.com"
AGENT_SLUG = "getting-started"
AGENT_NAME = "Getting Started"
DEMO_LABEL = "demo"
def starter_capabilities() -> tuple[str, ...]:
    """What the starter template binds: exactly the catalog's Recommended capabilities this deployment can run.

    One source: each declaration's `recommended` flag (the Builder's badge). The template, its instructions
    and New agent follow it, so a capability marked Recommended is in the starter and nothing else is.
    """
    granted = registry.granted_scopes()
    return tuple(
        cap.id for cap in registry.all_capabilities()
        if cap.recommended and cap.selectable and all(scope in granted for scope in cap.scopes)
    )


def starter_binding(cap_id: str, demo: ModelProfile) -> dict[str, Any]:
    """A starter binding: follow-ups need a model of their own, the demo one (free, offline), so `make run`
    shows the buttons; every other capability starts with its defaults."""
    if cap_id == "follow_ups":
        return {"id": cap_id, "config": {"model_profile_id": str(demo.pk)}}
    return {"id": cap_id}


def starter_instructions() -> str:
    """The starter's instructions, naming what its capabilities offer (their catalog `offers` line)."""
    lines = [f"- {registry.get(cap_id).offers or registry.get(cap_id).description} ({cap_id})"
             for cap_id in starter_capabilities()]
    return (
        "You are the Getting Started assistant of AgenticOS.\n\n"
        "Help people discover what an agent here can do:\n" + "\n".join(lines) + "\n\n"
        "Be brief and concrete. When a capability would help, use it instead of describing it.\n"
    )
def _refusal(exc: Invalid) -> str:
    """The service's problems as one line per field, in the command's own words (--base-url, not base_url)."""
    flags = {"base_url": "--base-url", "model": "--model", "secret_id": "the API key"}
    problems = (exc.details or {}).get("problems") or []
    lines = [f"{flags.get(str(p.get('field')), p.get('field'))}: {p.get('message')}" for p in problems]
    return "The model profile was refused. " + (" ".join(lines) or str(exc))


DEFAULT_MODELS = {
    Provider.OPENAI: "gpt-4o-mini",
    Provider.ANTHROPIC: "claude-3-5-haiku-latest",
    Provider.OPENAI_COMPATIBLE: "default",
}


class Command(BaseCommand):
    help = "Create (once) the Acme organization, its owner, a demo model profile and a published starter agent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print credentials as JSON (mints a new API key).")
        parser.add_argument("--openai-api-key", default="", help="Create an OpenAI profile and use it.")
        parser.add_argument("--anthropic-api-key", default="", help="Create an Anthropic profile and use it.")
        parser.add_argument("--base-url", default="", help="An OpenAI-compatible server (with --openai-api-key or alone).")
        parser.add_argument("--model", default="", help="The model name for the real profile.")

    def handle(self, *args: Any, **options: Any) -> None:
        as_json: bool = options["json"]
        # In --json mode stdout carries only the JSON document; human notes go to stderr.
        say = (lambda msg: self.stderr.write(msg, style_func=str)) if as_json else self.stdout.write

        with transaction.atomic():
            org, owner, password = self._org_and_owner()
            actor = Actor(user=owner, organization=org, role=Role.OWNER, extra={"ip": None})
            demo = self._demo_profile(actor)
            profile = self._real_profile(actor, options) or None
            agent = self._starter_agent(actor, demo, profile, say)
            chosen = profile or ModelProfile.objects.get(
                organization=org, pk=agent.draft_spec.get("model_profile_id") or demo.pk
            )
            raw_key = None
            if as_json:
                _key, raw_key = kernel.create_api_key(actor=actor, name="platform_bootstrap")

        if password:
            say(f"Created the owner {OWNER_EMAIL} with password: {password}")
            say("This password is shown once. Change it after signing in.")
        else:
            say(f"The owner {OWNER_EMAIL} already exists (password unchanged).")
        say(f"Organization {org.name} ({org.pk}); agent {agent.slug} ({agent.pk}); model profile {chosen.label}.")
        if as_json:
            self.stdout.write(json.dumps({
                "organization_id": str(org.pk),
                "owner_email": OWNER_EMAIL,
                "api_key": raw_key,
                "agent_id": str(agent.pk),
                "agent_slug": agent.slug,
                "model_profile_id": str(chosen.pk),
            }))

    # ------------------------------------------------------------------ pieces

    def _org_and_owner(self) -> tuple[Organization, User, str | None]:
        password = None
        owner = User.objects.filter(email=OWNER_EMAIL).first()
        if owner is None:
            password = pysecrets.token_urlsafe(12)
            owner = User.objects.create_user(email=OWNER_EMAIL, password=password, is_staff=True, is_superuser=True)
        org = Organization.objects.filter(slug=ORG_SLUG).first()
        if org is None:
            org = kernel.create_organization(actor=owner, name=ORG_NAME, slug=ORG_SLUG)
        membership, _ = Membership.objects.get_or_create(organization=org, user=owner, defaults={"role": Role.OWNER})
        if membership.role != Role.OWNER or membership.is_suspended:
            membership.role, membership.is_suspended = Role.OWNER, False
            membership.save(update_fields=["role", "is_suspended"])
        return org, owner, password

    def _demo_profile(self, actor: Actor) -> ModelProfile:
        existing = ModelProfile.objects.filter(organization=actor.organization, label=DEMO_LABEL).first()
        return existing or agents.create_model_profile(
            actor=actor, label=DEMO_LABEL, provider=Provider.DEMO, model="demo"
        )

    def _secret(self, actor: Actor, name: str, value: str) -> Secret:
        secret = Secret.objects.filter(organization=actor.organization, name=name).first()
        if secret is None:
            return kernel.create_secret(actor=actor, name=name, value=value, kind=SecretKind.API_KEY)
        return kernel.rotate_secret(actor=actor, secret=secret, value=value)

    def _real_profile(self, actor: Actor, options: dict[str, Any]) -> ModelProfile | None:
        openai_key, anthropic_key = options["openai_api_key"], options["anthropic_api_key"]
        base_url, model = options["base_url"].strip(), options["model"].strip()
        if openai_key and anthropic_key:
            raise CommandError("Give either --openai-api-key or --anthropic-api-key, not both.")
        if anthropic_key and base_url:
            raise CommandError("--base-url goes with an OpenAI-compatible server, not --anthropic-api-key.")
        if base_url:
            provider, key = Provider.OPENAI_COMPATIBLE, openai_key
        elif openai_key:
            provider, key = Provider.OPENAI, openai_key
        elif anthropic_key:
            provider, key = Provider.ANTHROPIC, anthropic_key
        elif model:
            raise CommandError("--model needs --openai-api-key, --anthropic-api-key or --base-url.")
        else:
            return None
        model = model or DEFAULT_MODELS[provider]
        secret = self._secret(actor, f"{provider}-api-key", key) if key else None
        label = f"{provider}: {model}"
        fields = {
            "provider": provider, "model": model, "secret_id": str(secret.pk) if secret else None,
            "base_url": base_url,
        }
        existing = ModelProfile.objects.filter(organization=actor.organization, label=label).first()
        try:
            if existing is not None:
                return agents.update_model_profile(actor=actor, profile=existing, **fields)
            return agents.create_model_profile(actor=actor, label=label, **fields)
        except Invalid as exc:
            # A --base-url on a private or loopback address needs the operator's MODEL_ALLOWED_PRIVATE_HOSTS (the
            # guard's message names it); nothing is kept, the whole bootstrap runs in one transaction.
            raise CommandError(_refusal(exc)) from None

    def _starter_agent(self, actor: Actor, demo: ModelProfile, profile: ModelProfile | None, say) -> Agent:
        agent = Agent.objects.filter(organization=actor.organization, slug=AGENT_SLUG).first()
        if agent is None:
            spec = AgentSpec(
                name=AGENT_NAME,
                description="A friendly tour of what agents can do.",
                instructions=starter_instructions(),
                model_profile_id=str((profile or demo).pk),
                capabilities=[starter_binding(cap, demo) for cap in starter_capabilities()],  # type: ignore[misc]
            )
            agent = agents.create_agent(actor=actor, slug=AGENT_SLUG, spec=dump_spec(spec))
            agents.publish_agent(actor=actor, agent=agent, note="Created by platform_bootstrap")
            say(f"Published {AGENT_NAME} v1.")
            return agent
        if profile is not None and agent.draft_spec.get("model_profile_id") != str(profile.pk):
            draft = {**agent.draft_spec, "model_profile_id": str(profile.pk)}
            agent = agents.update_agent(actor=actor, agent=agent, spec=draft)
            version = agents.publish_agent(actor=actor, agent=agent, note=f"Model: {profile.label}")
            agents.promote_environment(actor=actor, agent=agent, environment="production", version=version.number)
            say(f"Published {AGENT_NAME} v{version.number} on {profile.label}.")
        elif not agent.versions.exists():
            agents.publish_agent(actor=actor, agent=agent, note="Created by platform_bootstrap")
        return agent
