"""Database connection strings: every address libpq would use is checked and the connection goes to the
checked address — at save and again at connect. Each hostile spelling is refused before anything connects."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings

from agenticos import vault
from agenticos.errors import Invalid
from capabilities.db_connections import engine
from capabilities.db_connections import services as db_services
from capabilities.models import DatabaseConnection
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync
from tests.tools.test_database import actor, customer_dsn  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("tool_capabilities")
SOCKET_DIR = django_settings.DATABASES["default"]["HOST"]
NAME = "db.example.test"


class Listener:
    """A TCP port on 127.0.0.1 the test owns: `touched()` says whether anything connected to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def touched(self) -> bool:
        try:  # the kernel completes a handshake whether or not we accept: the backlog tells
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True


@pytest.fixture
def listener() -> Iterator[Listener]:
    owned = Listener()
    yield owned
    owned.sock.close()


@pytest.fixture
def allowed(settings):
    """The deployment's own database is reachable (its socket and loopback are listed), nothing else."""
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [SOCKET_DIR, "127.0.0.1"]
    return settings


def _hostile(port: int) -> dict[str, tuple[str, str]]:
    """id -> (DSN, a pattern the refusal must contain)."""
    return {
        "hostaddr in a URL": (f"postgresql://u:p@{NAME}:{port}/db?hostaddr=127.0.0.1", "hostaddr"),
        "hostaddr in key=value": (f"host={NAME} hostaddr=127.0.0.1 port={port} dbname=db", "hostaddr"),
        "hostaddr behind a listed socket": (f"host={SOCKET_DIR} hostaddr=127.0.0.1 port={port} dbname=db",
                                            "hostaddr"),
        "a second host at the metadata address": (f"postgresql://u@{NAME}:{port},169.254.169.254:5432/db",
                                                  "metadata"),
        "a second host in a private range": (f"host={NAME},10.0.0.5 port={port} dbname=db", "10.0.0.5"),
        "a service": ("service=evil dbname=db", "service"),
        # A libpq too old to know `servicefile` cannot parse it: refused either way.
        "a service file": (f"servicefile=/tmp/evil host={NAME} dbname=db", "servicefile|cannot be parsed"),
        "a password file": (f"host={NAME} passfile=/root/.pgpass dbname=db", "passfile"),
        "a client key file": (f"postgresql://u@{NAME}/db?sslkey=/etc/ssl/private/server.key", "sslkey"),
        "a socket the operator did not list": ("postgresql:///db?host=/var/run/postgresql", "socket"),
        "an encoded socket path": ("postgresql://%2Fvar%2Frun%2Fpostgresql/db", "socket"),
        "an abstract socket": ("host=@pg dbname=db", "socket"),
        "no host (libpq's default socket)": ("dbname=db user=u", "localhost"),
        "a name resolving to the metadata address": (f"postgresql://u@meta.example.test:{port}/db", "metadata"),
    }


HOSTILE_IDS = list(_hostile(0))


@pytest.mark.parametrize("case", HOSTILE_IDS)
def test_each_hostile_spelling_is_refused_at_save_and_nothing_connects(db, org, builder, allowed, dns, listener,
                                                                       case):
    allowed.TOOL_ALLOWED_PRIVATE_HOSTS = [SOCKET_DIR]  # loopback only through the listed socket
    dns[NAME] = ["93.184.216.34"]
    dns["meta.example.test"] = ["169.254.169.254"]
    dsn, word = _hostile(listener.port)[case]
    with pytest.raises(Invalid) as refused:
        db_services.create_connection(actor=actor(builder, org), name="shop", dsn=dsn)
    assert refused.value.details["problems"][0]["field"] == "dsn"
    assert re.search(word, refused.value.message), refused.value.message
    assert not DatabaseConnection.objects.filter(organization=org).exists()
    assert not listener.touched()


def test_a_hostile_dsn_is_a_422_in_the_envelope_and_never_echoes_the_password(db, org, builder, api_as, allowed,
                                                                                dns, listener):
    dns[NAME] = ["93.184.216.34"]
    dsn = f"postgresql://u:pw-s3cret-123@{NAME}:{listener.port}/db?hostaddr=127.0.0.1"
    response = api_as(builder, org).post("/api/v1/db-connections", {"name": "shop", "dsn": dsn}, format="json")
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["details"]["problems"][0]["field"] == "dsn" and "hostaddr" in error["message"]
    assert "pw-s3cret-123" not in response.content.decode()
    assert not listener.touched()


