"""Small hand-written factories."""

from __future__ import annotations

import itertools

from agenticos.models import Membership, Organization, User

_seq = itertools.count(1)


def organization(name: str = "Org", **extra) -> Organization:
    n = next(_seq)
    return Organization.objects.create(name=name, slug=f"{name.lower().replace(' ', '-')}-{n}", **extra)


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
