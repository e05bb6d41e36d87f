"""The attack suite for API keys (issue 37): every surface a key reaches is held to the key's scope and
organization by the platform's one check (agenticos.authentication.admit_key), and a new surface cannot skip it.

How: every route of the URLconf is probed with a bearer key and the ones that look a key up (a query on the keys'
`key_hash`, whatever the code path) are the key surfaces. The REST ones are attacked generically (every write of
every route); the others must be exactly the ones this file attacks by hand (`HAND_ATTACKED`), and the A2A app's
routes (in front of Django, config/asgi.py) exactly `A2A_ROUTES`: a surface added later fails here until it is
attacked here too. Attackers: a read key, a run key of another organization (and its admin key), a viewer's key,
a revoked key, an expired key. The console and the chat, embed and browse sockets admit no API key at all."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone
from rest_framework.views import APIView

from agenticos import services as kernel
from agenticos.authentication import ApiKeyAuthentication
from agenticos.models import ApiKey, Membership
from agents.chat import start_member_run
from agents.models import Run
from tests import factories
from tests.api.state import database_state
from tests.runner.conftest import actor_of, publish

WRITES = ("post", "put", "patch", "delete")
PROBE_KEY = "aos_probe-this-key-does-not-exist"
DUMMY_UUID = "00000000-0000-4000-8000-000000000000"
PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
REGEX_GROUP = re.compile(r"\(\?P<\w+>([^()]*)\)")
# A body the run routes' serializers accept, so a refusal is the object's, not the body's.
HOSTILE_BODY = {"prompt": "the rival asks", "answers": [{"answer": "yes"}], "title": "taken over", "pinned": True}
# The key surfaces that are not DRF views, each attacked by hand below (route → the test that attacks it).
HAND_ATTACKED = {
    "v1/chat/completions": "test_chat_completions_holds_every_key_to_its_scope_and_organization",
    "v1/models": "test_the_model_list_shows_a_key_only_its_organizations_runnable_agents",
    "mcp": "test_mcp_holds_every_key_to_its_scope_and_organization",
}
# The A2A app's routes (path, methods), attacked in test_a2a_holds_every_key_to_its_scope_and_organization.
A2A_ROUTES = {
    ("/a2a/{agent}/.well-known/agent-card.json", frozenset({"GET", "HEAD"})),
    ("/a2a/{agent}", frozenset({"POST"})),
    ("/a2a/{agent}/", frozenset({"POST"})),
    ("/a2a/{agent}", frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})),
}


# ------------------------------------------------------------------ the routes, and which of them take a key


@dataclass(frozen=True)
class Route:
    route: str  # as written in the URLconf: "api/v1/agents/<uuid:agent_id>/run"
    callback: Callable[..., Any]

    @property
    def view_class(self) -> type | None:
        cls = getattr(self.callback, "cls", None)
        return cls if isinstance(cls, type) and issubclass(cls, APIView) else None

    @property
    def is_rest(self) -> bool:
        cls = self.view_class
        return cls is not None and any(issubclass(a, ApiKeyAuthentication) for a in cls.authentication_classes)

    def url(self, **values: str) -> str:
        def param(match: re.Match[str]) -> str:
            if match["name"] in values:
                return values[match["name"]]
            return {"uuid": DUMMY_UUID, "int": "1"}.get(match["converter"] or "str", "x")

        def group(match: re.Match[str]) -> str:  # the admin's regex routes: their first alternative
            return match[1].split("|")[0] if re.fullmatch(r"[\w|]+", match[1]) else "x"

        # Regex groups first: a named group's `<name>` would otherwise read as a path converter.
        return "/" + PARAM.sub(param, REGEX_GROUP.sub(group, self.route)).replace("^", "").replace("$", "")

    def writes(self) -> list[str]:
        return [m for m in self.methods() if m in WRITES]

    def methods(self) -> list[str]:
        cls = self.view_class
        return [m for m in ("get", *WRITES) if cls is not None and hasattr(cls, m)]

    def permission(self, method: str) -> str | None:
        permission_map = getattr(self.view_class, "permission_map", None) or {}
        return permission_map.get(method.upper()) or permission_map.get("*")


def django_routes() -> list[Route]:
    def walk(patterns: list[Any], prefix: str) -> Iterator[Route]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield Route(prefix + str(pattern.pattern), pattern.callback)

    return list(walk(get_resolver().url_patterns, ""))


def _looks_up_a_key(client: Client, method: str, url: str, **headers: str) -> tuple[bool, int]:
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(url, headers={"Authorization": f"Bearer {PROBE_KEY}", **headers})
    return any("key_hash" in q["sql"] for q in queries.captured_queries), response.status_code


def key_routes() -> dict[Route, set[str]]:
    """Every route that looks a key up, with the methods (GET, POST) it does so for: found by asking, not read
    from a list, so a surface that authenticates keys in its own way is found as well."""
    client = Client(raise_request_exception=False)
    found: dict[Route, set[str]] = {}
    for route in django_routes():
        url = route.url()
        assert resolve(url.split("?")[0]).func is route.callback or route.route.startswith("admin/"), (
            f"{route.route}: the probe's URL {url} reaches another view; give it a value that reaches this one")
        for method in ("get", "post"):
            looked, _status = _looks_up_a_key(client, method, url)
            if looked:
                found.setdefault(route, set()).add(method)
    return found


# ------------------------------------------------------------------ two organizations, their keys


@dataclass
class World:
    org: Any
    owner: Any
    agent: Any
    run: Run
    keys: dict[str, str]  # attacker → raw key


def _key(user: Any, org: Any, *, scope: str = "admin", **options: Any) -> tuple[ApiKey, str]:
    return kernel.create_api_key(actor=actor_of(user, org), name=f"{scope} key", scope=scope, **options)


def build_world() -> World:
    org, other = factories.organization("Acme"), factories.organization("Rival")
    owner, viewer = factories.member(org, "owner"), factories.member(org, "member")
    rival = factories.member(other, "owner")
    agent, _version = publish(org, owner, name="Acme Secret Planner")
    run, _ = start_member_run(actor=actor_of(owner, org), agent_id=agent.pk, text="acme plans", surface="api",
                              create_conversation=True)
    revoked, revoked_raw = _key(owner, org, scope="run")
    kernel.revoke_api_key(actor=actor_of(owner, org), api_key=revoked)
    expired, expired_raw = _key(owner, org, scope="run", expires_at=timezone.now() + timedelta(hours=1))
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    # The widest scope, made while a member; its person is now a viewer, whose role holds no run right.
    viewer_key = _key(viewer, org, scope="admin")[1]
    Membership.objects.filter(user=viewer, organization=org).update(role="viewer")
    return World(org=org, owner=owner, agent=agent, run=run, keys={
        "run": _key(owner, org, scope="run")[1],
        "read": _key(owner, org, scope="read")[1],
        "viewer": viewer_key,
        "rival run": _key(rival, other, scope="run")[1],
        "rival admin": _key(rival, other, scope="admin")[1],
        "revoked": revoked_raw,
        "expired": expired_raw,
    })


@pytest.fixture
def world(db) -> World:
    return build_world()


def _bearer(raw: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw}"}


# ------------------------------------------------------------------ which routes take a key


@pytest.mark.django_db
def test_the_routes_that_take_a_key_are_the_rest_api_and_the_surfaces_attacked_here():
    found = key_routes()
    rest = {route.route for route in django_routes() if route.is_rest}
    assert rest, "the REST API's routes were not found"
    # Every REST route authenticates keys (DRF's default), and asking finds each of them.
    assert {route.route for route in found if route.is_rest} == rest
    others = {route.route for route in found if not route.is_rest}
    assert others == set(HAND_ATTACKED), (
        "a route outside the REST API looks API keys up: attack it in this file and add it to HAND_ATTACKED"
        if others - set(HAND_ATTACKED) else "a hand-attacked surface no longer takes a key: remove it here")


def test_the_a2a_app_in_front_of_django_has_only_the_routes_attacked_here():
    from config import asgi
    from interop import a2a

    assert isinstance(asgi.application.application_mapping["http"], asgi.A2AInFront)
    routes = {(route.path, frozenset(route.methods or ())) for route in a2a.application.routes}
    assert routes == A2A_ROUTES


# ------------------------------------------------------------------ the REST API, every route


@pytest.mark.django_db
def test_a_read_key_is_refused_every_rest_write_and_a_run_key_every_write_but_a_run(world):
    client = Client(raise_request_exception=False)
    before = database_state()
    checked = 0
    for route in (r for r in django_routes() if r.is_rest):
        for method in route.writes():
            for attacker in ("read", "run"):
                if attacker == "run" and route.permission(method) == "agents:run":
                    continue
                response = getattr(client, method)(route.url(), headers=_bearer(world.keys[attacker]),
                                                   content_type="application/json", data={})
                assert response.status_code == 403, (attacker, method, route.route, response.content)
                assert response.json()["error"]["code"] == "insufficient_scope", (attacker, method, route.route)
                checked += 1
    assert checked > 200
    assert database_state() == before


@pytest.mark.django_db
def test_a_revoked_or_expired_key_is_refused_on_every_route_that_takes_a_key(world):
    client = Client(raise_request_exception=False)
    before = database_state()
    for route, methods in key_routes().items():
        for method in methods:
            for attacker in ("revoked", "expired"):
                response = getattr(client, method)(route.url(), headers=_bearer(world.keys[attacker]))
                assert response.status_code == 401, (attacker, method, route.route, response.content)
    assert database_state() == before
    assert not ApiKey.objects.filter(last_used_at__isnull=False).exists()


@pytest.mark.django_db
def test_another_organizations_keys_cannot_touch_this_ones_agent_conversation_or_run(world):
    """Every REST route that names an agent, a conversation or a run, with this organization's ids, under every
    method it serves: the rival's run key and admin key are refused and leave it all as it was."""
    client = Client(raise_request_exception=False)
    ids = {"agent_id": str(world.agent.pk), "run_id": str(world.run.pk),
           "conversation_id": str(world.run.conversation_id)}
    before = database_state()
    attacked = set()
    for route in (r for r in django_routes() if r.is_rest):
        names = {m["name"] for m in PARAM.finditer(route.route)}
        if not names or not names <= set(ids):
            continue
        for method in route.methods():
            for attacker in ("rival run", "rival admin"):
                response = getattr(client, method)(route.url(**ids), headers=_bearer(world.keys[attacker]),
                                                   content_type="application/json", data=HOSTILE_BODY)
                # The run key's scope refuses a write other than a run before anything is looked up (the test
                # above); past the scope, this organization's ids are not found from another's.
                refused = (attacker == "rival run" and method in route.writes()
                           and route.permission(method) != "agents:run")
                expected = (403, "insufficient_scope") if refused else (404, "not_found")
                assert (response.status_code, response.json()["error"]["code"]) == expected, (
                    attacker, method, route.route, response.content)
                assert b"acme" not in response.content.lower(), (attacker, method, route.route)
                attacked.add((route.route, method))
    assert ("api/v1/agents/<uuid:agent_id>/run", "post") in attacked
    assert ("api/v1/runs/<uuid:run_id>/stop", "post") in attacked
    assert ("api/v1/conversations/<uuid:conversation_id>", "delete") in attacked
    assert database_state() == before


