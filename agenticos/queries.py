"""Query helpers the ORM lacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django.db import connections
from django.db.models import QuerySet
from django.db.models.sql import UpdateQuery


def update_returning(queryset: QuerySet, returning: Sequence[str], **values: Any) -> dict[str, Any] | None:
    """`queryset.update(**values)` that also hands back the updated row's `returning` fields (PostgreSQL's
    RETURNING): one round trip where an update and a read took two. For a queryset matching at most one
    row; None when it matched none. Values may be expressions (`F("n") + 1`); the SQL is Django's own.
    Returned values are what the database sends (no `from_db_value` conversions), so keep `returning` to
    plain columns (numbers, text, booleans, decimals)."""
    query = cast(UpdateQuery, queryset.query.chain(UpdateQuery))
    query.add_update_values(values)
    compiler = query.get_compiler(queryset.db)
    sql, params = compiler.as_sql()
    meta = queryset.model._meta
    connection = connections[queryset.db]
    columns = ", ".join(connection.ops.quote_name(meta.get_field(name).column) for name in returning)
    with connection.cursor() as cursor:
        cursor.execute(f"{sql} RETURNING {columns}", params)
        row = cursor.fetchone()
    return dict(zip(returning, row, strict=True)) if row is not None else None
