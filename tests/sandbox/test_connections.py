"""Sandbox connections (Settings → Sandboxes): the deployment's own sandboxd registered as the default on
first need (on behalf of the owner, token in the organization's vault, audited), operators registering
others through the outbound guard, publish refusing a service workspace without a usable connection (each
case by name), and another organization's connections never named, listed or shown."""

from __future__ import annotations

import pytest

from agenticos import vault
from agenticos.models import AuditEvent, Secret
from capabilities.sandbox.capability import SandboxConfig
from tests import factories
from tests.sandbox.sandboxd_server import needs_bwrap
from workspaces import connections
from workspaces.models import SandboxConnection, Workspace

URL = "/api/v1/sandbox-connections"
service = SandboxConfig(backend="service")


@pytest.fixture
def no_own_sandboxd(settings, tmp_path):
    settings.SANDBOXD_TOKEN_FILE = str(tmp_path / "missing.token")
    settings.SANDBOXD_TOKEN = ""


def test_publish_refuses_service_when_the_organization_has_no_connection(org, no_own_sandboxd):
    assert connections.publish_problems(service, org) == [(
        "backend", "This organization has no sandbox connection registered, so a service workspace cannot be "
                   "published; ask an operator to register one in Settings → Sandboxes, or choose backend "
                   "'state' (stored files).")]
    assert connections.publish_problems(SandboxConfig(), org) == []  # stored files need nothing
    assert not SandboxConnection.objects.exists()


def test_publish_refuses_a_vanished_connection_and_one_without_a_credential_by_name(org, owner, no_own_sandboxd, dns):
    dns["sandbox.example.com"] = ["93.184.216.34"]
    actor = _actor(owner, org)
    token = factories.secret(org, value="t" * 40)
    connection = connections.register(actor=actor, name="Build farm", url="https://sandbox.example.com",
                                      secret_id=str(token.pk), make_default=True)
    named = SandboxConfig(backend="service", connection_id=str(connection.pk))
    assert connections.publish_problems(named, org) == []
    SandboxConnection.objects.filter(pk=connection.pk).update(secret=None)
    assert connections.publish_problems(named, org) == [(
        "connection_id", "The sandbox connection 'Build farm' has no credential; an operator must give it the "
                         "service's token in Settings → Sandboxes.")]
    connections.delete(actor=actor, connection=connection)
    problems = connections.publish_problems(named, org)
    assert problems[0][0] == "connection_id" and "no longer exists" in problems[0][1]
    assert "has no default sandbox connection" not in problems[0][1]


def test_another_organizations_connection_cannot_be_named_at_publish_or_at_run(org, owner, outsider_org, outsider,
                                                                               no_own_sandboxd, dns):
    dns["sandbox.example.com"] = ["93.184.216.34"]
    theirs = connections.register(actor=_actor(outsider, outsider_org), name="Theirs", url="https://sandbox.example.com",
                                  secret_id=str(factories.secret(outsider_org, value="u" * 40).pk))
    named = SandboxConfig(backend="service", connection_id=str(theirs.pk))
    assert "no longer exists" in connections.publish_problems(named, org)[0][1]
    with pytest.raises(connections.ConnectionUnavailable):
        connections.for_run(org, str(theirs.pk))


def test_the_own_sandboxd_becomes_the_default_once_on_behalf_of_the_owner_with_its_token_sealed(
        org, owner, admin_user, api_as, settings, tmp_path):
    token_file = tmp_path / "sandboxd.token"
    token_file.write_text("own-token-" + "z" * 40 + "\n")
    settings.SANDBOXD_TOKEN_FILE = str(token_file)
    settings.SANDBOXD_TOKEN = ""
    response = api_as(admin_user, org).get(URL)
    assert response.status_code == 200
    [listed] = response.json()["results"]
    assert listed["name"] == "This deployment's sandbox" and listed["is_default"] and listed["is_deployment"]
    assert listed["url"] == "" and listed["has_credential"] is True
    assert "own-token" not in response.content.decode()
    connection = SandboxConnection.objects.get(organization=org)
    held = vault.reveal(connection.secret)
    assert held == connections.tenant_token("own-token-" + "z" * 40, org)  # derived for this organization
    assert held.startswith(f"sbx1.{org.pk.hex}.") and "own-token" not in held
    assert connection.secret.organization_id == org.pk and connection.created_by == owner
    event = AuditEvent.objects.get(action="sandbox_connection.registered")
    assert event.actor == owner and event.details == {"deployment": True, "default": True, "on_behalf_of": "owner"}
    api_as(admin_user, org).get(URL)
    assert SandboxConnection.objects.filter(organization=org).count() == 1  # registered once
    assert connections.publish_problems(service, org) == []