# ------------------------------------------------------------------ the surfaces outside the REST API (ASGI)


async def _asgi_world() -> World:
    from asgiref.sync import sync_to_async

    return await sync_to_async(build_world)()


def _http():
    import httpx

    from config.asgi import application

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://testserver",
                             timeout=30)


async def _runs() -> int:
    return await Run.objects.acount()


async def _close_connections() -> None:
    from asgiref.sync import sync_to_async
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
async def test_chat_completions_holds_every_key_to_its_scope_and_organization():
    world = await _asgi_world()
    slug = world.agent.slug

    async def ask(attacker: str, model: str = slug, messages: Any = None, **headers: str):
        body = {"model": model, "messages": messages if messages is not None else [{"role": "user", "content": "x"}]}
        async with _http() as http:
            return await http.post("/v1/chat/completions", json=body, headers={**_bearer(world.keys[attacker]),
                                                                                  **headers})

    runs = await _runs()
    # Past the check, a run key's request is the model's to answer: an empty conversation is the client's error.
    assert (await ask("run", messages=[])).status_code == 400
    refused = await ask("read")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    for model in (slug, str(world.agent.pk)):
        for attacker in ("rival run", "rival admin"):
            response = await ask(attacker, model=model,
                                 **{"X-AgenticOS-Conversation-Id": str(world.run.conversation_id)})
            assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"
        # Naming this organization with the rival's key is not a way in either.
        assert (await ask("rival run", model=model, **{"X-Organization-Id": str(world.org.pk)})).status_code == 404
    assert (await ask("viewer")).status_code == 403
    for attacker in ("revoked", "expired"):
        assert (await ask(attacker)).status_code == 401
    assert await _runs() == runs
    await _close_connections()


