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
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import conninfo as pg_conninfo

from capabilities import netguard

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


def check_dsn(dsn: str) -> dict[str, Any]:
    """Parse a DSN and apply the same address rules as every other outbound call. Raises ValueError."""
    try:
        params = pg_conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        raise ValueError("The connection string cannot be parsed.") from None
    hosts = [h for h in str(params.get("host") or "").split(",") if h] or ["localhost"]
    for host in hosts:
        if host.startswith("/"):
            if not _listed(host):
                raise ValueError("A local socket is only reachable when the operator lists it in "
                                 "TOOL_ALLOWED_PRIVATE_HOSTS.")
            continue
        _check_host(host)
    return params


def _listed(entry: str) -> bool:
    from django.conf import settings

    return entry in (getattr(settings, "TOOL_ALLOWED_PRIVATE_HOSTS", []) or [])


def _check_host(host: str) -> None:
    import asyncio

    try:
        ipaddress.ip_address(host)
        url = f"http://{host if ':' not in host else '[' + host + ']'}/"
    except ValueError:
        url = f"http://{host}/"
    try:  # always called from synchronous code (a view, or a worker thread of a tool call)
        asyncio.run(netguard.check_url(url))
    except netguard.AddressRefused as exc:
        raise ValueError(str(exc)) from None


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def run(dsn: str, sql: str, *, permission: str, timeout_ms: int, row_cap: int) -> SqlResult:
    """Execute one statement with the permission enforced. Raises SqlRefused or psycopg.Error."""
    if not sql.strip():
        raise SqlRefused("The SQL is empty.")
    with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=False) as conn:
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
    with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=False) as conn:
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
