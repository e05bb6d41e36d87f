"""Daytona connections (Settings → Sandboxes, kind daytona): registered with its API key in the vault and its
URL through the outbound guard; a service workspace on it through the real runner against a local fake of
Daytona's REST API (tests/fakes/daytona_api.py): the sandbox created once with our label, commands executed
through the toolbox, the files they write kept like stored files, the snapshots offered as runtimes; publish
refusing a vanished connection and one without a credential by name; another organization's never named."""

from __future__ import annotations

import pytest

from agents.models import RunStatus
from capabilities.sandbox.capability import SandboxConfig
from tests import factories
from tests.fakes.daytona_api import FakeDaytona
from tests.runner.conftest import actor_of, publish
from tests.sandbox.test_sandbox_runs import FILE_TOOLS, turn
from workspaces import connections
from workspaces.daytona import LABEL, DaytonaClient
from workspaces.models import SandboxConnection, Workspace, WorkspaceFile


@pytest.fixture
def daytona():
    server = FakeDaytona().start()
    yield server
    server.stop()


@pytest.fixture
def no_own_sandboxd(settings, tmp_path):
    settings.SANDBOXD_TOKEN_FILE = str(tmp_path / "missing.token")
    settings.SANDBOXD_TOKEN = ""


@pytest.fixture
def local_daytona(daytona, settings, no_own_sandboxd):
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    return daytona


def register(org, user, server: FakeDaytona, *, name: str = "Daytona cloud", token: str | None = None,
             default: bool = True) -> SandboxConnection:
    secret = factories.secret(org, value=token or server.token)
    return connections.register(actor=actor_of(user, org), name=name, url=server.api, secret_id=str(secret.pk),
                                make_default=default, kind="daytona")


@pytest.mark.django_db(transaction=True)
def test_a_service_workspace_runs_on_daytona_and_keeps_what_its_commands_write(org, owner, admin_user,
                                                                               scripted_model, local_daytona):
    connection = register(org, admin_user, local_daytona)
    assert connection.kind == "daytona"
    assert isinstance(connections.client_for(connection), DaytonaClient)
    agent = publish(org, owner, capabilities=[{"id": "sandbox", "config": {"backend": "service",
                                                                           "runtime": "python-data"}}])
    script, run = turn(scripted_model, org, owner, agent, [
        ("write_file", {"path": "data/in.csv", "content": "a,b\n1,2\n3,4\n"}),
        ("execute", {"command": "mkdir -p out && wc -l < data/in.csv > out/count.txt && cat out/count.txt && "
                                "echo oops >&2 && exit 3", "timeout": 20}),
    ])
    assert run.status == RunStatus.COMPLETED
    assert script.offered == sorted([*FILE_TOOLS, "execute"])
    assert "3" in script.results[1] and "oops" in script.results[1]
    row = WorkspaceFile.objects.get(path="/workspace/out/count.txt")
    assert bytes(row.data).strip() == b"3"
    workspace = Workspace.objects.get(agent=agent[0])
    assert workspace.backend == "service" and workspace.key.startswith(f"{connection.pk}|")
    [sandbox] = local_daytona.sandboxes.values()
    assert sandbox.labels == {LABEL: str(workspace.pk).replace("-", "")} and sandbox.snapshot == "python-data"
    assert (sandbox.root / "workspace" / "data" / "in.csv").read_text() == "a,b\n1,2\n3,4\n"
    assert all(r.headers.get("Authorization") == f"Bearer {local_daytona.token}" for r in local_daytona.requests)
    executed = [r.path for r in local_daytona.requests if r.path.endswith("/process/execute")]
    assert executed and all(p == f"/toolbox-proxy/{sandbox.id}/process/execute" for p in executed)
    assert local_daytona.token not in " ".join(script.results)

    # The next turn reattaches to the same sandbox, and a file a command deletes leaves the stored files.
    again, _ = turn(scripted_model, org, owner, agent, [
        ("execute", {"command": "rm out/count.txt && ls", "timeout": 20})], conversation=run.conversation)
    assert "data" in again.results[0]
    assert len(local_daytona.sandboxes) == 1
    assert not WorkspaceFile.objects.filter(path="/workspace/out/count.txt").exists()