def test_an_operator_registers_a_sandboxd_through_the_outbound_guard(org, admin_user, builder, api_as, no_own_sandboxd,
                                                                    dns):
    dns["sandbox.example.com"] = ["93.184.216.34"]
    dns["internal.example.com"] = ["10.0.0.5"]
    token = factories.secret(org, value="v" * 40)
    body = {"name": "Farm", "url": "https://sandbox.example.com", "secret_id": str(token.pk), "is_default": True}
    refused = api_as(builder, org).post(URL, body, format="json")
    assert refused.status_code == 403 and not SandboxConnection.objects.exists()
    for hostile in ("http://169.254.169.254/", "http://127.0.0.1:8765", "http://[::1]:8765", "http://0x7f000001/",
                    "https://internal.example.com"):
        response = api_as(admin_user, org).post(URL, {**body, "url": hostile}, format="json")
        assert response.status_code == 422, hostile
        assert response.json()["error"]["details"]["problems"][0]["field"] == "url"
    assert not SandboxConnection.objects.exists()
    created = api_as(admin_user, org).post(URL, body, format="json")
    assert created.status_code == 201 and created.json()["is_default"] is True
    assert "v" * 40 not in created.content.decode()


def test_a_foreign_secret_or_connection_is_not_found_and_lists_stay_apart(org, admin_user, viewer, outsider_org,
                                                                         outsider, api_as, no_own_sandboxd, dns):
    dns["sandbox.example.com"] = ["93.184.216.34"]
    foreign_secret = factories.secret(outsider_org, value="w" * 40)
    response = api_as(admin_user, org).post(URL, {"name": "Farm", "url": "https://sandbox.example.com",
                                                  "secret_id": str(foreign_secret.pk)}, format="json")
    assert response.status_code == 422 and "No such secret" in response.content.decode()
    theirs = connections.register(actor=_actor(outsider, outsider_org), name="Theirs",
                                  url="https://sandbox.example.com", secret_id=str(foreign_secret.pk))
    for path in (f"{URL}/{theirs.pk}", f"{URL}/{theirs.pk}/runtimes", f"{URL}/{theirs.pk}/sandboxes"):
        assert api_as(admin_user, org).get(path).status_code == 404, path
    assert api_as(admin_user, org).delete(f"{URL}/{theirs.pk}").status_code == 404
    assert api_as(admin_user, org).post(f"{URL}/{theirs.pk}/default").status_code == 404
    assert api_as(viewer, org).get(URL).json()["results"] == []
    assert SandboxConnection.objects.filter(pk=theirs.pk, is_default=False).exists()
    assert api_as(outsider, org).get(URL).status_code == 404  # not a member of this organization


def test_weaker_roles_read_but_cannot_change_or_observe(org, owner, viewer, member, api_as, no_own_sandboxd, dns):
    dns["sandbox.example.com"] = ["93.184.216.34"]
    connection = connections.register(actor=_actor(owner, org), name="Farm", url="https://sandbox.example.com",
                                      secret_id=str(factories.secret(org, value="x" * 40).pk))
    assert api_as(viewer, org).get(f"{URL}/{connection.pk}").status_code == 200
    assert api_as(member, org).delete(f"{URL}/{connection.pk}").status_code == 403
    assert api_as(member, org).post(f"{URL}/{connection.pk}/default").status_code == 403
    assert api_as(member, org).get(f"{URL}/{connection.pk}/sandboxes").status_code == 403
    assert SandboxConnection.objects.filter(pk=connection.pk, is_default=False).exists()
    assert Secret.objects.filter(organization=org).count() == 1


@needs_bwrap
@pytest.mark.django_db(transaction=True)
def test_open_sandboxes_list_only_this_organizations_with_runtime_idle_time_and_activity(
        org, owner, admin_user, outsider_org, outsider, api_as, scripted_model, own_sandboxd):
    from tests.sandbox.test_sandbox_runs import turn
    from tests.sandbox.test_service_runs import execute, service

    mine = service(org, owner)
    turn(scripted_model, org, owner, mine, [execute("echo from-acme")])
    theirs = service(outsider_org, outsider)
    turn(scripted_model, outsider_org, outsider, theirs, [execute("echo from-other")])
    connection = SandboxConnection.objects.get(organization=org)
    runtimes = api_as(admin_user, org).get(f"{URL}/{connection.pk}/runtimes").json()["results"]
    assert "python" in [r["alias"] for r in runtimes]
    [listed] = api_as(admin_user, org).get(f"{URL}/{connection.pk}/sandboxes").json()["results"]
    workspace = Workspace.objects.get(organization=org)
    assert listed["workspace_id"] == str(workspace.pk) and listed["agent"]["name"] == mine[0].name
    assert listed["runtime"] == "python" and listed["idle_seconds"] >= 0 and listed["memory_kb"] > 0
    detail = api_as(admin_user, org).get(f"{URL}/{connection.pk}/sandboxes/{workspace.pk}").json()
    assert [a["kind"] for a in detail["activity"]][:1] == ["opened"]
    assert any(a.get("command") == "echo from-acme" for a in detail["activity"])
    assert "from-other" not in str(detail)
    other = Workspace.objects.get(organization=outsider_org)
    assert api_as(admin_user, org).get(f"{URL}/{connection.pk}/sandboxes/{other.pk}").status_code == 404


