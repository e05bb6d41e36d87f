"""Run SQL against a customer PostgreSQL with the connection's permission enforced by the server.

- read: a READ ONLY transaction (PostgreSQL refuses every write itself), statement timeout, row cap.
- write: DML allowed, DDL refused: the statement runs inside a transaction and, when its command tag is
  not DML/query, the transaction is rolled back before anything is committed.
- full: DDL allowed.
One statement per call (the extended protocol refuses several), so a `;`-chained DDL cannot hide behind
a SELECT. Functions that run DDL internally (called from a SELECT) are the known gap for `write`.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import conninfo as pg_conninfo

from agenticos import netguard
from agenticos.strings import digits_only

QUERY_TAGS = {"SELECT", "SHOW", "EXPLAIN", "VALUES", "TABLE", "FETCH", "WITH"}
DML_TAGS = {"INSERT", "UPDATE", "DELETE", "MERGE"}
CONNECT_TIMEOUT = 5


class SqlRefused(Exception):
    pass


@dataclass
class SqlResult:
    command: str
    columns: list[str]
    rows: list[list[Any]]
    rowcount: int
    truncated: bool


# The connection parameters a DSN may set. Everything else is refused by name: `hostaddr` (libpq connects there
# whatever `host` says), `service`/`servicefile` (parameters read from a file on this server), `passfile` and
# the `ssl*` file paths (this server's files), and anything libpq adds later. `host`, `hostaddr` and `port` are
# never passed through: they are rebuilt from the checked addresses.
_ALLOWED_KEYS = frozenset({
    "host", "port", "dbname", "user", "password", "sslmode", "sslnegotiation", "sslcompression",
    "channel_binding", "require_auth", "gssencmode", "application_name", "fallback_application_name",
    "client_encoding", "options", "connect_timeout", "target_session_attrs", "load_balance_hosts",
    "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
})


def check_dsn(dsn: str) -> dict[str, Any]:
    """Parse a DSN (URL or key=value) and return the parameters to connect with: every address libpq would use
    checked with the same rules as every other outbound call, and pinned (`hostaddr` = the checked address,
    `host` = the name, for TLS). Raises ValueError with a message fit to show."""
    try:
        params = pg_conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        raise ValueError("The connection string cannot be parsed.") from None
    refused = sorted(k for k in params if k not in _ALLOWED_KEYS)
    if refused:
        raise ValueError(f"The connection string may not set {', '.join(refused)}: give the host, port, database, "
                         "user and password (and TLS mode) only.")
    # No host at all means libpq's default socket, not "localhost": say which one is meant.
    hosts = str(params.get("host") or "localhost").split(",")
    ports = str(params.get("port") or "5432").split(",")
    if len(ports) == 1:
        ports = ports * len(hosts)
    if len(ports) != len(hosts) or any(not h.strip() for h in hosts):
        raise ValueError("Give one port, or one port for each host.")
    addresses = []
    for host, port in zip(hosts, ports, strict=True):
        if not digits_only(port.strip()) or not 0 < int(port) < 65536:
            raise ValueError(f"The port {port[:20]!r} is not a port number.")
        addresses.append(_check_host(host.strip()))
    built = {k: v for k, v in params.items() if k not in {"host", "hostaddr", "port"}}
    built.update(host=",".join(h.strip() for h in hosts), hostaddr=",".join(addresses),
                 port=",".join(p.strip() for p in ports),
                 # Never this server's ~/.pgpass (PGPASSFILE): its passwords are the operator's, not the tenant's.
                 passfile=os.devnull)
    return built


def _listed(entry: str) -> bool:
    from django.conf import settings

    return entry in (getattr(settings, "TOOL_ALLOWED_PRIVATE_HOSTS", []) or [])


def _check_host(host: str) -> str:
    """The address to connect to for one host: "" for a listed socket directory (libpq then uses the path),
    else the checked IP."""
    if host.startswith(("/", "@")):  # a socket directory, or a Linux abstract socket
        if not _listed(host):
            raise ValueError("A local socket is only reachable when the operator lists it in "
                             "TOOL_ALLOWED_PRIVATE_HOSTS.")
        return ""
    try:
        ipaddress.ip_address(host)
        url = f"http://{host if ':' not in host else '[' + host + ']'}/"
    except ValueError:
        url = f"http://{host}/"
    try:
        return netguard.check_url_blocking(url).ip.split("%")[0]
    except netguard.AddressRefused as exc:
        raise ValueError(str(exc)) from None


def connect(dsn: str) -> psycopg.Connection:
    """A connection to the checked, pinned address (the DSN is checked again here: a name may resolve
    elsewhere since it was saved)."""
    params = check_dsn(dsn)
    params["connect_timeout"] = str(CONNECT_TIMEOUT)  # the DSN's own, if any, would hold a worker thread longer
    return psycopg.connect(**params, autocommit=False)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def run(dsn: str, sql: str, *, permission: str, timeout_ms: int, row_cap: int) -> SqlResult:
    """Execute one statement with the permission enforced. Raises SqlRefused or psycopg.Error."""
    if not sql.strip():
        raise SqlRefused("The SQL is empty.")
    with connect(dsn) as conn:
        with conn.cursor() as cur:
            if permission == "read":
                cur.execute(b"SET TRANSACTION READ ONLY")
            cur.execute(b"SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_ms)),))
            cur.execute(sql.encode(), prepare=True)
            tag = (cur.statusmessage or "").split(" ")[0].upper()
            if permission == "write" and tag not in QUERY_TAGS | DML_TAGS:
                conn.rollback()
                raise SqlRefused(f"This connection allows reading and changing rows, not {tag or 'that'} "
                                 "statements (schema changes need the full permission).")
            columns: list[str] = [c.name for c in cur.description] if cur.description else []
            rows: list[list[Any]] = []
            truncated = False
            if cur.description:
                fetched = cur.fetchmany(row_cap + 1)
                truncated = len(fetched) > row_cap
                rows = [[_jsonable(v) for v in row] for row in fetched[:row_cap]]
            rowcount = cur.rowcount
        if permission == "read":
            conn.rollback()
        else:
            conn.commit()
    return SqlResult(command=tag, columns=columns, rows=rows, rowcount=rowcount, truncated=truncated)


LIST_TABLES = (
    "SELECT table_schema || '.' || table_name AS table, table_type FROM information_schema.tables "
    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
)


def describe_sql(table: str) -> tuple[str, tuple[str, str]]:
    schema, _, name = table.rpartition(".")
    return (
        "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
        "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
        (schema or "public", name),
    )


def run_params(dsn: str, sql: str, params: tuple[Any, ...], *, timeout_ms: int, row_cap: int) -> SqlResult:
    with connect(dsn) as conn:
        with conn.cursor() as cur:
            cur.execute(b"SET TRANSACTION READ ONLY")
            cur.execute(b"SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_ms)),))
            cur.execute(sql, params)
            columns = [c.name for c in cur.description] if cur.description else []
            fetched = cur.fetchmany(row_cap + 1)
            rows = [[_jsonable(v) for v in row] for row in fetched[:row_cap]]
        conn.rollback()
    return SqlResult(command="SELECT", columns=columns, rows=rows, rowcount=len(rows),
                     truncated=len(fetched) > row_cap)
