"""Query helpers the ORM lacks: several writes in one statement, and an update that loads what it changed.

On this project's hot paths (a chat turn's admission and ending) the cost of a write is mostly its round
trip and the transaction around a group of them, not PostgreSQL's work. PostgreSQL runs data-modifying
statements placed in a `WITH` clause as one statement: atomic on its own (no BEGIN/COMMIT), all of them
carried out whether or not their results are read, foreign keys checked at its end (so a row may name
another inserted beside it). The SQL of each write is Django's own (`InsertQuery`/`UpdateQuery`
compilers, with `pre_save` defaults such as `auto_now`); what Django would add around it — signals,
`save()` overrides, the row-count check of a `save()` — is not run, so use these for plain models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Field, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery, Query, UpdateQuery

ALIAS = re.compile(r"[a-z_][a-z0-9_]*")
M = TypeVar("M", bound=Model)


@dataclass
class Insert:
    """Insert `objs` (instances of one model). For a single object, an auto-increment key left unset comes
    back into the instance, as `save()` would set it, and `returning` names columns to hand back; several
    objects go in as one multi-row insert that returns nothing."""

    objs: Sequence[Model]
    returning: Sequence[str] = ()
    # What later writes of the same statement call it in `returned()` (default: its position, "w0"…).
    name: str = ""


@dataclass
class Update:
    """`queryset.update(**values)`; with `returning`, the updated row's columns come back (a queryset
    that matches at most one row)."""

    queryset: QuerySet
    values: dict[str, Any] = field(default_factory=dict)
    returning: Sequence[str] = ()
    name: str = ""


def returned(name: str, field_name: str, output_field: Field | None = None) -> RawSQL:
    """A value for a later write of the same statement: the `field_name` the write called `name` returns
    (it must list it in `returning`, or it be an insert's auto key). E.g. link rows to a message inserted
    beside them."""
    if not ALIAS.fullmatch(name):
        raise ValueError(f"write name {name!r}: lower-case letters, digits and underscores")
    column = connections["default"].ops.quote_name(f"{name}_{field_name}")
    # Identifiers only: a checked name and a quoted column; no value is interpolated.
    return RawSQL(f"(SELECT {column} FROM {name})", (), output_field=output_field)  # noqa: S608, S611


def _columns(model: type[Model], names: Sequence[str], alias: str, quote) -> list[str]:
    return [f"{quote(cast(Field, model._meta.get_field(name)).column)} AS {quote(f'{alias}_{name}')}" for name in names]


def _insert_sql(write: Insert, using: str) -> tuple[str, list, list[str], list[str]]:
    model = type(write.objs[0])
    meta = model._meta
    auto = meta.auto_field
    pk_unset = auto is not None and any(obj.pk is None for obj in write.objs)
    if pk_unset and any(obj.pk is not None for obj in write.objs):
        raise ValueError("Insert: set the auto-increment key on every object or on none")
    fields = [f for f in meta.local_concrete_fields if not f.generated and not (pk_unset and f is auto)]
    query = InsertQuery(model)
    query.insert_values(fields, list(write.objs))
    statements = query.get_compiler(using).as_sql()
    if len(statements) != 1:
        raise ValueError("Insert: the rows do not compile to a single statement")
    sql, params = statements[0]
    if len(write.objs) > 1:
        if write.returning:
            raise ValueError("Insert: `returning` is for a single object")
        return sql, list(params), [], []
    key = [meta.pk.name] if pk_unset else []
    names = [*key, *(n for n in write.returning if n not in key)]
    return sql, list(params), names, key


def write_together(*writes: Insert | Update, using: str = "default") -> list[dict[str, Any] | None]:
    """Carry out `writes` in one statement and hand back, per write, the returned row's fields (a dict), or
    None when it returns nothing (no `returning`, or no row matched/inserted).

    Returned values are what the database sends (no `from_db_value` conversions): keep `returning` to plain
    columns (numbers, text, booleans, decimals, dates). The writes must touch different rows (PostgreSQL
    does not let one statement change a row twice) and cannot see each other's effects.
    """
    connection = connections[using]
    quote = connection.ops.quote_name
    ctes: list[str] = []
    params: list[Any] = []
    selected: list[tuple[int, str, list[str], type[Model]]] = []
    keys: dict[int, list[str]] = {}
    for index, write in enumerate(writes):
        alias = write.name or f"w{index}"
        if not ALIAS.fullmatch(alias):
            raise ValueError(f"write name {alias!r}: lower-case letters, digits and underscores")
        if isinstance(write, Insert):
            if not write.objs:
                raise ValueError("Insert: nothing to insert")
            sql, write_params, names, keys[index] = _insert_sql(write, using)
            model: type[Model] = type(write.objs[0])
        else:
            query = cast(UpdateQuery, write.queryset.query.chain(UpdateQuery))
            query.add_update_values(write.values)
            try:
                sql, update_params = query.get_compiler(using).as_sql()
            except EmptyResultSet:  # a filter no row can match (`pk__in=[]`)
                sql = ""
            if not sql:
                continue
            write_params, names, model = list(update_params), list(write.returning), write.queryset.model
        if names:
            # The last column says a row came back at all (a returned value may itself be NULL).
            present = quote(f"{alias}_")
            sql = f"{sql} RETURNING {', '.join(_columns(model, names, alias, quote))}, TRUE AS {present}"
            selected.append((index, alias, names, model))
        ctes.append(f"{alias} AS ({sql})")
        params.extend(write_params)
    if not ctes:
        return [None] * len(writes)
    joins = " ".join(f"LEFT JOIN {alias} ON TRUE" for _, alias, _, _ in selected)
    columns = ", ".join(
        f"{alias}.{quote(f'{alias}_{name}')}" for _, alias, names, _ in selected for name in [*names, ""]
    ) or "1"
    with connection.cursor() as cursor:
        # Django's compiled SQL, checked names and quoted columns; every value travels in `params`.
        cursor.execute(f"WITH {', '.join(ctes)} SELECT {columns} FROM (SELECT 1) AS one {joins}", params)  # noqa: S608
        row = cursor.fetchone()
    results: list[dict[str, Any] | None] = [None] * len(writes)
    position = 0
    for index, _alias, names, _model in selected:
        values = row[position:position + len(names) + 1]
        position += len(names) + 1
        if values[-1]:
            results[index] = dict(zip(names, values[:-1], strict=True))
    for index, write in enumerate(writes):
        if isinstance(write, Insert):
            for obj in write.objs:
                obj._state.adding = False
                obj._state.db = using
            returned = results[index]
            if keys[index] and returned is not None:
                write.objs[0].pk = returned[keys[index][0]]
    return results


class _Prefixed(Query):
    """A query whose SQL follows a prefix of its own (a WITH clause) — the ORM has no place for one."""

    prefix: tuple[str, tuple[Any, ...]] = ("", ())

    def get_compiler(self, using=None, connection=None, elide_empty=True):
        compiler = super().get_compiler(using, connection, elide_empty)
        as_sql, (prefix, prefix_params) = compiler.as_sql, self.prefix

        def prefixed(*args, **kwargs):
            sql, params = as_sql(*args, **kwargs)
            return f"{prefix} {sql}", (*prefix_params, *params)

        compiler.as_sql = prefixed  # type: ignore[method-assign]
        return compiler


def update_then_load(update: QuerySet[M], values: dict[str, Any], load: QuerySet[M]) -> list[M]:
    """`update.update(**values)` and `list(load)` in one statement, where `load` sees its model's table as
    the rows the update changed, after the change, and nothing else of it (a WITH clause of the table's
    own name stands in for it). `load` may follow relations (`select_related`): the related rows are read
    as they are. E.g. take a queued run and load it with its agent and version, or learn that it was not
    there to take (an empty list)."""
    if update.model is not load.model:
        raise ValueError("update_then_load: `update` and `load` must be querysets of one model")
    connection = connections[update.db]
    query = cast(UpdateQuery, update.query.chain(UpdateQuery))
    query.add_update_values(values)
    try:
        sql, params = query.get_compiler(update.db).as_sql()
    except EmptyResultSet:
        return []
    table = connection.ops.quote_name(update.model._meta.db_table)
    loading = load.all()
    loading.query.__class__ = _Prefixed
    loading.query.prefix = (f"WITH {table} AS ({sql} RETURNING *)", tuple(params))  # type: ignore[attr-defined]
    return list(loading)