def _actor(user, org):
    from tests.runner.conftest import actor_of

    return actor_of(user, org)


def test_publishing_a_service_workspace_without_a_connection_is_refused_by_name(org, owner, no_own_sandboxd):
    from agenticos.errors import Invalid
    from agents import services as agent_services
    from tests.runner.conftest import publish

    agent, _ = publish(org, owner)
    agent.draft_spec = {**agent.draft_spec, "capabilities": [{"id": "sandbox", "config": {"backend": "service"}}]}
    agent.save(update_fields=["draft_spec"])
    with pytest.raises(Invalid) as caught:
        agent_services.publish_agent(actor=_actor(owner, org), agent=agent, note="service")
    assert "no sandbox connection registered" in str(caught.value.details)
    assert agent.versions.count() == 1


@needs_bwrap
def test_publish_names_a_runtime_the_connection_does_not_offer_read_live(org, owner, own_sandboxd):
    assert connections.publish_problems(SandboxConfig(backend="service", runtime="python"), org) == []
    problems = connections.publish_problems(SandboxConfig(backend="service", runtime="cobol"), org)
    assert problems[0][0] == "runtime" and "offers no runtime 'cobol'" in problems[0][1] and "python" in problems[0][1]


def test_sandbox_token_writes_a_private_token_keeps_it_and_rotates_every_organizations_copy(
        org, owner, settings, tmp_path):
    import stat

    from django.core.management import call_command

    path = tmp_path / "sandboxd.token"
    settings.SANDBOXD_TOKEN_FILE = str(path)
    settings.SANDBOXD_TOKEN = ""
    call_command("sandbox_token")
    first = path.read_text().strip()
    assert len(first) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    call_command("sandbox_token")
    assert path.read_text().strip() == first  # kept
    connection = connections.ensure_default(org)
    assert vault.reveal(connection.secret) == connections.tenant_token(first, org)
    call_command("sandbox_token", rotate=True)
    second = path.read_text().strip()
    connection.refresh_from_db()
    connection.secret.refresh_from_db()
    assert second != first and vault.reveal(connection.secret) == connections.tenant_token(second, org)
    assert AuditEvent.objects.filter(action="sandbox_connection.rotated", organization=org).count() == 1


def test_the_sandboxes_page_shows_the_default_and_only_operators_register(org, admin_user, viewer, outsider,
                                                                        client, settings, tmp_path, dns):
    token_file = tmp_path / "sandboxd.token"
    token_file.write_text("page-token-" + "q" * 40)
    settings.SANDBOXD_TOKEN_FILE, settings.SANDBOXD_TOKEN = str(token_file), ""
    settings.SANDBOXD_URL = "http://127.0.0.1:9"  # nothing listens: the page says so instead of failing
    factories.member(org, "owner")
    client.force_login(viewer)
    page = client.get("/settings/sandboxes")
    assert page.status_code == 200 and "This deployment&#x27;s sandbox" in page.content.decode()
    assert "Register a sandbox service" not in page.content.decode()
    assert client.post("/settings/sandboxes", {"name": "X", "url": "https://x.example.com"}).status_code == 403
    client.force_login(admin_user)
    page = client.get("/settings/sandboxes").content.decode()
    assert "Register a sandbox service" in page and "page-token" not in page
    assert "could not be reached" in page  # the open sandboxes of a host that does not answer
    dns["farm.example.com"] = ["93.184.216.34"]
    secret = factories.secret(org, value="r" * 40)
    done = client.post("/settings/sandboxes", {"name": "Farm", "url": "https://farm.example.com",
                                               "secret_id": str(secret.pk)})
    assert done.status_code == 302 and SandboxConnection.objects.filter(organization=org, name="Farm").exists()
    client.force_login(outsider)
    farm = SandboxConnection.objects.get(name="Farm")
    assert client.post(f"/settings/sandboxes/{farm.pk}/delete").status_code == 404
    assert SandboxConnection.objects.filter(pk=farm.pk).exists()


def test_the_operator_console_lists_connections_without_their_token(org, owner, client, settings, tmp_path):
    from django.urls import reverse

    token_file = tmp_path / "sandboxd.token"
    token_file.write_text("admin-token-" + "k" * 40)
    settings.SANDBOXD_TOKEN_FILE, settings.SANDBOXD_TOKEN = str(token_file), ""
    connection = connections.ensure_default(org)
    operator = factories.user(is_staff=True, is_superuser=True)
    client.force_login(operator)
    listing = client.get(reverse("admin:workspaces_sandboxconnection_changelist"))
    detail = client.get(reverse("admin:workspaces_sandboxconnection_change", args=[connection.pk]))
    for page in (listing, detail):
        text = page.content.decode()
        assert page.status_code == 200 and "This deployment" in text
        assert "admin-token" not in text and vault.reveal(connection.secret) not in text
