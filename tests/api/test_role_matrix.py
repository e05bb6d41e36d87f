"""The role matrix: every route under `agents/{id}/…` and every by-id route of an object that hangs off an
agent (embeds, bindings, versions, environments, grants, avatar, export, diff, publish, promote, run, triggers,
evaluation suites and their runs, rollouts) × every role, an outsider organization, someone naming a foreign organization, and people on a private agent they
hold no grant on / a view grant / an edit grant.

Each route declares what it needs — a permission from the role table (`agenticos.permissions`) and a level on
the agent (view < use < edit < publish, `governance.grants`) — and each persona what it has. A refused request
must leave every row as it was; an accepted write must change something (so the snapshot cannot miss it).
`test_every_agent_route_is_in_the_matrix` walks the URL resolver, so a new nested route cannot be left out.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from agenticos.permissions import ROLE_PERMISSIONS
from agents import rollouts
from agents import services as agents
from channelbots import services as bots
from embeds.models import Embed
from evals import replay_gate
from evals import services as evals
from evals.models import Suite, SuiteRun
from governance import grants
from identity import roles
from knowledge.models import MemoryNote
from tests import factories
from tests.api.conftest import actor_of, make_agent
from tests.api.state import TABLES, changed_tables
from tests.api.state import database_state as _database_state
from triggers import services as triggers
from triggers.models import TriggerFiring

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
# The levels on an agent, weakest first (written out here, not imported from the code under test).
RANK = {None: 0, "view": 1, "use": 2, "edit": 3, "publish": 4}
# The shared snapshot's tables, and what the evaluation routes write (suites, their cases, suite runs, results).
MATRIX_TABLES = (*TABLES, "evals.Suite", "evals.Case", "evals.SuiteRun", "evals.CaseResult", "agents.Rollout",
                 "evals.ReplayGate")


def database_state() -> dict:
    return _database_state(MATRIX_TABLES)


# ------------------------------------------------------------------ who asks


@dataclass(frozen=True)
class Persona:
    user: str  # key in the world's `people`
    role: str | None  # role in the organization the request names (None: not a member of it)
    level: str | None  # effective level on the target agent (None: cannot see it)
    target: str = "shared"  # which agent (and its objects) the request names
    foreign: bool = False  # the request names an organization the person is not a member of
    outsider: bool = False  # the request names the person's own, other organization
    custom: frozenset[str] | None = None  # a custom role's permissions (the world composes it; role is its name)

    def expected(self, route: Route) -> int:
        if self.foreign or self.outsider:
            return 404
        held = self.custom if self.custom is not None else ROLE_PERMISSIONS[self.role]
        if route.permission and route.permission not in held:
            return 403  # decided by the role alone, before any object is read: reveals nothing
        if self.level is None:
            return route.unseen
        if RANK[self.level] < RANK[route.level]:
            return 403
        if route.then_permission and route.then_permission not in held:
            return 403
        return route.ok


# Custom roles the world composes (written out here, not derived from the code under test): one that may only
# see and run agents, one that edits every agent without the right to publish by role, one that reads runs and
# the audit log but cannot see agents, one that authors agents and publishes its own.
CUSTOM_ROLES: dict[str, frozenset[str]] = {
    "runner": frozenset({"agents:view", "agents:run"}),
    "curator": frozenset({"agents:view", "agents:edit", "agents:edit_any"}),
    "auditor": frozenset({"runs:view", "audit:read"}),
    "author": frozenset({"agents:view", "agents:edit", "agents:publish", "agents:run"}),
}

PERSONAS = {
    # The organization-wide agent, owned by the owner.
    "viewer": Persona("viewer", "viewer", "view"),
    "member": Persona("member", "member", "use"),
    "builder": Persona("builder", "builder", "use"),
    "admin": Persona("admin", "admin", "publish"),
    "owner": Persona("owner", "owner", "publish"),
    "outsider": Persona("outsider", "owner", None, outsider=True),
    "foreign header": Persona("outsider", None, None, foreign=True),
    # The owner's private agent.
    "builder without a grant": Persona("builder", "builder", None, target="private"),
    "member without a grant": Persona("member", "member", None, target="private"),
    "builder with a view grant": Persona("viewing_builder", "builder", "view", target="private"),
    "builder with an edit grant": Persona("editing_builder", "builder", "edit", target="private"),
    # Custom roles an owner composed (identity.roles): the same checks, through the same permission map.
    "custom runner": Persona("custom_runner", "runner", "use", custom=CUSTOM_ROLES["runner"]),
    "custom runner on the private agent": Persona("custom_runner", "runner", None, target="private",
                                                  custom=CUSTOM_ROLES["runner"]),
    "custom curator": Persona("custom_curator", "curator", "publish", custom=CUSTOM_ROLES["curator"]),
    "custom curator on the private agent": Persona("custom_curator", "curator", "publish", target="private",
                                                   custom=CUSTOM_ROLES["curator"]),
    "custom auditor": Persona("custom_auditor", "auditor", None, custom=CUSTOM_ROLES["auditor"]),
    "custom author without a grant": Persona("custom_author", "author", None, target="private",
                                             custom=CUSTOM_ROLES["author"]),
}


# ------------------------------------------------------------------ what is asked


@dataclass(frozen=True)
class Route:
    method: str
    name: str  # URL name
    kwargs: dict[str, str]  # URL kwarg → key in the target's objects
    level: str  # level on the agent the route needs
    ok: int  # status when allowed
    permission: str | None = None  # role permission the view declares
    body: Any = None  # JSON body; "{key}" values filled from the target's objects
    query: str = ""
    multipart: bool = False
    label: str = field(default="")
    bad_body: Any = field(default_factory=list)  # a body the route refuses (a JSON array where an object goes)
    unseen: int = 404  # the answer when the caller cannot see the agent (a bot is listed: it is refused, 403)
    # A role permission the service checks once the agent is found and the level is enough (no built-in role with
    # the level lacks it; a custom role may).
    then_permission: str | None = None

    @property
    def writes(self) -> bool:
        return self.method != "get"

    def __str__(self) -> str:
        return self.label or f"{self.method.upper()} {self.name}"


AGENT = {"pk": "agent"}
ROLLOUT = {"pk": "agent", "name": "staging_env", "rollout_id": "rollout"}
ROUTES = [
    # agents/urls.py
    Route("get", "api-agent", AGENT, "view", 200, "agents:view"),
    Route("patch", "api-agent", AGENT, "edit", 200, body={"name": "Renamed"}),
    Route("delete", "api-agent", AGENT, "publish", 204),
    Route("post", "api-agent-publish", AGENT, "publish", 201, body={"note": "again"}),
    Route("get", "api-agent-versions", AGENT, "view", 200, "agents:view"),
    Route("get", "api-agent-version", {**AGENT, "number": "one"}, "view", 200, "agents:view"),
    Route("get", "api-agent-diff", AGENT, "view", 200, "agents:view", query="?from=1&to=draft"),
    Route("get", "api-agent-environments", AGENT, "view", 200, "agents:view"),
    Route("post", "api-agent-promote", {**AGENT, "name": "production_env"}, "publish", 200, body={"version": 2}),
    # Rollouts (issue 42): start one on production; the world's open one is on staging (v1 → candidate v2).
    Route("post", "api-agent-rollouts", {**AGENT, "name": "production_env"}, "publish", 201,
          body={"candidate_version": 2, "share": 10}),
    Route("get", "api-agent-rollout", ROLLOUT, "publish", 200, "agents:view"),
    Route("post", "api-agent-rollout-pause", ROLLOUT, "publish", 200),
    Route("post", "api-agent-rollout-advance", ROLLOUT, "publish", 200, body={"share": 90}),
    Route("post", "api-agent-rollout-promote", ROLLOUT, "publish", 200),
    Route("post", "api-agent-rollout-abort", ROLLOUT, "publish", 200, body={"reason": "Enough."}),
    Route("get", "api-agent-export", AGENT, "view", 200, "agents:view"),
    Route("post", "api-agent-avatar", AGENT, "edit", 200, multipart=True),
    Route("delete", "api-agent-avatar", AGENT, "edit", 204),
    Route("get", "api-agent-grants", AGENT, "view", 200, "agents:view"),
    Route("post", "api-agent-grants", AGENT, "edit", 201, body={"user_id": "{colleague}", "level": "view"}),
    Route("delete", "api-agent-grant", {**AGENT, "user_id": "grantee"}, "edit", 204),
    # agents/urls.py: the missing-capability card's actions (agents/capability_card.py)
    Route("post", "api-agent-capability-enable", {**AGENT, "capability_id": "card_capability"}, "edit", 200),
    Route("post", "api-agent-capability-request", {**AGENT, "capability_id": "card_capability"}, "use", 200,
          body={"reason": "To read a page."}),
    Route("post", "api-agents-import", {}, "edit", 200, body={"yaml": "{yaml}", "agent_id": "{agent}"},
          label="POST api-agents-import (replace a draft)", bad_body={"yaml": "spec: [", "agent_id": "{agent}"}),
    # agents/urls_runs.py
    Route("post", "agent-run", {"agent_id": "agent"}, "use", 202, "agents:run", body={"prompt": "Hello"},
          query="?wait=false"),
    # embeds/urls.py
    Route("get", "agent-embeds", {"agent_id": "agent"}, "view", 200, "embeds:manage"),
    Route("post", "agent-embeds", {"agent_id": "agent"}, "edit", 201, "embeds:manage", body={"kind": "page"}),
    Route("get", "embed-detail", {"embed_id": "embed"}, "view", 200, "embeds:manage"),
    Route("patch", "embed-detail", {"embed_id": "embed"}, "edit", 200, "embeds:manage",
          body={"title": "Taken over"}),
    Route("patch", "embed-detail", {"embed_id": "widget"}, "edit", 200, "embeds:manage",
          body={"allowed_origins": ["https://evil.example"]}, label="PATCH embed-detail (allowed origins)"),
    Route("delete", "embed-detail", {"embed_id": "embed"}, "edit", 204, "embeds:manage"),
    Route("post", "embed-pause", {"embed_id": "embed"}, "edit", 200, "embeds:manage"),
    Route("post", "embed-resume", {"embed_id": "paused_embed"}, "edit", 200, "embeds:manage"),
    Route("post", "embed-logo-upload", {"embed_id": "embed"}, "edit", 200, "embeds:manage", multipart=True),
    # channelbots/urls.py
    Route("get", "agent-bindings", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("post", "agent-bindings", {"agent_id": "agent"}, "edit", 201, "bots:manage", body={"bot_id": "{free_bot}"}),
    Route("get", "agent-binding-detail", {"agent_id": "agent", "binding_id": "binding"}, "view", 200, "agents:view"),
    Route("patch", "agent-binding-detail", {"agent_id": "agent", "binding_id": "binding"}, "edit", 200,
          "bots:manage", body={"extra_prompt": "Answer in French."}),
    Route("delete", "agent-binding-detail", {"agent_id": "agent", "binding_id": "binding"}, "edit", 204,
          "bots:manage"),
    # triggers/urls.py: the agent's triggers, and one by id
    Route("get", "api-agent-triggers", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("post", "api-agent-triggers", {"agent_id": "agent"}, "edit", 201,
          body={"name": "Weekly", "kind": "schedule", "prompt": "Report.", "cron": "0 9 * * 1", "timezone": "UTC"}),
    Route("get", "api-trigger", {"trigger_id": "trigger"}, "view", 200, "agents:view"),
    Route("patch", "api-trigger", {"trigger_id": "trigger"}, "edit", 200, body={"prompt": "Write it in French."}),
    Route("delete", "api-trigger", {"trigger_id": "trigger"}, "edit", 204),
    Route("post", "api-trigger-pause", {"trigger_id": "trigger"}, "edit", 200),
    Route("post", "api-trigger-resume", {"trigger_id": "paused_trigger"}, "edit", 200),
    Route("post", "api-trigger-rotate-secret", {"trigger_id": "event_trigger"}, "edit", 200),
    Route("post", "api-trigger-fire", {"trigger_id": "trigger"}, "edit", 202),
    Route("get", "api-trigger-runs", {"trigger_id": "trigger"}, "view", 200, "agents:view"),
    # evals/urls.py: the agent's evaluation suites, one suite, its YAML, the suite runs and one run
    Route("get", "api-agent-evals", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("post", "api-agent-evals", {"agent_id": "agent"}, "edit", 201,
          body={"name": "Another", "cases": [{"name": "greets", "prompt": "Say hello."}]}),
    Route("post", "api-agent-evals-import", {"agent_id": "agent"}, "edit", 201, body={"yaml": "{suite_yaml}"},
          label="POST api-agent-evals-import (a new suite)"),
    Route("post", "api-agent-evals-import", {"agent_id": "agent"}, "edit", 200,
          body={"yaml": "{suite_yaml}", "suite_id": "{suite}"}, label="POST api-agent-evals-import (replace a suite)",
          bad_body={"yaml": "kind: agent\nsurprise: 1\n", "suite_id": "{suite}"}),
    Route("get", "api-agent-eval-runs", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("post", "api-agent-eval-runs", {"agent_id": "agent"}, "edit", 202,
          body={"suite_id": "{suite}", "target": "production"}, then_permission="agents:run"),
    Route("get", "api-agent-eval", {"agent_id": "agent", "suite_id": "suite"}, "view", 200, "agents:view"),
    Route("patch", "api-agent-eval", {"agent_id": "agent", "suite_id": "suite"}, "edit", 200,
          body={"description": "Changed by the matrix"}),
    Route("delete", "api-agent-eval", {"agent_id": "agent", "suite_id": "suite"}, "edit", 204),
    Route("get", "api-agent-eval-yaml", {"agent_id": "agent", "suite_id": "suite"}, "view", 200, "agents:view"),
    Route("get", "api-eval-run", {"run_id": "suite_run"}, "view", 200, "agents:view"),
    # evals/urls.py: the agent's replays (starting one is per person: tests/evals/test_replays_api.py)
    Route("get", "api-agent-replays", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("get", "api-agent-replay-gate", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("put", "api-agent-replay-gate", {"agent_id": "agent"}, "edit", 200, "agents:edit",
          body={"runs": 7, "max_failed": 1}),
    Route("delete", "api-agent-replay-gate", {"agent_id": "agent"}, "edit", 204, "agents:edit"),
    Route("get", "api-agent-run-tags", {"agent_id": "agent"}, "view", 200, "agents:view"),
    Route("get", "api-eval-run-compare", {"run_id": "suite_run"}, "view", 200, "agents:view",
          query="?with={suite_run}"),
    # knowledge/urls.py: one agent's memory, everyone's
    Route("post", "api-memory-agent-clear", {"agent_id": "agent"}, "edit", 200),
    # A bot bound to the agent: its token, server and access policy decide who reaches the agent.
    Route("patch", "channel-bot-detail", {"bot_id": "bound_bot"}, "edit", 200, "bots:manage",
          body={"name": "Taken over", "access_policy": {"mode": "whitelist", "whitelist": ["U-ATTACKER"]}}, unseen=403,
          label="PATCH channel-bot-detail (the agent's bot)"),
    Route("delete", "channel-bot-detail", {"bot_id": "bound_bot"}, "edit", 204, "bots:manage", unseen=403,
          label="DELETE channel-bot-detail (the agent's bot)"),
    Route("post", "channel-bot-pause", {"bot_id": "bound_bot"}, "edit", 200, "bots:manage", unseen=403,
          label="POST channel-bot-pause (the agent's bot)"),
    Route("post", "channel-bot-resume", {"bot_id": "paused_bot"}, "edit", 200, "bots:manage", unseen=403,
          label="POST channel-bot-resume (the agent's paused bot)"),
]


# ------------------------------------------------------------------ the world


def _agent_with_everything(org, owner, profile, *, name: str, visibility: str, grantee, bot_token: str) -> dict:
    actor = actor_of(owner, org)
    agent = make_agent(owner, org, name=name, slug=name.lower(), visibility=visibility, profile=profile)
    agents.publish_agent(actor=actor, agent=agent, note="v1")
    agents.publish_agent(actor=actor, agent=agent, note="v2")  # production stays on 1: promoting to 2 is a change
    # A draft with a change since v2, so the matrix's publish makes a version (an unchanged one is refused, 409).
    agents.update_agent(actor=actor, agent=agent, spec={**agent.draft_spec, "description": "Changed since v2"})
    agents.set_avatar(actor=actor, agent=agent, data=PNG)
    grants.share_agent(actor=actor, agent=agent, user_id=grantee.pk, level="view")
    bound = bots.create_bot(actor=actor, data={"platform": "slack", "name": f"{name} bot", "token": bot_token})
    free = bots.create_bot(actor=actor, data={"platform": "slack", "name": f"{name} spare", "token": bot_token + "-spare"})
    binding = bots.create_binding(actor=actor, agent=agent, data={"bot_id": str(bound.pk)})
    paused = bots.create_bot(actor=actor, data={"platform": "slack", "name": f"{name} paused", "token": bot_token + "-p"})
    bots.create_binding(actor=actor, agent=agent, data={"bot_id": str(paused.pk)})
    bots.set_paused(actor=actor, bot=paused, paused=True)
    trigger, _secret = triggers.create_trigger(actor=actor, agent=agent, data={
        "name": "Nightly", "kind": "schedule", "prompt": "Write the nightly report.", "cron": "0 9 * * *",
        "timezone": "UTC"})
    TriggerFiring.objects.create(organization=org, trigger=trigger, due_at=trigger.created_at,
                                 source=TriggerFiring.Source.MANUAL, status=TriggerFiring.Status.SKIPPED,
                                 reason="The previous run is still going.")
    paused_trigger, _secret = triggers.create_trigger(actor=actor, agent=agent, data={
        "name": "Hourly", "kind": "schedule", "prompt": "Check the inbox.", "every_seconds": 3600})
    triggers.set_enabled(actor=actor, trigger=paused_trigger, enabled=False)
    event_trigger, secret = triggers.create_trigger(actor=actor, agent=agent, data={
        "name": "On order", "kind": "event", "prompt": "A new order arrived."})
    assert secret
    agents.promote_environment(actor=actor, agent=agent, environment="staging", version=1)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="staging", candidate=2, share=20)
    suite = evals.create_suite(actor=actor, agent=agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "Say hello.", "checks": [{"kind": "contains", "value": "hello"}]}]})
    suite_yaml = evals.export_suite_yaml(actor=actor, suite=suite).replace("Smoke", "Imported")
    assert "Imported" in suite_yaml
    replay_gate.set_gate(actor=actor, agent=agent, data={"runs": 5, "suite_id": str(suite.pk)})
    MemoryNote.objects.create(organization=org, agent=agent, owner_user=grantee, name="diet.md", content="Vegetarian.")
    yaml = agents.export_agent_yaml(actor=actor, agent=agent).replace("Be helpful.", "Be brief.")
    assert "Be brief." in yaml
    return {
        "agent": agent.pk,
        "suite_run": _evaluated_agent_run(actor, profile, name=f"{name} evaluated", visibility=visibility),
        "one": "1",
        "card_capability": "web_fetch",
        "production_env": "production",
        "staging_env": "staging",
        "rollout": rollout.pk,
        "grantee": str(grantee.pk),
        "embed": factories.embed(agent, kind="page", created_by=owner).pk,
        "widget": factories.embed(agent, kind="widget", created_by=owner).pk,
        "paused_embed": factories.embed(agent, kind="page", created_by=owner, is_paused=True).pk,
        "binding": binding.pk,
        "trigger": trigger.pk,
        "paused_trigger": paused_trigger.pk,
        "event_trigger": event_trigger.pk,
        "suite": suite.pk,
        "suite_yaml": suite_yaml,
        "free_bot": free.pk,
        "bound_bot": bound.pk,
        "paused_bot": paused.pk,
        "yaml": yaml,
    }


def _evaluated_agent_run(actor, profile, *, name: str, visibility: str):
    """A suite run, on a sibling agent of the same owner and visibility (so every persona has the same level on
    it): a suite run keeps its version (PROTECT), and the matrix's DELETE api-agent needs a deletable agent."""
    agent = make_agent(actor.user, actor.organization, name=name, slug=name.lower().replace(" ", "-"),
                       visibility=visibility, profile=profile)
    agents.publish_agent(actor=actor, agent=agent, note="v1")
    suite = evals.create_suite(actor=actor, agent=agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "Say hello."}]})
    return evals.start_suite_run(actor=actor, suite=suite, target="production", enqueue=False).pk


