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