@pytest.mark.django_db
def test_on_an_older_server_without_a_toolbox_proxy_a_command_past_its_timeout_is_timed_out(
        org, admin_user, settings, no_own_sandboxd):
    settings.SANDBOX_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    local_daytona = FakeDaytona(legacy=True).start()
    try:
        _older_server(org, admin_user, local_daytona)
        [sandbox_id] = {r.path.split("/")[3] for r in local_daytona.requests if r.path.endswith("/process/execute")}
        assert {r.path for r in local_daytona.requests if r.path.endswith("/process/execute")} == {
            f"/api/toolbox/{sandbox_id}/toolbox/process/execute"}
    finally:
        local_daytona.stop()


def _older_server(org, admin_user, local_daytona) -> None:
    from asgiref.sync import async_to_sync

    client = connections.client_for(register(org, admin_user, local_daytona))
    async_to_sync(client.open)("w1", None)
    answer = async_to_sync(client.execute)("w1", "echo started; sleep 30", timeout=1)
    assert answer["timed_out"] is True and "started" in answer["stdout"]
    answer = async_to_sync(client.execute)("w1", 'echo "$GREETING"', timeout=10, env={"GREETING": "hello there"})
    assert answer["stdout"].strip() == "hello there" and answer["exit_code"] == 0
    assert not any(b"hello there" in r.body and r.path.endswith("/process/execute") for r in local_daytona.requests)
    with pytest.raises(Exception, match="not a path inside the workspace"):
        async_to_sync(client.read)("w1", "../.bashrc")
    async_to_sync(client.close)("w1")
    assert local_daytona.sandboxes == {}


@pytest.mark.django_db
def test_its_active_snapshots_are_the_runtimes_offered_and_checked_at_publish(org, admin_user, local_daytona):
    connection = register(org, admin_user, local_daytona)
    assert connections.client_for(connection).runtimes_sync() == [
        {"alias": "daytona-small", "description": "daytonaio/sandbox:0.4"},
        {"alias": "python-data", "description": "python:3.12-slim"}]
    assert connections.publish_problems(SandboxConfig(backend="service", runtime="python-data"), org) == []
    [(field, message)] = connections.publish_problems(SandboxConfig(backend="service", runtime="half-built"), org)
    assert field == "runtime" and "offers no runtime 'half-built'" in message


@pytest.mark.django_db
def test_a_wrong_api_key_is_refused_without_showing_it(org, admin_user, local_daytona):
    connection = register(org, admin_user, local_daytona, token="dtn_wrong_" + "w" * 30)
    from workspaces.client import SandboxdError

    with pytest.raises(SandboxdError) as caught:
        connections.client_for(connection).runtimes_sync()
    assert caught.value.status == 401 and "w" * 30 not in str(caught.value)


@pytest.mark.django_db
def test_publish_refuses_a_vanished_daytona_connection_and_one_without_a_credential_by_name(
        org, admin_user, local_daytona):
    connection = register(org, admin_user, local_daytona, name="Daytona EU")
    connection_id = str(connection.pk)
    named = SandboxConfig(backend="service", connection_id=connection_id)
    assert connections.publish_problems(named, org) == []
    SandboxConnection.objects.filter(pk=connection.pk).update(secret=None)
    assert connections.publish_problems(named, org) == [(
        "connection_id", "The sandbox connection 'Daytona EU' has no credential; an operator must give it the "
                         "service's token in Settings → Sandboxes.")]
    connections.delete(actor=actor_of(admin_user, org), connection=connection)
    [(field, message)] = connections.publish_problems(named, org)
    assert field == "connection_id" and f"The sandbox connection {connection_id} no longer exists" in message
    assert local_daytona.requests == []  # none of these checks needed the endpoint


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://169.254.169.254/api", "http://10.0.0.8/api", "http://[::1]:3000/api",
                                 "http://0x7f000001/api", "http://127.1/api"])
def test_a_daytona_url_on_an_internal_address_is_refused_at_registration(org, admin_user, no_own_sandboxd, url):
    from agenticos.errors import Invalid

    with pytest.raises(Invalid) as caught:
        connections.register(actor=actor_of(admin_user, org), name="Sneaky", url=url, kind="daytona",
                             secret_id=str(factories.secret(org, value="k" * 40).pk))
    assert caught.value.details["problems"][0]["field"] == "url"
    assert not SandboxConnection.objects.exists()