@pytest.fixture(scope="module")
def _world_of_the_module(django_db_setup, django_db_blocker, tmp_path_factory):
    """The world is built once for the module's ~200 tests (building it — two agents with everything, published,
    evaluated, shared — was most of each test's time), in a transaction left open around them and rolled back
    after the last. Each test still runs in a savepoint of its own inside it (pytest-django's atomics nest), so
    every test starts from the same world and nothing a test wrote outlives it."""
    from django.test import override_settings

    media = override_settings(MEDIA_ROOT=str(tmp_path_factory.mktemp("media")))
    outer = transaction.atomic()
    # As the suite's autouse fixture does for every test: no run is handed to a Celery worker.
    with django_db_blocker.unblock(), pytest.MonkeyPatch.context() as patch:
        patch.setattr("agents.runs.enqueue_run", lambda run_id: None)
        media.enable()
        outer.__enter__()
        try:
            org = factories.organization(name="Acme")
            owner = factories.member(org, "owner")
            outsider_org = factories.organization(name="Other Corp")
            people = {"viewer": factories.member(org, "viewer"), "member": factories.member(org, "member"),
                      "builder": factories.member(org, "builder"), "admin": factories.member(org, "admin"),
                      "owner": owner, "outsider": factories.member(outsider_org, "owner")}
            demo_profile = agents.create_model_profile(actor=actor_of(owner, org), label="demo", provider="demo",
                                                       model="demo")
            built = _build_world(org, people, outsider_org, demo_profile)
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            media.disable()
            raise
    yield built
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)
        media.disable()


