"""The CHECK constraints hold in the database, not only in the service that usually writes the row."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from embeds.models import Embed
from tests import factories


def _refused(**fields) -> bool:
    try:
        with transaction.atomic():
            Embed.objects.create(**fields)
    except IntegrityError:
        return True
    return False


@pytest.fixture
def base(agent, org):
    return {"organization": org, "agent": agent}


def test_a_page_cannot_carry_a_list_of_origins(base):
    assert _refused(kind="page", allowed_origins=["https://a.example"], **base)


def test_a_page_cannot_be_jwt(base, org):
    assert _refused(kind="page", auth_mode="jwt", jwt_secret=factories.secret(org), **base)


def test_a_required_variable_on_a_page_must_be_url_safe(base):
    variables = [{"name": "plan", "required": True, "description": "", "url_safe": False}]
    assert _refused(kind="page", variables=variables, **base)
    ok = [{"name": "plan", "required": True, "description": "", "url_safe": True}]
    assert not _refused(kind="page", variables=ok, **base)


def test_a_widget_may_declare_a_required_variable_that_is_not_url_safe(base):
    variables = [{"name": "plan", "required": True, "description": "", "url_safe": False}]
    assert not _refused(kind="widget", allowed_origins=["https://a.example"], variables=variables, **base)


def test_tool_results_are_impossible_without_tool_steps(base):
    assert _refused(kind="page", show_tool_steps=False, show_tool_results=True, **base)


def test_jwt_mode_needs_a_sealed_secret(base):
    assert _refused(kind="widget", auth_mode="jwt", allowed_origins=["https://a.example"], **base)


def test_an_unknown_kind_is_refused(base):
    assert _refused(kind="banner", **base)


def test_the_public_key_is_24_random_url_safe_bytes(base):
    one = Embed.objects.create(kind="page", **base)
    two = Embed.objects.create(kind="page", **base)
    assert len(one.public_key) == 32 and one.public_key != two.public_key
    assert all(c.isalnum() or c in "-_" for c in one.public_key)