@pytest.mark.django_db
def test_an_unknown_kind_and_a_viewer_are_refused(org, admin_user, viewer, local_daytona):
    from agenticos.errors import Forbidden, Invalid

    secret = factories.secret(org, value="k" * 40)
    with pytest.raises(Invalid) as caught:
        connections.register(actor=actor_of(admin_user, org), name="X", url=local_daytona.api, kind="e2b",
                             secret_id=str(secret.pk))
    assert caught.value.details["problems"][0]["field"] == "kind"
    with pytest.raises(Forbidden):
        connections.register(actor=actor_of(viewer, org), name="X", url=local_daytona.api, kind="daytona",
                             secret_id=str(secret.pk))
    assert not SandboxConnection.objects.exists() and local_daytona.requests == []


@pytest.mark.django_db
def test_another_organizations_daytona_connection_cannot_be_named_or_its_secret_used(
        org, admin_user, outsider_org, outsider, local_daytona):
    theirs = register(outsider_org, outsider, local_daytona, name="Their Daytona")
    named = SandboxConfig(backend="service", connection_id=str(theirs.pk))
    assert "no longer exists" in connections.publish_problems(named, org)[0][1]
    with pytest.raises(connections.ConnectionUnavailable):
        connections.for_run(org, str(theirs.pk))
    from agenticos.errors import Invalid

    with pytest.raises(Invalid):  # their secret cannot hold our connection's key
        connections.register(actor=actor_of(admin_user, org), name="Mine", url=local_daytona.api, kind="daytona",
                             secret_id=str(theirs.secret_id))
    assert local_daytona.requests == []


@pytest.mark.django_db
def test_an_operator_registers_a_daytona_endpoint_in_settings_and_its_sandboxes_are_listed(
        org, owner, admin_user, viewer, outsider, client, local_daytona):
    from asgiref.sync import async_to_sync

    secret = factories.secret(org, name="Daytona key", value=local_daytona.token)
    client.force_login(viewer)
    assert client.post("/settings/sandboxes", {"name": "Daytona", "url": local_daytona.api, "kind": "daytona",
                                               "secret_id": str(secret.pk)}).status_code == 403
    client.force_login(admin_user)
    page = client.get("/settings/sandboxes").content.decode()
    assert '<option value="daytona">Daytona</option>' in page
    done = client.post("/settings/sandboxes", {"name": "Daytona", "url": local_daytona.api, "kind": "daytona",
                                               "secret_id": str(secret.pk), "is_default": "on"})
    assert done.status_code == 302
    connection = SandboxConnection.objects.get(organization=org, name="Daytona")
    assert connection.kind == "daytona" and connection.is_default and connection.secret_id == secret.pk
    # A sandbox this organization opened there is listed with its runtime; the key is never on the page.
    workspace = Workspace.objects.create(organization=org, agent=publish(org, owner)[0], scope="agent",
                                         key=f"{connection.pk}|agent", label="shared", backend="service")
    async_to_sync(connections.client_for(connection).open)(str(workspace.pk).replace("-", ""), "python-data")
    page = client.get("/settings/sandboxes").content.decode()
    assert f'data-sandbox="{workspace.pk}"' in page and "python-data" in page
    assert local_daytona.token not in page
    refused = client.post("/settings/sandboxes", {"name": "Other", "url": "http://169.254.169.254/api",
                                                  "kind": "daytona", "secret_id": str(secret.pk)})
    assert refused.status_code == 422 and not SandboxConnection.objects.filter(name="Other").exists()
    client.force_login(outsider)
    assert client.post(f"/settings/sandboxes/{connection.pk}/delete").status_code == 404
    assert SandboxConnection.objects.filter(pk=connection.pk).exists()


@pytest.mark.django_db
def test_the_api_registers_a_daytona_connection_with_its_kind(org, admin_user, api_as, local_daytona):
    secret = factories.secret(org, value=local_daytona.token)
    response = api_as(admin_user, org).post("/api/v1/sandbox-connections", {
        "name": "Daytona", "url": local_daytona.api, "kind": "daytona", "secret_id": str(secret.pk)}, format="json")
    assert response.status_code == 201 and response.json()["kind"] == "daytona"
    runtimes = api_as(admin_user, org).get(f"/api/v1/sandbox-connections/{response.json()['id']}/runtimes")
    assert [r["alias"] for r in runtimes.json()["results"]] == ["daytona-small", "python-data"]
