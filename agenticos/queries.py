"""Query helpers the ORM lacks: several writes in one statement, and loading several models from one row.

On this project's hot paths (a chat turn's admission and ending) the cost of a write is mostly its round
trip and the transaction around a group of them, not PostgreSQL's work. PostgreSQL runs data-modifying
statements placed in a `WITH` clause as one statement: atomic on its own (no BEGIN/COMMIT), all of them
carried out whether or not their results are read, foreign keys checked at its end (so a row may name
another inserted beside it). The SQL of each write is Django's own (`InsertQuery`/`UpdateQuery`
compilers, with `pre_save` defaults such as `auto_now`); what Django would add around it — signals,
`save()` overrides, the row-count check of a `save()` — is not run, so use these for plain models.

The joined reads every turn makes are hand-written from the models' `_meta` instead (`Loaded`, `load_row`):
compiling them through the ORM cost three to four times what PostgreSQL spent on them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Field, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.sql import InsertQuery, UpdateQuery

ALIAS = re.compile(r"[a-z_][a-z0-9_]*")


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


@dataclass(frozen=True)
class Loaded:
    """One model's columns in a hand-written statement's rows: `alias.column` for each field, in `_meta` order."""

    model: type[Model]
    alias: str
    exclude: tuple[str, ...] = ()

    @property
    def fields(self) -> list[Field]:
        return [f for f in self.model._meta.concrete_fields if f.name not in self.exclude]

    def columns(self, quote) -> str:
        return ", ".join(f"{self.alias}.{quote(f.column)}" for f in self.fields)


def load_row(row: Sequence[Any], layout: Sequence[Loaded], using: str = "default") -> list[Model]:
    """Instances of each model in `layout` from one row holding their columns in that order (`Loaded.columns`),
    converted as Django converts what it loads (JSON, for one); excluded fields are deferred. For hot
    statements whose ORM compilation would cost more than the round trip."""
    connection = connections[using]
    instances: list[Model] = []
    position = 0
    for part in layout:
        fields = part.fields
        values = list(row[position:position + len(fields)])
        position += len(fields)
        for index, model_field in enumerate(fields):
            col = model_field.get_col(part.alias)
            for converter in connection.ops.get_db_converters(col) + col.get_db_converters(connection):
                values[index] = converter(values[index], col, connection)
        instances.append(part.model.from_db(using, [f.attname for f in fields], values))
    return instances

