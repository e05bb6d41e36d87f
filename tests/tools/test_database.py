"""Database connections against a second database on the embedded PostgreSQL: permissions enforced by the
server, sealed DSN, slot budget on permission changes, REST isolation."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.conf import settings as django_settings

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from capabilities.db_connections import services as db_services
from capabilities.models import DatabaseConnection
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync

pytestmark = pytest.mark.usefixtures("tool_capabilities")


def _server() -> dict:
    db = django_settings.DATABASES["default"]
    return {"host": db["HOST"], "port": db["PORT"], "user": db["USER"], "password": db.get("PASSWORD") or None}


@pytest.fixture(scope="session")
def customer_dsn(django_db_blocker):
    """A customer's database: a second database on the same embedded server, created with autocommit."""
    import os

    server = _server()
    name = f"customer_{os.environ.get('PYTEST_XDIST_WORKER', 'gw0')}"
    admin = psycopg.connect(dbname="postgres", autocommit=True, **{k: v for k, v in server.items() if v})
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'CREATE DATABASE "{name}"')
    auth = f"{server['user']}" + (f":{server['password']}" if server["password"] else "")
    dsn = f"postgresql://{auth}@/{name}?host={server['host']}&port={server['port']}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id serial primary key, customer text not null, total numeric)")
        conn.execute("INSERT INTO orders (customer, total) SELECT 'c' || g, g FROM generate_series(1, 500) g")
    yield dsn
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


