"""Settings refuse bad values loudly; /healthz tells a load balancer when a dependency is down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOAD_SETTINGS = "import django; django.setup(); from django.conf import settings; print('loaded', settings.DEBUG)"


def load_settings(**overrides: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings")
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", LOAD_SETTINGS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_settings_load_with_the_defaults():
    result = load_settings()
    assert result.returncode == 0, result.stderr
    assert "loaded" in result.stdout


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEFAULT_ORG_MONTHLY_BUDGET_USD", "abc", "DEFAULT_ORG_MONTHLY_BUDGET_USD='abc' is not a number"),
        ("DEFAULT_ORG_MONTHLY_BUDGET_USD", "-5", "DEFAULT_ORG_MONTHLY_BUDGET_USD cannot be negative"),
        ("RATE_LIMIT_RUN_PER_MINUTE", "x", "RATE_LIMIT_RUN_PER_MINUTE='x' is not a whole number"),
        ("RATE_LIMIT_RUN_PER_MINUTE", "0", "RATE_LIMIT_RUN_PER_MINUTE=0 must be at least 1"),
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean"),
        ("PORT", "eighty", "PORT='eighty' is not a whole number"),
        ("VAULT_KEY_VERSION", "0", "VAULT_KEY_VERSION=0 must be at least 1"),
    ],
)
def test_a_bad_value_stops_the_start_with_a_readable_message(name, value, message):
    result = load_settings(**{name: value})
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("django.core.exceptions.ImproperlyConfigured: ")
    assert message in last_line


def test_an_empty_budget_means_uncapped():
    env = {"DEFAULT_ORG_MONTHLY_BUDGET_USD": ""}
    result = load_settings(**env)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", ["SECRET_KEY", "VAULT_MASTER_KEY"])
def test_production_mode_requires_its_keys(missing):
    present = {"SECRET_KEY": "s" * 50, "VAULT_MASTER_KEY": "v" * 43}
    overrides: dict[str, str | None] = {"DEBUG": "false", **present, missing: None}
    result = load_settings(**overrides)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {missing} must be set when DEBUG=false." in result.stderr


def test_production_mode_starts_when_its_keys_are_set():
    result = load_settings(DEBUG="false", SECRET_KEY="s" * 50, VAULT_MASTER_KEY="v" * 43, ALLOWED_HOSTS="example.com")
    assert result.returncode == 0, result.stderr
    assert "loaded False" in result.stdout


@pytest.mark.parametrize("value", ["one:oldkey", "oldkey-without-version"])
def test_a_malformed_previous_vault_key_is_refused(value):
    result = load_settings(VAULT_PREVIOUS_KEYS=value)
    assert result.returncode != 0
    assert "ImproperlyConfigured: VAULT_PREVIOUS_KEYS" in result.stderr


# ------------------------------------------------------------------ /healthz


def test_healthz_is_200_when_the_database_and_redis_answer(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_healthz_is_503_when_redis_is_down(client, db, settings, tmp_path):
    # A database outage is not simulated here: the test database is shared by the whole test session,
    # and stopping it would break the tests that run after this one. Redis goes through the same code.
    settings.REDIS_URL = f"unix://{tmp_path}/nobody-listens.sock"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["redis"] == {"ok": False, "detail": "ConnectionError"}
    assert body["checks"]["database"]["ok"] is True
    assert "nobody-listens" not in response.content.decode()  # no paths or URLs leak


@pytest.mark.django_db
def test_an_integer_past_int4s_range_reaches_postgresql_as_itself(org):
    """Client-side parameters. With server-side binding Django sends an int typed as an integer as a binary
    int4, and 2**31 arrives as -2**31 — a filter on it would quietly match the wrong rows."""
    from django.db.models import IntegerField, Value

    from agenticos.models import Organization

    big = Organization.objects.filter(pk=org.pk).annotate(n=Value(2**31, output_field=IntegerField()))
    assert not big.filter(n__lt=0).exists()


# The names are computed by the settings module alone: reading them imports config.settings and not every app
# (django.setup() took ~30 s of a loaded 2-core machine per process, the settings ~5 s).
REDIS_NAMES = (
    "import json; from django.conf import settings as s; print(json.dumps({"
    "'namespace': s.REDIS_NAMESPACE, 'url': s.REDIS_URL, 'broker': s.CELERY_BROKER_URL, "
    "'cache': s.CACHES['default']['KEY_PREFIX'], 'layer': s.CHANNEL_LAYERS['default']['CONFIG'].get('prefix'), "
    "'kombu': getattr(s, 'CELERY_BROKER_TRANSPORT_OPTIONS', {}).get('global_keyprefix'), "
    "'results': getattr(s, 'CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS', {}).get('global_keyprefix')}))"
)


def redis_names(**overrides: str | None) -> dict:
    import json

    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", AGENTICOS_TESTING="true",
               REDIS_URL="redis://127.0.0.1:6379/0")
    env.pop("REDIS_NAMESPACE", None)
    env.update({k: v for k, v in overrides.items() if v is not None})
    for key in [k for k, v in overrides.items() if v is None]:
        env.pop(key, None)
    result = subprocess.run([sys.executable, "-c", REDIS_NAMES], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_parallel_test_workers_share_no_name_in_redis():
    workers = {name: redis_names(PYTEST_XDIST_WORKER=name) for name in ("gw0", "gw1", "gw30")}
    for field in ("namespace", "url", "broker", "cache", "layer", "kombu", "results"):
        values = [names[field] for names in workers.values()]
        assert len(set(values)) == len(values), (field, values)
    databases = [names[field].rsplit("/", 1)[-1] for names in workers.values() for field in ("url", "broker")]
    assert len(set(databases)) == 6 and max(map(int, databases)) <= 63  # the embedded test Redis has 64
    gw1 = workers["gw1"]
    assert gw1["namespace"] == "agenticos-gw1" and gw1["layer"] == "agenticos-gw1:asgi"
    assert gw1["kombu"] == gw1["results"] == "agenticos-gw1:"  # worker pings are pub/sub: prefixed too


def test_a_deployment_keeps_the_names_it_had_unless_told_a_namespace():
    default = redis_names(PYTEST_XDIST_WORKER=None, AGENTICOS_TESTING="false")
    assert default["namespace"] == default["cache"] == "agenticos"
    assert default["layer"] == "asgi" and default["kombu"] is None and default["url"].endswith("/0")
    named = redis_names(PYTEST_XDIST_WORKER=None, AGENTICOS_TESTING="false", REDIS_NAMESPACE="staging")
    assert named["cache"] == "staging" and named["layer"] == "staging:asgi" and named["kombu"] == "staging:"


@pytest.mark.parametrize(("name", "value", "message"), [
    ("PYTEST_XDIST_WORKER", "gw31", "the test Redis has room for gw0…gw30"),
    ("PYTEST_XDIST_WORKER", "master", "the test Redis has room for gw0…gw30"),
    ("REDIS_NAMESPACE", "two words", "REDIS_NAMESPACE='two words': letters, digits"),
])
def test_a_redis_layout_that_would_collide_is_refused(name, value, message):
    result = load_settings(**{name: value, "AGENTICOS_TESTING": "true"})
    assert result.returncode != 0
    assert message in result.stderr.strip().splitlines()[-1]
