"""A real daphne (the project's ASGI app, started as the launcher starts it) on this session's test database,
the in-process Celery worker running runs on scripted models, and API keys for the organization and an
outsider."""

from __future__ import annotations

import pytest

from agenticos.services import create_api_key
from tests.fakes import live_daphne
from tests.runner.conftest import actor_of


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    # The project's own ASGI app, as `make run` serves it.
    with django_db_blocker.unblock(), live_daphne.serving_daphne(
            "config.asgi:application", "interop", env={"RATE_LIMIT_RUN_PER_MINUTE": "1000"}) as base:
        yield base


def api_key(user, org) -> str:
    _, raw = create_api_key(actor=actor_of(user, org), name="openai client")
    return raw