@pytest.fixture
def world(_world_of_the_module, db):
    """The module's world, its people read again for each test (nothing a request cached on a user object
    carries over from an earlier test)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.in_bulk([person.pk for person in _world_of_the_module["people"].values()])
    return {**_world_of_the_module,
            "people": {name: users[person.pk] for name, person in _world_of_the_module["people"].items()}}


def _build_world(org, people: dict, outsider_org, demo_profile) -> dict:
    owner = people["owner"]
    grantee = factories.member(org, "member")
    colleague = factories.member(org, "member")
    viewing_builder = factories.member(org, "builder")
    editing_builder = factories.member(org, "builder")
    shared = _agent_with_everything(org, owner, demo_profile, name="Shared", visibility="organization",
                                    grantee=grantee, bot_token="xoxb-shared-0001")
    private = _agent_with_everything(org, owner, demo_profile, name="Private", visibility="private",
                                     grantee=grantee, bot_token="xoxb-private-0001")
    actor = actor_of(owner, org)
    for agent in (private_agent(private), SuiteRun.objects.get(pk=private["suite_run"]).agent):
        grants.share_agent(actor=actor, agent=agent, user_id=viewing_builder.pk, level="view")
        grants.share_agent(actor=actor, agent=agent, user_id=editing_builder.pk, level="edit")
    for target in (shared, private):
        target["colleague"] = str(colleague.pk)
    custom_people = {}
    for name, permissions in CUSTOM_ROLES.items():
        role = roles.create_role(actor=actor, name=name, permissions=sorted(permissions))
        custom_people[f"custom_{name}"] = factories.member(org, role.key)
    return {
        "org": org,
        "outsider_org": outsider_org,
        "people": {**people, "viewing_builder": viewing_builder, "editing_builder": editing_builder, **custom_people},
        "shared": shared,
        "private": private,
    }


def private_agent(target: dict):
    from agents.models import Agent

    return Agent.objects.get(pk=target["agent"])


def _client(api_as, world, persona: Persona):
    person = world["people"][persona.user]
    return api_as(person, world["outsider_org"] if persona.outsider else world["org"])


def _fill(value, objects: dict):
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return str(objects[value[1:-1]])
    if isinstance(value, dict):
        return {k: _fill(v, objects) for k, v in value.items()}
    return value


def _url(route: Route, objects: dict) -> str:
    path = reverse(route.name, kwargs={k: str(objects[v]) for k, v in route.kwargs.items()})
    return path + route.query.format_map(objects)  # "{key}" in the query: an id of the target's objects


def _call(client, route: Route, objects: dict):
    url = _url(route, objects)
    send = getattr(client, route.method)
    if route.multipart:
        return send(url, {"file": SimpleUploadedFile("logo.png", PNG, content_type="image/png")}, format="multipart")
    if route.body is None:
        return send(url)
    return send(url, _fill(route.body, objects), format="json")


class _RolledBack(Exception):
    pass


@contextlib.contextmanager
def rolled_back():
    """Whatever the request wrote is undone (a savepoint), so every persona meets the same world."""
    try:
        with transaction.atomic():
            yield
            raise _RolledBack
    except _RolledBack:
        pass


def _attempt(client, route: Route, objects: dict, wanted: int, start: dict) -> str | None:
    """What is wrong with this persona's request, or None."""
    before = database_state()
    if before != start:
        return "did not start from the same world as the others"
    response = _call(client, route, objects)
    if response.status_code != wanted:
        return f"answered {response.status_code}, wanted {wanted}: {response.content[:200]!r}"
    changed = changed_tables(before, database_state())
    if wanted >= 400:
        code = response.json()["error"]["code"]
        if code != {403: "forbidden", 404: "not_found"}[wanted]:
            return f"error code {code}"
        if changed:
            return f"refused, but wrote to {changed}"
    elif route.writes and not changed:
        return "accepted a write that changed nothing the snapshot sees"
    elif not route.writes and changed:
        return f"a read wrote to {changed}"
    return None


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_every_persona_gets_what_its_role_and_access_allow_and_a_refusal_changes_nothing(world, api_as, route):
    start = database_state()
    wrong = {}
    for name, persona in PERSONAS.items():
        with rolled_back():
            problem = _attempt(_client(api_as, world, persona), route, world[persona.target],
                               persona.expected(route), start)
        if problem:
            wrong[name] = problem
    assert wrong == {}


