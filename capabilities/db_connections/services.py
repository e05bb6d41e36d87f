"""Database connections: create (sealed DSN, checked address, a real connect), change permission
(re-checking the 25-slot budget of every agent using it), delete. Audit row in each transaction."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from django.db import IntegrityError, transaction

from agenticos import audit, vault
from agenticos.errors import Conflict, Invalid
from agenticos.tenancy import Actor
from capabilities.custom_tools import budget
from capabilities.db_connections import engine
from capabilities.models import DatabaseConnection

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def _problem(field: str, message: str) -> Invalid:
    return Invalid(message, details={"problems": [{"field": field, "message": message}]})


def _whole(changes: dict[str, Any], field: str) -> int:
    """A limit as a whole number, from JSON (an int) or a form ("25"); anything else — a word, null, a list, true,
    2.5 — is the caller's 422 naming the field (the REST view and the console both pass values through)."""
    value = changes[field]
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _problem(field, "Limits are whole numbers.")
    try:
        return int(value)
    except ValueError:
        raise _problem(field, "Limits are whole numbers.") from None


def dsn_of(connection: DatabaseConnection) -> str:
    return vault.reveal(connection)  # its own sealed row: the use is a `secret.used` audit event like a Secret's


def _verify(dsn: str) -> None:
    try:
        engine.check_dsn(dsn)
    except ValueError as exc:
        raise _problem("dsn", str(exc)) from None
    try:
        engine.run(dsn, "SELECT 1", permission="read", timeout_ms=3000, row_cap=1)
    except psycopg.Error as exc:
        # The driver's message can quote the DSN; only its class is safe to show.
        raise _problem("dsn", f"Could not connect with this connection string ({type(exc).__name__}).") from None


def create_connection(*, actor: Actor, name: str, dsn: str, permission: str = "read",
                      engine: str = "postgresql") -> DatabaseConnection:
    if not NAME_RE.match(name):
        raise _problem("name", "Use 1-32 lowercase letters, digits or '_', starting with a letter.")
    if engine != DatabaseConnection.Engine.POSTGRESQL:
        raise _problem("engine", "Only PostgreSQL is supported in this deployment.")
    if permission not in DatabaseConnection.Permission.values:
        raise _problem("permission", "Choose read, write or full.")
    if not dsn.startswith(("postgresql://", "postgres://")) and "=" not in dsn:
        raise _problem("dsn", "Give a PostgreSQL connection string (postgresql://…).")
    _verify(dsn)
    sealed = vault.seal(actor.organization.pk, dsn)
    try:
        with transaction.atomic():
            conn = DatabaseConnection.objects.create(
                organization=actor.organization, name=name, engine=engine, permission=permission,
                key_version=sealed.key_version, wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext,
                created_by=actor.user)
            audit.record(actor=actor.user, organization=actor.organization, action="db_connection.created",
                         target=conn, details={"permission": permission}, ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"A database connection named {name!r} already exists.", details={"field": "name"}) from None
    return conn


def update_connection(*, actor: Actor, connection: DatabaseConnection, changes: dict[str, Any]) -> DatabaseConnection:
    with transaction.atomic():
        conn = DatabaseConnection.objects.select_for_update().get(pk=connection.pk)
        details: dict[str, Any] = {}
        if "permission" in changes:
            permission = str(changes["permission"])
            if permission not in DatabaseConnection.Permission.values:
                raise _problem("permission", "Choose read, write or full.")
            budget.check_permission_change(conn, permission)
            details["permission"] = [conn.permission, permission]
            conn.permission = permission
        if "row_cap" in changes:
            conn.row_cap = max(1, min(_whole(changes, "row_cap"), 5000))
        if "statement_timeout_ms" in changes:
            conn.statement_timeout_ms = max(100, min(_whole(changes, "statement_timeout_ms"), 60_000))
        if "dsn" in changes:
            _verify(str(changes["dsn"]))
            sealed = vault.seal(conn.organization_id, str(changes["dsn"]))
            conn.key_version, conn.wrapped_key, conn.ciphertext = sealed.key_version, sealed.wrapped_key, sealed.ciphertext
            details["dsn"] = "replaced"
        conn.save()
        audit.record(actor=actor.user, organization=actor.organization, action="db_connection.updated",
                     target=conn, details=details, ip_address=actor.extra.get("ip"))
    return conn


def delete_connection(*, actor: Actor, connection: DatabaseConnection) -> None:
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="db_connection.deleted",
                     target=connection, ip_address=actor.extra.get("ip"))
        connection.delete()