@pytest.mark.django_db(transaction=True)
async def test_the_model_list_shows_a_key_only_its_organizations_runnable_agents():
    world = await _asgi_world()

    async def models(attacker: str):
        async with _http() as http:
            return await http.get("/v1/models", headers=_bearer(world.keys[attacker]))

    # Listing is a read: a read key may; what it lists is the organization's runnable agents only.
    for attacker in ("read", "run"):
        listed = [m["id"] for m in (await models(attacker)).json()["data"]]
        assert world.agent.slug in listed and {m.partition("@")[0] for m in listed} == {world.agent.slug}
    for attacker in ("rival run", "rival admin", "viewer"):
        listed = await models(attacker)
        assert listed.status_code == 200 and listed.json()["data"] == []
    for attacker in ("revoked", "expired"):
        assert (await models(attacker)).status_code == 401
    await _close_connections()


@pytest.mark.django_db(transaction=True)
async def test_mcp_holds_every_key_to_its_scope_and_organization():
    world = await _asgi_world()
    tool = "ask_" + world.agent.slug.replace("-", "_")

    async def rpc(attacker: str, method: str, params: dict | None = None):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        async with _http() as http:
            return await http.post("/mcp", json=body, headers={
                **_bearer(world.keys[attacker]), "Accept": "application/json, text/event-stream"})

    runs = await _runs()
    listed = await rpc("run", "tools/list")
    assert [t["name"] for t in listed.json()["result"]["tools"]] == [tool]
    for method, params in (("tools/list", None), ("tools/call", {"name": tool, "arguments": {"message": "x"}})):
        refused = await rpc("read", method, params)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    for attacker in ("rival run", "rival admin", "viewer"):
        assert (await rpc(attacker, "tools/list")).json()["result"]["tools"] == []
        called = (await rpc(attacker, "tools/call", {"name": tool, "arguments": {"message": "x"}})).json()["result"]
        assert called["isError"] and "Unknown tool" in called["content"][0]["text"]
    for attacker in ("revoked", "expired"):
        assert (await rpc(attacker, "tools/list")).status_code == 401
    assert await _runs() == runs
    await _close_connections()