# Views outside this change's files that still validate the body before they check the agent (patches in the
# report of the session that added this test): strict, so the mark must go when they are fixed.
BODY_ROUTES = [pytest.param(r, id=str(r)) for r in ROUTES if r.body is not None or r.multipart]


def _call_with_a_bad_body(client, route: Route, objects: dict):
    url = _url(route, objects)
    send = getattr(client, route.method)
    if route.multipart:
        return send(url, {"note": "no file here"}, format="multipart")
    return send(url, _fill(route.bad_body, objects), format="json")


@pytest.mark.parametrize("route", BODY_ROUTES)
def test_who_may_not_ask_is_refused_before_the_body_is_read(world, api_as, route):
    """A refusal does not depend on the body: someone who may not ask gets 403/404 for a bad body too (never a
    400/422 that tells them how to phrase it), and someone who may gets the 400/422."""
    start = database_state()
    wrong = {}
    for name, persona in PERSONAS.items():
        refusal = persona.expected(route)
        # A body the serializer refuses is a 400, one a service refuses a 422: either says "the body".
        wanted = {400, 422} if refusal < 400 else {refusal}
        with rolled_back():
            response = _call_with_a_bad_body(_client(api_as, world, persona), route, world[persona.target])
            if response.status_code not in wanted:
                wrong[name] = f"answered {response.status_code}, wanted {wanted}: {response.content[:100]!r}"
            elif changed_tables(start, database_state()):
                wrong[name] = "wrote"
    assert wrong == {}


