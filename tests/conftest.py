"""Shared fixtures: real PostgreSQL and Redis (the embedded test servers), and an outsider in every setup."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker
from rest_framework.test import APIClient

from agenticos.celery import app as celery_app
from tests import factories
from tests.fakes.openai_server import fake_openai  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
def _clean_redis(settings):
    """Rate-limit and dedup counters must not leak between tests."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Each async test has its own event loop; the process-wide channel layer's receive lock belongs to
    the loop that first received on it, so every test starts with a new layer."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _runs_wait_for_a_worker_only_when_one_is_asked_for(request, monkeypatch):
    """A test without the worker fixtures executes runs itself (agents.runner.execute); the session
    worker an earlier test started must not race it for the same run, nor write during the flush."""
    if not {"celery_worker", "celery_worker_session"} & set(request.fixturenames):
        monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: None)


@pytest.fixture
def org(db):
    return factories.organization(name="Acme")


@pytest.fixture
def owner(org):
    return factories.member(org, "owner")


@pytest.fixture
def admin_user(org):
    return factories.member(org, "admin")


@pytest.fixture
def builder(org):
    return factories.member(org, "builder")


@pytest.fixture
def member(org):
    return factories.member(org, "member")


@pytest.fixture
def viewer(org):
    return factories.member(org, "viewer")


@pytest.fixture
def outsider_org(db):
    return factories.organization(name="Other Corp")


@pytest.fixture
def outsider(outsider_org):
    return factories.member(outsider_org, "owner")


def _client_for(user, org=None) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    if org is not None:
        client.credentials(HTTP_X_ORGANIZATION_ID=str(org.pk))
    return client


@pytest.fixture
def api_as():
    return _client_for


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
            shutdown_timeout=120,
        ) as worker:
            yield worker


@pytest.fixture
def celery_worker(celery_worker_session, transactional_db):
    yield celery_worker_session
    # The test database is flushed (TRUNCATE) right after this teardown: a run still writing would
    # deadlock with it, so let the runs this test started finish first.
    import time

    from agents.models import Run

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and Run.objects.filter(status__in=["queued", "running"]).exists():
        time.sleep(0.1)


@pytest.fixture
def scripted_model(monkeypatch):
    """Replace the provider's model with a FunctionModel for every run this test starts."""

    def install(model):
        monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: model)
        return model

    return install