def test_a_change_of_dsn_to_a_hostile_one_is_refused_and_the_old_one_kept(db, org, builder, allowed,
                                                                          customer_dsn, listener):  # noqa: F811
    conn = db_services.create_connection(actor=actor(builder, org), name="shop", dsn=customer_dsn)
    with pytest.raises(Invalid, match="hostaddr"):
        db_services.update_connection(actor=actor(builder, org), connection=conn, changes={
            "dsn": f"host={SOCKET_DIR} hostaddr=127.0.0.1 port={listener.port} dbname=db"})
    conn.refresh_from_db()
    assert db_services.dsn_of(conn) == customer_dsn
    assert not listener.touched()


def _saved_earlier(org, dsn: str) -> DatabaseConnection:
    """A connection stored before these checks existed (sealed straight into the table)."""
    sealed = vault.seal(org.pk, dsn)
    return DatabaseConnection.objects.create(organization=org, name="legacy", permission="read",
                                             key_version=sealed.key_version, wrapped_key=sealed.wrapped_key,
                                             ciphertext=sealed.ciphertext)


@pytest.mark.parametrize("case", ["hostaddr in a URL", "hostaddr behind a listed socket",
                                  "a second host at the metadata address", "a service"])
def test_a_hostile_dsn_saved_earlier_is_refused_when_the_tool_connects(db, org, allowed, dns, listener, case):
    allowed.TOOL_ALLOWED_PRIVATE_HOSTS = [SOCKET_DIR]
    dns[NAME] = ["93.184.216.34"]
    conn = _saved_earlier(org, _hostile(listener.port)[case][0])
    outcome = run_sync(spec({"id": "database", "config": {"connection_ids": [str(conn.pk)]}}),
                       [("run_sql", {"connection": "legacy", "sql": "SELECT 1"})], org_id=str(org.pk))
    (answer,) = outcome.returns
    assert answer.startswith("Refused:") and _hostile(listener.port)[case][1] in answer
    assert not listener.touched()


def test_a_name_that_resolves_elsewhere_after_the_save_is_refused_at_connect(db, org, builder, allowed, dns,
                                                                            listener):
    allowed.TOOL_ALLOWED_PRIVATE_HOSTS = [SOCKET_DIR]
    dns[NAME] = ["93.184.216.34"]
    conn = _saved_earlier(org, f"postgresql://u@{NAME}:{listener.port}/db")
    dns[NAME] = ["127.0.0.1"]
    outcome = run_sync(spec({"id": "database", "config": {"connection_ids": [str(conn.pk)]}}),
                       [("run_sql", {"connection": "legacy", "sql": "SELECT 1"})], org_id=str(org.pk))
    assert outcome.returns[0].startswith("Refused:") and "TOOL_ALLOWED_PRIVATE_HOSTS" in outcome.returns[0]
    assert not listener.touched()


def test_the_connection_goes_to_the_checked_address_under_its_name(allowed, dns, listener, monkeypatch):
    """The parameters libpq gets: hostaddr is the address the guard checked, host the name (for TLS)."""
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", 1)  # the listener never answers the startup packet
    allowed.TOOL_ALLOWED_PRIVATE_HOSTS = [NAME]
    dns[NAME] = ["127.0.0.1"]
    params = engine.check_dsn(f"postgresql://u:p@{NAME}:{listener.port}/db?sslmode=prefer")
    assert (params["host"], params["hostaddr"], params["port"]) == (NAME, "127.0.0.1", str(listener.port))
    assert params["passfile"] != "" and "service" not in params
    # And it is where the driver really goes: the listener we own is the one reached.
    with pytest.raises(Exception):  # noqa: B017 - the listener speaks no PostgreSQL; reaching it is the point
        engine.run(f"postgresql://u:p@{NAME}:{listener.port}/db", "SELECT 1",
                   permission="read", timeout_ms=100, row_cap=1)
    assert listener.touched()


def test_the_listed_socket_still_works(db, org, builder, allowed, customer_dsn):  # noqa: F811
    conn = db_services.create_connection(actor=actor(builder, org), name="shop", dsn=customer_dsn)
    outcome = run_sync(spec({"id": "database", "config": {"connection_ids": [str(conn.pk)]}}),
                       [("run_sql", {"connection": "shop", "sql": "SELECT count(*) FROM orders"})],
                       org_id=str(org.pk))
    assert outcome.returns[0]["rows"] == [[500]]