def test_a_private_agents_embeds_are_not_listed_through_the_embed_of_an_agent_the_builder_can_see(world, api_as):
    """The embed's own agent decides, not the agent named in the path of some other route."""
    builder = world["people"]["builder"]
    response = api_as(builder, world["org"]).get(reverse("embed-detail", kwargs={"embed_id": world["private"]["embed"]}))
    assert response.status_code == 404
    assert str(world["private"]["embed"]) not in response.content.decode()


def test_a_binding_is_read_only_through_its_own_agent(world, api_as):
    """agents/{shared}/bindings/{private binding}: the path's agent is visible, the binding is not its own."""
    owner = world["people"]["owner"]
    url = reverse("agent-binding-detail", kwargs={"agent_id": world["shared"]["agent"],
                                                  "binding_id": world["private"]["binding"]})
    client = api_as(owner, world["org"])
    before = database_state()
    assert client.get(url).status_code == 404
    assert client.patch(url, {"extra_prompt": "x"}, format="json").status_code == 404
    assert client.delete(url).status_code == 404
    assert changed_tables(before, database_state()) == []


def test_a_builder_cannot_publish_a_private_agent_as_a_public_page(world, api_as):
    """The reported attack end to end: no page row, no audit row, and the owner's widget keeps its origins."""
    builder = world["people"]["builder"]
    client = api_as(builder, world["org"])
    private = world["private"]
    created = client.post(reverse("agent-embeds", kwargs={"agent_id": private["agent"]}), {"kind": "page"},
                          format="json")
    widened = client.patch(reverse("embed-detail", kwargs={"embed_id": private["widget"]}),
                           {"allowed_origins": ["https://evil.example"]}, format="json")
    assert (created.status_code, widened.status_code) == (404, 404)
    assert Embed.objects.filter(agent_id=private["agent"]).count() == 3
    assert Embed.objects.get(pk=private["widget"]).allowed_origins == ["https://shop.example.com"]


