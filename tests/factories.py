"""Small hand-written factories."""

from __future__ import annotations

import itertools

from agenticos.models import Membership, Organization, User

_seq = itertools.count(1)


def organization(name: str = "Org", **extra) -> Organization:
    n = next(_seq)
    # The slug keeps the sequence number within its 80 characters however long the name.
    return Organization.objects.create(name=name, slug=f"{name.lower().replace(' ', '-')[:60]}-{n}", **extra)


def user(email: str | None = None, password: str = "pw-correct-horse-9", **extra) -> User:
    n = next(_seq)
    return User.objects.create_user(email=email or f"user{n}@example.com", password=password, **extra)


def member(org: Organization, role: str = "member", **extra) -> User:
    person = user(**extra)
    Membership.objects.create(organization=org, user=person, role=role)
    return person


def secret(org: Organization, name: str | None = None, value: str = "sk-test-secret-value-0000", **extra):
    """A Secret row sealed through the vault (the only way a secret value is stored)."""
    from agenticos import vault
    from agenticos.models import Secret

    sealed = vault.seal(org.pk, value)
    return Secret.objects.create(
        organization=org,
        name=name or f"secret-{next(_seq)}",
        hint=sealed.hint,
        key_version=sealed.key_version,
        wrapped_key=sealed.wrapped_key,
        ciphertext=sealed.ciphertext,
        **extra,
    )


_new_secret = secret  # model_profile's `secret=` parameter shadows the function


def model_profile(
    org: Organization,
    provider: str = "demo",
    model: str = "demo",
    *,
    label: str | None = None,
    api_key: str | None = None,
    secret=None,
    base_url: str = "",
    settings: dict | None = None,
    **extra,
):
    """A ModelProfile; `api_key=` seals a new Secret for it (or pass an existing `secret=`)."""
    from agents.models import ModelProfile

    if api_key is not None and secret is None:
        secret = _new_secret(org, value=api_key)
    return ModelProfile.objects.create(
        organization=org,
        label=label or f"{provider}-{model}-{next(_seq)}",
        provider=provider,
        model=model,
        secret=secret,
        base_url=base_url,
        settings=settings or {},
        **extra,
    )


def published_agent(org: Organization, owner: User, *, name: str = "Helper", **spec):
    """An agent on the offline demo model, published once (so it has `production` and `dev`)."""
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from agents import services as agent_services
    from agents.models import ModelProfile

    actor = actor_for_membership(
        Membership.objects.select_related("user", "organization").get(user=owner, organization=org)
    )
    profile, _ = ModelProfile.objects.get_or_create(
        organization=org, label="Demo", defaults={"provider": "demo", "model": "demo"}
    )
    data = {"name": name, "instructions": "You are a helpful test agent.", "model_profile_id": str(profile.pk), **spec}
    agent = agent_services.create_agent(actor=actor, name=name, spec=data)
    agent_services.publish_agent(actor=actor, agent=agent, note="test")
    return agent


def embed(agent, *, kind: str = "widget", created_by=None, **fields):
    """An Embed row written directly (the management API has its own tests)."""
    from embeds.models import Embed

    if kind != "page":
        fields.setdefault("allowed_origins", ["https://shop.example.com"])
    return Embed.objects.create(
        organization_id=agent.organization_id, agent=agent, kind=kind, created_by=created_by, **fields
    )


def custom_tool(org, *, url: str, alias: str | None = None, method: str = "GET", parameters=None, auth=None,
                credential=None, warnings=None, **fields):
    """A CustomTool row written directly (the REST API and services have their own tests)."""
    from capabilities.models import CustomTool

    n = next(_seq)
    return CustomTool.objects.create(
        organization=org, name=fields.pop("name", f"Tool {n}"), alias=alias or f"tool_{n}", method=method, url=url,
        parameters=parameters or [], auth=auth or {"family": "none"}, credential=credential,
        warnings=warnings or [], **fields,
    )


def collection(org: Organization, name: str | None = None, *, embedding_profile=None, **extra):
    from knowledge.models import Collection

    return Collection.objects.create(
        organization=org, name=name or f"collection-{next(_seq)}", embedding_profile=embedding_profile, **extra
    )


def document(collection, name: str, data: bytes, **extra):
    """A Document row with its file stored (not yet ingested: call knowledge.services.ingest)."""
    import hashlib

    from django.core.files.base import ContentFile

    from knowledge.models import Document
    from knowledge.parsers import kind_for

    doc = Document(
        organization_id=collection.organization_id, collection=collection, name=name, kind=kind_for(name),
        size=len(data), sha256=hashlib.sha256(data).hexdigest(), **extra,
    )
    doc.file.save(name, ContentFile(data), save=False)
    doc.save()
    return doc
