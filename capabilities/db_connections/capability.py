"""The `database` capability: list_tables, describe_table, run_sql over the bound connections.

Config `{connection_ids}`; each tool takes the connection's name, so the tool ids stay stable (approval on
`run_sql` keys on that id whatever the connections). DSNs are opened while the run is assembled and live
only in this run's closures.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import replace
from typing import Any

import anyio.to_thread
import psycopg
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import PreparedToolset

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from capabilities.db_connections import engine


class DatabaseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connection_ids: list[str] = Field(default_factory=list, description="Database connections this agent may use.")


def _conn(ctx: RunContext[Any], connection: str) -> dict[str, Any] | str:
    conns: dict[str, dict[str, Any]] = ctx.deps.scratch.get("db_connections", {})
    if connection not in conns:
        names = ", ".join(sorted(conns)) or "none"
        return failures.retry(ctx, f"No database connection named {connection!r}. This agent has: {names}.")
    return conns[connection]


def _render(result: engine.SqlResult) -> dict[str, Any]:
    out: dict[str, Any] = {"command": result.command, "columns": result.columns, "rows": result.rows,
                           "rowcount": result.rowcount}
    if result.truncated:
        out["note"] = f"Only the first {len(result.rows)} rows are shown (row cap); narrow the query."
    return out


async def _guarded(ctx: RunContext[Any], fn) -> Any:
    try:
        return await anyio.to_thread.run_sync(fn)
    except engine.SqlRefused as exc:
        return failures.refuse(str(exc))
    except psycopg.errors.ReadOnlySqlTransaction:
        return failures.refuse("This connection is read-only: it can run queries but not change anything.")
    except psycopg.errors.QueryCanceled:
        return failures.retry(ctx, "The statement ran past the connection's time limit; make it cheaper.")
    except psycopg.errors.InsufficientPrivilege:
        return failures.refuse("The database user of this connection is not allowed to do that.")
    except psycopg.OperationalError as exc:
        return failures.transient(ctx, f"The database could not be reached ({type(exc).__name__}).")
    except psycopg.Error as exc:
        # Errors from the SQL itself are the model's to fix; the server's message names the problem.
        message = getattr(getattr(exc, "diag", None), "message_primary", None) or type(exc).__name__
        return failures.retry(ctx, f"The database rejected the SQL: {message}")
    except ValueError as exc:
        return failures.refuse(str(exc))


async def list_tables(ctx: RunContext[Any], connection: str) -> Any:
    """List the tables and views of a database connection.

    Args:
        connection: The connection's name (see the tool descriptions for the names this agent has).

    Returns:
        Columns `table` (schema.name) and `table_type`, one row per table or view.
    """
    conn = _conn(ctx, connection)
    if isinstance(conn, str):
        return conn
    return await _guarded(ctx, lambda: _render(engine.run(
        conn["dsn"], engine.LIST_TABLES, permission="read", timeout_ms=conn["timeout_ms"], row_cap=1000)))


async def describe_table(ctx: RunContext[Any], connection: str, table: str) -> Any:
    """Describe the columns of one table: name, type, nullability and default.

    Args:
        connection: The connection's name.
        table: `schema.table`, or just `table` for the public schema.

    Returns:
        One row per column, in order. An unknown table returns no rows.
    """
    conn = _conn(ctx, connection)
    if isinstance(conn, str):
        return conn
    sql, params = engine.describe_sql(table)
    return await _guarded(ctx, lambda: _render(engine.run_params(
        conn["dsn"], sql, params, timeout_ms=conn["timeout_ms"], row_cap=500)))


async def run_sql(ctx: RunContext[Any], connection: str, sql: str) -> Any:
    """Run one SQL statement on a database connection.

    What is allowed depends on the connection's permission: read runs queries only, write also changes
    rows (INSERT/UPDATE/DELETE) but never the schema, full allows everything. One statement per call.

    Args:
        connection: The connection's name.
        sql: One SQL statement.

    Returns:
        command, columns, rows (capped; a note says when more exist) and rowcount. A statement the
        permission does not allow is refused; SQL the database rejects comes back with its error.
    """
    conn = _conn(ctx, connection)
    if isinstance(conn, str):
        return conn
    return await _guarded(ctx, lambda: _render(engine.run(
        conn["dsn"], sql, permission=conn["permission"], timeout_ms=conn["timeout_ms"], row_cap=conn["row_cap"])))


def build(ctx: BuildContext) -> list[Built]:
    from capabilities.db_connections.services import dsn_of
    from capabilities.models import DatabaseConnection

    assert isinstance(ctx.config, DatabaseConfig)
    ids = []
    for value in ctx.config.connection_ids:
        try:
            ids.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    rows = DatabaseConnection.objects.filter(organization_id=ctx.organization_id, pk__in=ids)
    conns = {row.name: {"dsn": dsn_of(row), "permission": row.permission, "timeout_ms": row.statement_timeout_ms,
                        "row_cap": row.row_cap} for row in rows}
    if not conns:
        return []
    ctx.deps.scratch["db_connections"] = conns
    listing = "; ".join(f"{name} ({c['permission']})" for name, c in sorted(conns.items()))

    def name_the_connections(run_ctx: Any, tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        out = []
        for tool_def in tool_defs:
            schema = copy.deepcopy(tool_def.parameters_json_schema)
            prop = schema.get("properties", {}).get("connection")
            if prop is not None:
                prop["enum"] = sorted(conns)
                prop["description"] = f"The connection's name. This agent has: {listing}."
            out.append(replace(tool_def, parameters_json_schema=schema))
        return out

    toolset = function_toolset([list_tables, describe_table, run_sql], max_retries=2)
    return [PreparedToolset(toolset, name_the_connections)]


CAPABILITY = Capability(
    id="database",
    name="Databases",
    category="analysis",
    description="Queries your connected databases: list tables, describe them, run SQL within each connection's permission.",
    offers="SQL over your connected databases, within each connection's permission",
    examples=(
        "How many orders did we ship last week?",
        "Which customers signed up this month but never logged in?",
        "What tables are in the sales database?",
    ),
    never_does=(
        "It never writes through a read connection (PostgreSQL itself refuses), runs only one statement per"
        " call, and refuses schema statements such as CREATE or DROP on a write connection."
    ),
    tools=(ToolDecl.from_function(list_tables), ToolDecl.from_function(describe_table),
           ToolDecl.from_function(run_sql, side_effecting=True)),
    config_model=DatabaseConfig,
    build=build,
)