def test_a_suite_is_reached_only_through_its_own_agent(world, api_as):
    """agents/{shared}/evals/{private suite}: the path's agent is visible, the suite is not its own."""
    owner = world["people"]["owner"]
    shared, private = world["shared"], world["private"]
    client = api_as(owner, world["org"])
    kwargs = {"agent_id": shared["agent"], "suite_id": private["suite"]}
    before = database_state()
    assert client.get(reverse("api-agent-eval", kwargs=kwargs)).status_code == 404
    assert client.get(reverse("api-agent-eval-yaml", kwargs=kwargs)).status_code == 404
    assert client.patch(reverse("api-agent-eval", kwargs=kwargs), {"description": "x"}, format="json").status_code == 404
    assert client.delete(reverse("api-agent-eval", kwargs=kwargs)).status_code == 404
    replaced = client.post(reverse("api-agent-evals-import", kwargs={"agent_id": shared["agent"]}),
                           {"yaml": shared["suite_yaml"], "suite_id": str(private["suite"])}, format="json")
    started = client.post(reverse("api-agent-eval-runs", kwargs={"agent_id": shared["agent"]}),
                          {"suite_id": str(private["suite"])}, format="json")
    assert (replaced.status_code, started.status_code) == (404, 404)
    assert changed_tables(before, database_state()) == []
    assert Suite.objects.get(pk=private["suite"]).name == "Smoke"