def _a2a_message(text: str) -> dict:
    return {"role": "user", "parts": [{"kind": "text", "text": text}], "messageId": uuid.uuid4().hex}


@pytest.mark.django_db(transaction=True)
async def test_a2a_holds_every_key_to_its_scope_and_organization():
    world = await _asgi_world()
    slug = world.agent.slug
    card = f"/a2a/{slug}/.well-known/agent-card.json"
    calls = {
        "message/send": {"message": _a2a_message("acme plans, please")},
        "message/stream": {"message": _a2a_message("acme plans, please")},
        "tasks/get": {"id": uuid.uuid4().hex},
        "tasks/cancel": {"id": uuid.uuid4().hex},
    }

    async def rpc(attacker: str, method: str, params: dict, path: str = f"/a2a/{slug}"):
        async with _http() as http:
            return await http.post(path, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                                   headers=_bearer(world.keys[attacker]))

    async def get(attacker: str, path: str = card):
        async with _http() as http:
            return await http.get(path, headers=_bearer(world.keys[attacker]))

    runs = await _runs()
    # Past the check, a run key's message is the agent's: an empty one is rejected there, and runs nothing.
    accepted = await rpc("run", "message/send", {"message": _a2a_message(" ")})
    assert accepted.status_code == 200 and "result" in accepted.json(), accepted.text
    # The card is a read; every JSON-RPC call is a write a read key may not make (as /v1 and /mcp refuse it).
    assert (await get("read")).status_code == 200
    for path in (f"/a2a/{slug}", f"/a2a/{slug}/", f"/a2a/{world.agent.pk}"):
        for method, params in calls.items():
            refused = await rpc("read", method, params, path)
            assert refused.status_code == 403, (method, path, refused.text)
            assert refused.json()["error"]["code"] == "insufficient_scope"
    for attacker in ("rival run", "rival admin", "viewer"):
        assert (await get(attacker)).status_code == 404
        for method, params in calls.items():
            assert (await rpc(attacker, method, params)).status_code == 404, (attacker, method)
    for attacker in ("revoked", "expired"):
        assert (await get(attacker)).status_code == 401
        for method, params in calls.items():
            assert (await rpc(attacker, method, params)).status_code == 401, (attacker, method)
    assert await _runs() == runs
    await _close_connections()


