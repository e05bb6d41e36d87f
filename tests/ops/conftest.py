"""Fixtures for the operator tests: a superuser in the console, and a small world per organization."""

from __future__ import annotations

import pytest

from tests import factories
from tests.ops import world


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "embedded_services: starts its own embedded PostgreSQL and Redis (slow; needs no test servers)"
    )


@pytest.fixture
def operator(db):
    return factories.user(email="operator@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def console(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def make_world(db):
    return world.build