# ------------------------------------------------------------------ nothing left out

# Where the routes that act on one agent, or on an object of one agent, live under /api/v1/.
AGENT_ROUTE_PREFIXES = ("agents/", "triggers/<", "evals/", "embeds/<", "memory/agents/<")
# (method, URL name) under those prefixes that the matrix leaves out on purpose, each with why.
NOT_IN_THE_MATRIX = {
    # agents/capabilities: the organization's capability catalog, the same for every agent (it names none;
    # agents:view, tests/capabilities). (agents/import is in the matrix: it replaces one agent's draft.)
    ("get", "capability-catalog"): "names no agent",
    # agents/{id}/replays POST: which recorded runs a person may pick is theirs (runs:view, or their own runs), so
    # one body cannot answer alike for every persona; roles, outsiders and foreign runs are in
    # tests/evals/test_replays_api.py.
    ("post", "api-agent-replays"): "per-person selection, tested in tests/evals/test_replays_api.py",
    # agents/{id}/runs/{run_id}/tags: a run's tags are read and set only on a run the person may read (runs:view,
    # or their own run), so one run cannot answer alike for every persona; roles, outsiders, another
    # organization's run and someone else's run are in tests/evals/test_run_tags.py.
    ("get", "api-agent-run-tags-detail"): "per-person readable runs, tested in tests/evals/test_run_tags.py",
    ("put", "api-agent-run-tags-detail"): "per-person readable runs, tested in tests/evals/test_run_tags.py",
}
METHODS = ("get", "post", "put", "patch", "delete")