# ------------------------------------------------------------------ the console and the sockets admit no key


@pytest.mark.django_db
def test_the_console_does_not_take_an_api_key_for_a_session(world):
    client = Client()
    for path in ("/", "/settings/api-keys/", f"/agents/{world.agent.pk}/"):
        response = client.get(path, headers=_bearer(world.keys["run"]))
        assert response.status_code == 302 and "login" in response["Location"], path


SOCKETS = {"ws/chat/", "ws/call/", "ws/browse/<uuid:run_id>/<str:call_id>/", "^api/v1/embed/",
           "^api/v1/embed(?:/|$)"}


@pytest.mark.django_db(transaction=True)
async def test_no_socket_is_opened_with_an_api_key():
    from channels.testing import WebsocketCommunicator

    from config.asgi import application
    from config.routing import websocket_urlpatterns
    from embeds.consumers import REFUSED_CODE

    assert {str(p.pattern).split("(?P<key>")[0] for p in websocket_urlpatterns} == SOCKETS
    world = await _asgi_world()
    bearer = [(b"authorization", f"Bearer {world.keys['run']}".encode())]
    for path in ("/ws/chat/", f"/ws/call/?agent={world.agent.pk}", f"/ws/browse/{world.run.pk}/call-1/"):
        communicator = WebsocketCommunicator(application, path, headers=bearer)
        connected, code = await communicator.connect(timeout=10)
        assert not connected and code == 4003, path
        await communicator.disconnect()
    # The embed socket admits by its embed's public key only (it accepts, then closes with a code a page reads).
    for path in ("/api/v1/embed/ws", f"/api/v1/embed/{world.keys['run']}/ws"):
        communicator = WebsocketCommunicator(application, path, headers=bearer)
        connected, _ = await communicator.connect(timeout=10)
        closed = await communicator.receive_output(timeout=10)
        assert closed["type"] == "websocket.close" and closed["code"] == REFUSED_CODE, path
        await communicator.disconnect()
    await _close_connections()