@pytest.fixture
def socket_allowed(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [django_settings.DATABASES["default"]["HOST"], "127.0.0.1"]
    return settings


def actor(user, org):
    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


@pytest.fixture
def connect(db, org, builder, customer_dsn, socket_allowed):
    def make(permission: str = "read", name: str | None = None) -> DatabaseConnection:
        return db_services.create_connection(actor=actor(builder, org), name=name or f"shop_{permission}",
                                             dsn=customer_dsn, permission=permission)
    return make


def _db_binding(*conns):
    return {"id": "database", "config": {"connection_ids": [str(c.pk) for c in conns]}}


@pytest.mark.urls("tests.tools.urls")
def test_the_dsn_is_sealed_and_never_served(connect, org, builder, api_as, customer_dsn):
    conn = connect("read")
    assert customer_dsn.encode() not in bytes(conn.ciphertext)
    client = api_as(builder, org)
    assert customer_dsn not in client.get(f"/api/v1/db-connections/{conn.pk}").content.decode()
    assert customer_dsn not in client.get("/api/v1/db-connections").content.decode()


def test_read_runs_queries_with_a_row_cap_and_the_server_refuses_writes(connect, org):
    conn = connect("read")
    outcome = run_sync(spec(_db_binding(conn)), [
        ("list_tables", {"connection": "shop_read"}),
        ("describe_table", {"connection": "shop_read", "table": "orders"}),
        ("run_sql", {"connection": "shop_read", "sql": "SELECT id, customer FROM orders ORDER BY id"}),
        ("run_sql", {"connection": "shop_read", "sql": "DELETE FROM orders"}),
        ("run_sql", {"connection": "shop_read", "sql": "SELECT 1; DROP TABLE orders"}),
    ], org_id=str(org.pk))
    tables, described, selected, deleted = outcome.returns[:4]
    assert ["public.orders", "BASE TABLE"] in tables["rows"]
    assert [r[0] for r in described["rows"]] == ["id", "customer", "total"]
    assert len(selected["rows"]) == 200 and "row cap" in selected["note"]
    assert deleted.startswith("Refused: This connection is read-only")
    assert any("multiple commands" in r for r in outcome.retries)
    offered = {t.name: t for t in outcome.script.requests[0].function_tools}
    assert offered["run_sql"].parameters_json_schema["properties"]["connection"]["enum"] == ["shop_read"]


def test_write_changes_rows_but_not_the_schema(connect, org, customer_dsn):
    conn = connect("write")
    outcome = run_sync(spec(_db_binding(conn)), [
        ("run_sql", {"connection": "shop_write", "sql": "UPDATE orders SET total = 0 WHERE id = 1"}),
        ("run_sql", {"connection": "shop_write", "sql": "CREATE TABLE evil (x int)"}),
    ], org_id=str(org.pk))
    updated, created = outcome.returns
    assert updated["command"] == "UPDATE" and updated["rowcount"] == 1
    assert created.startswith("Refused: This connection allows reading and changing rows, not CREATE")
    with psycopg.connect(customer_dsn) as check:
        assert check.execute("SELECT to_regclass('public.evil')").fetchone()[0] is None
        assert check.execute("SELECT total FROM orders WHERE id = 1").fetchone()[0] == 0
        check.execute("UPDATE orders SET total = 1 WHERE id = 1")


def test_full_allows_schema_changes(connect, org, customer_dsn):
    conn = connect("full")
    outcome = run_sync(spec(_db_binding(conn)), [
        ("run_sql", {"connection": "shop_full", "sql": "CREATE TABLE scratch_t (x int)"}),
        ("run_sql", {"connection": "shop_full", "sql": "DROP TABLE scratch_t"}),
    ], org_id=str(org.pk))
    assert [r["command"] for r in outcome.returns] == ["CREATE", "DROP"]


def test_the_dsn_and_its_password_never_reach_the_model(connect, org, customer_dsn):
    conn = connect("read")
    outcome = run_sync(spec(_db_binding(conn)), [("run_sql", {"connection": "nope", "sql": "select 1"}),
                                                 ("run_sql", {"connection": "shop_read", "sql": "select nonsense"})],
                       org_id=str(org.pk))
    text = json.dumps(outcome.messages, default=str)
    assert customer_dsn not in text and "No database connection named 'nope'" in text
    assert "nonsense" in text and "does not exist" in text


def test_a_socket_or_private_host_is_refused_unless_listed(db, org, builder, customer_dsn, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(Exception, match="TOOL_ALLOWED_PRIVATE_HOSTS"):
        db_services.create_connection(actor=actor(builder, org), name="shop", dsn=customer_dsn)
    with pytest.raises(Exception, match="cloud metadata"):
        db_services.create_connection(actor=actor(builder, org), name="meta",
                                      dsn="postgresql://u:p@169.254.169.254:5432/db")


def test_raising_a_permission_past_25_slots_is_refused_naming_the_total(connect, org, builder):
    from agents import services as agent_services
    from capabilities.custom_tools import budget
    from tests import factories

    conn = connect("read")
    tools = [factories.custom_tool(org, url="http://127.0.0.1/x") for _ in range(19)]
    agent = agent_services.create_agent(actor=actor(builder, org), name="Budgeted", spec={
        "name": "Budgeted", "custom_tool_ids": [str(t.pk) for t in tools], "capabilities": [_db_binding(conn)]})
    assert budget.slots(agent.draft_spec, org.pk)["total"] == 21
    db_services.update_connection(actor=actor(builder, org), connection=conn, changes={"permission": "write"})  # 24
    with pytest.raises(Exception) as refused:
        db_services.update_connection(actor=actor(builder, org), connection=conn, changes={"permission": "full"})
    assert "would use 26 of 25 tool slots" in str(refused.value)
    assert "database shop_read × 7" in str(refused.value)
    conn.refresh_from_db()
    assert conn.permission == "write"


@pytest.mark.urls("tests.tools.urls")
def test_connections_are_created_changed_and_deleted_over_rest(db, org, builder, api_as, customer_dsn, socket_allowed):
    client = api_as(builder, org)
    created = client.post("/api/v1/db-connections", {"name": "shop", "dsn": customer_dsn, "permission": "read"},
                          format="json")
    assert created.status_code == 201 and "dsn" not in created.json()
    pk = created.json()["id"]
    assert client.patch(f"/api/v1/db-connections/{pk}", {"permission": "write"},
                        format="json").json()["permission"] == "write"
    assert client.post("/api/v1/db-connections", {"name": "shop", "dsn": customer_dsn}, format="json").status_code == 409
    bad = client.post("/api/v1/db-connections", {"name": "nowhere", "dsn": customer_dsn.replace("customer_", "missing_")},
                      format="json")
    assert bad.status_code == 422 and "missing_" not in bad.content.decode()
    assert client.delete(f"/api/v1/db-connections/{pk}").status_code == 204


@pytest.mark.urls("tests.tools.urls")
def test_another_organization_cannot_see_or_change_a_connection(connect, outsider, outsider_org, api_as):
    conn = connect("read")
    other = api_as(outsider, outsider_org)
    assert other.get(f"/api/v1/db-connections/{conn.pk}").status_code == 404
    assert other.patch(f"/api/v1/db-connections/{conn.pk}", {"permission": "full"}, format="json").status_code == 404
    assert other.delete(f"/api/v1/db-connections/{conn.pk}").status_code == 404
    assert other.get("/api/v1/db-connections").json()["results"] == []


@pytest.mark.urls("tests.tools.urls")
def test_a_viewer_cannot_create_or_change_connections(connect, org, viewer, api_as, customer_dsn):
    conn = connect("read")
    weak = api_as(viewer, org)
    assert weak.post("/api/v1/db-connections", {"name": "x", "dsn": customer_dsn}, format="json").status_code == 403
    assert weak.patch(f"/api/v1/db-connections/{conn.pk}", {"permission": "full"}, format="json").status_code == 403
    assert weak.delete(f"/api/v1/db-connections/{conn.pk}").status_code == 403


def test_assigning_a_26th_slot_is_refused_with_the_total(connect, org):
    from agenticos.errors import Invalid
    from capabilities.custom_tools import budget
    from tests import factories

    conn = connect("full")  # 7
    tools = [factories.custom_tool(org, url="http://127.0.0.1/x") for _ in range(19)]
    spec_data = {"custom_tool_ids": [str(t.pk) for t in tools[:18]], "capabilities": [_db_binding(conn)]}
    assert budget.check_spec(spec_data, org.pk)["total"] == 25
    spec_data["custom_tool_ids"].append(str(tools[18].pk))
    with pytest.raises(Invalid, match="would use 26 of 25 tool slots"):
        budget.check_spec(spec_data, org.pk)


def test_slot_problems_name_the_field_and_the_total_for_the_publish_check(connect, org):
    from capabilities.custom_tools import budget
    from tests import factories

    conn = connect("write")  # 5
    ids = [str(factories.custom_tool(org, url="http://127.0.0.1/x").pk) for _ in range(21)]
    data = {"custom_tool_ids": ids, "capabilities": [_db_binding(conn)]}
    (problem,) = budget.slot_problems(data, org.pk)
    assert problem["field"] == "custom_tool_ids" and "26 of 25" in problem["message"]
    assert budget.slot_problems({"custom_tool_ids": ids[:20], "capabilities": [_db_binding(conn)]}, org.pk) == []
