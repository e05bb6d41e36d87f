"""API key scopes (read / run / admin), expiry and last use, enforced where every key request is
authenticated (agenticos.authentication): a read-only key reads but never writes, a run key runs agents but
changes nothing else, an expired key is refused with the error envelope. Searching the list; an outsider
sees none of another organization's keys."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agenticos import services
from agenticos.models import ApiKey
from agents.models import Agent, Run
from tests.api.conftest import actor_of


def _bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def _key(user, org, **options) -> tuple[ApiKey, str]:
    return services.create_api_key(actor=actor_of(user, org), name=options.pop("name", "ci"), **options)


def test_a_read_only_key_reads_but_cannot_start_a_run(org, owner, published_agent):
    _key_row, raw = _key(owner, org, scope="read")
    client = _bearer(raw)
    assert client.get("/api/v1/agents").status_code == 200
    response = client.post(f"/api/v1/agents/{published_agent.pk}/run?wait=false", {"prompt": "hi"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert response.json()["error"]["details"] == {"scope": "read", "permission": "agents:run"}
    assert not Run.objects.exists()


def test_a_read_only_key_cannot_write_anything(org, owner):
    _key_row, raw = _key(owner, org, scope="read")
    response = _bearer(raw).post("/api/v1/agents", {"name": "Nope"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert not Agent.objects.filter(name="Nope").exists()
    # Nor mint itself a wider key.
    assert _bearer(raw).post("/api/v1/api-keys", {"name": "wider", "scope": "admin"}, format="json").status_code == 403
    assert ApiKey.objects.count() == 1


def test_a_run_key_starts_a_run_but_cannot_create_an_agent(org, owner, published_agent):
    _key_row, raw = _key(owner, org, scope="run")
    client = _bearer(raw)
    response = client.post(f"/api/v1/agents/{published_agent.pk}/run?wait=false", {"prompt": "hi"}, format="json")
    assert response.status_code in (200, 202), response.content
    assert Run.objects.filter(agent=published_agent).count() == 1
    refused = client.post("/api/v1/agents", {"name": "Nope"}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["details"]["scope"] == "run"
    assert not Agent.objects.filter(name="Nope").exists()


def test_an_admin_key_may_write_what_its_role_allows(org, builder):
    _key_row, raw = _key(builder, org, scope="admin")
    response = _bearer(raw).post("/api/v1/agents", {"name": "Mine"}, format="json")
    assert response.status_code == 201, response.content


def test_a_scope_never_widens_the_role(org, member):
    _key_row, raw = _key(member, org, scope="admin")
    response = _bearer(raw).post("/api/v1/agents", {"name": "Nope"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["details"] == {"permission": "agents:edit", "role": "member"}


def test_an_expired_key_is_refused_with_the_envelope(org, owner):
    key, raw = _key(owner, org, expires_at=timezone.now() + timedelta(hours=1))
    assert _bearer(raw).get("/api/v1/agents").status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1), last_used_at=None)
    response = _bearer(raw).get("/api/v1/agents")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "api_key_expired" and "expired" in error["message"]
    assert raw not in response.content.decode()
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert ApiKey.objects.get(pk=key.pk).last_used_at is None  # a refused key is not "used"


def test_an_expiry_in_the_past_is_refused_at_creation(org, owner, api_as):
    response = api_as(owner, org).post("/api/v1/api-keys", {
        "name": "old", "expires_at": (timezone.now() - timedelta(days=1)).isoformat()}, format="json")
    assert response.status_code == 422
    assert not ApiKey.objects.exists()


def test_created_through_the_api_with_scope_and_expiry(org, owner, api_as):
    expiry = timezone.now() + timedelta(days=30)
    response = api_as(owner, org).post("/api/v1/api-keys", {
        "name": "reporting", "scope": "read", "expires_at": expiry.isoformat()}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["scope"] == "read" and body["expires_at"] is not None and body["is_active"] is True
    assert api_as(owner, org).post("/api/v1/api-keys", {"name": "x", "scope": "root"},
                                   format="json").status_code == 400


def test_last_used_is_written_at_most_once_a_minute(org, owner, django_assert_num_queries):
    key, raw = _key(owner, org)
    client = _bearer(raw)
    client.get("/api/v1/me")
    first = ApiKey.objects.get(pk=key.pk).last_used_at
    assert first is not None
    client.get("/api/v1/me")
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(minutes=2))
    client.get("/api/v1/me")
    assert ApiKey.objects.get(pk=key.pk).last_used_at > first - timedelta(minutes=2)


def test_the_list_searches_and_an_outsider_sees_none(org, owner, outsider, outsider_org, api_as):
    _key(owner, org, name="reporting job")
    _key(owner, org, name="deploy bot")
    _key(outsider, outsider_org, name="reporting theirs")
    found = api_as(owner, org).get("/api/v1/api-keys?search=report").json()["results"]
    assert [k["name"] for k in found] == ["reporting job"]
    theirs = api_as(outsider, outsider_org).get("/api/v1/api-keys?search=report").json()["results"]
    assert [k["name"] for k in theirs] == ["reporting theirs"]
    # Naming the other organization answers 404, not its keys.
    assert api_as(outsider, org).get("/api/v1/api-keys").status_code == 404


# ------------------------------------------------------------------ the console's API keys page


def _console(user, org):
    from django.test import Client

    from agenticos.tenancy import SESSION_KEY

    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


def test_the_console_creates_a_scoped_expiring_key_and_shows_it(org, owner, settings):
    settings.ROOT_URLCONF = "tests.console.urls"
    client = _console(owner, org)
    response = client.post("/settings/api-keys/", {"name": "reports", "scope": "read", "lifetime": "30"})
    assert response.status_code == 200
    key = ApiKey.objects.get(name="reports")
    assert key.scope == "read"
    assert timedelta(days=29) < key.expires_at - timezone.now() <= timedelta(days=30)
    page = response.content.decode()
    assert 'data-key-scope="read"' in page and "data-new-key" in page


def test_the_console_refuses_an_unknown_scope_or_expiry_and_creates_nothing(org, owner, settings):
    settings.ROOT_URLCONF = "tests.console.urls"
    client = _console(owner, org)
    assert client.post("/settings/api-keys/", {"name": "x", "scope": "root", "lifetime": "30"}).status_code == 422
    assert client.post("/settings/api-keys/", {"name": "x", "scope": "run", "lifetime": "7"}).status_code == 422
    assert not ApiKey.objects.exists()


def test_the_console_pages_and_searches_keys_and_marks_an_expired_one(org, owner, outsider, outsider_org, settings):
    settings.ROOT_URLCONF = "tests.console.urls"
    for i in range(27):
        _key(owner, org, name=f"job {i:02d}")
    old, _raw = _key(owner, org, name="stale key")
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    _key(outsider, outsider_org, name="stale theirs")
    client = _console(owner, org)
    first = client.get("/settings/api-keys/").content.decode()
    assert first.count("data-api-key=") == 25 and "Page 1 of 2" in first
    second = client.get("/settings/api-keys/?page=2").content.decode()
    assert second.count("data-api-key=") == 3
    found = client.get("/settings/api-keys/?q=stale").content.decode()
    assert found.count("data-api-key=") == 1 and "data-key-expired" in found and "stale theirs" not in found


# ------------------------------------------------------------------ interop (not DRF views): its writes run agents


@pytest.mark.django_db(transaction=True)
async def test_a_read_only_key_lists_models_but_cannot_run_through_the_openai_endpoint(org, owner):
    import httpx
    import openai
    from asgiref.sync import sync_to_async
    from django.core.asgi import get_asgi_application
    from django.db import connections

    from tests.runner.conftest import publish

    agent, _ = await sync_to_async(publish)(org, owner)
    _row, raw = await sync_to_async(_key)(owner, org, scope="read")
    transport = httpx.ASGITransport(app=get_asgi_application())
    async with httpx.AsyncClient(transport=transport) as http:
        client = openai.AsyncOpenAI(base_url="http://testserver/v1", api_key=raw, http_client=http, max_retries=0)
        models = await client.models.list()
        assert [m.id for m in models.data if m.id.startswith(agent.slug)]
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await client.chat.completions.create(model=agent.slug, messages=[{"role": "user", "content": "x"}])
    assert refused.value.code == "insufficient_scope"
    assert not await Run.objects.aexists()
    await sync_to_async(connections.close_all)()