def _api_patterns(patterns, prefix: str = ""):
    """(path after /api/v1/, pattern) for every URL pattern, included URLconfs walked."""
    for pattern in patterns:
        here = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _api_patterns(pattern.url_patterns, here)
        elif isinstance(pattern, URLPattern) and here.startswith("api/v1/"):
            yield here.removeprefix("api/v1/"), pattern


def _methods(pattern: URLPattern) -> set[str]:
    view = getattr(pattern.callback, "view_class", None)
    if view is None:  # a plain function view: every method it may answer counts
        return set(METHODS)
    return {method for method in METHODS if hasattr(view, method)}


def test_every_agent_route_is_in_the_matrix():
    """Every (method, route) that acts on one agent or an object of one agent is a matrix row or a commented
    exclusion; an unnamed pattern is only a named one's trailing-slash twin (agenticos.api.route)."""
    in_matrix = {(route.method, route.name) for route in ROUTES}
    named: dict[str, str] = {}
    found: set[tuple[str, str]] = set()
    unnamed: list[str] = []
    for path, pattern in _api_patterns(get_resolver().url_patterns):
        if pattern.name is not None:
            named[path] = pattern.name
        if not path.startswith(AGENT_ROUTE_PREFIXES):
            continue
        if pattern.name is None:
            unnamed.append(path)
            continue
        found |= {(method, pattern.name) for method in _methods(pattern)}
    assert len(found) > 50  # the walk reached the agents, triggers, evals and embeds URLconfs
    assert {"api-trigger-fire", "api-agent-eval-yaml", "agent-binding-detail", "embed-detail"} <= {n for _, n in found}
    assert [path for path in unnamed if path.removesuffix("/") not in named] == []
    missing = sorted(found - in_matrix - set(NOT_IN_THE_MATRIX))
    assert missing == [], f"add a Route to ROUTES (or a commented NOT_IN_THE_MATRIX entry) for {missing}"
    # An exclusion or a matrix row for a route (or a method) that no longer exists is stale.
    assert sorted(set(NOT_IN_THE_MATRIX) - found) == []
    # (The agent's bots live under bots/, an organization's collection: their rows are checked by reverse().)
    assert sorted(row for row in in_matrix - found if not row[1].startswith("channel-bot")) == []
