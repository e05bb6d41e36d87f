"""The transactional tests' flush, as DELETEs in one transaction instead of Django's TRUNCATE of every table.

Django's TransactionTestCase empties the database after each test with `flush`: one TRUNCATE of all ~80 tables
(each gets new files, and the statement waits for an ACCESS EXCLUSIVE lock on every one), then the post_migrate
signal, which recreates the content types and permissions the TRUNCATE removed. Measured on this 2-core machine
under load: 0.4–1.3 s for the TRUNCATE and 0.1–0.27 s for post_migrate, against 0.02–0.03 s for a DELETE of
every table — and the suite has over a thousand transactional tests.

This leaves the database in the state the flush leaves it in — every table empty, sequences not reset (as
Django's `reset_sequences=False`) — except the content types and permissions, which post_migrate would rebuild
with the same rows: they are kept, and a checksum of them is compared after each test. A test that added,
changed or removed one gets Django's own flush (TRUNCATE + post_migrate) instead, so nothing it did leaks.

Every foreign key Django creates on PostgreSQL is DEFERRABLE INITIALLY DEFERRED, so the DELETEs run in any
order inside one transaction and the keys are checked at its commit, when every table is empty; a key that is
not deferrable (added by hand in a migration) stops the first flush with its name, rather than fail a random test.
Tests that ask for `available_apps`, `serialized_rollback` or `reset_sequences` keep Django's flush.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, transaction
from django.test import TransactionTestCase

_original_teardown = TransactionTestCase._fixture_teardown
# Per database alias: the checksum of the kept tables after the last full flush.
_kept_checksum: dict[str, str] = {}


def _kept_tables() -> list[str]:
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    return [ContentType._meta.db_table, Permission._meta.db_table]


def _checksum(connection: Any) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT md5(coalesce((SELECT string_agg(concat_ws('|', id, app_label, model), ',' ORDER BY id)"
            " FROM django_content_type), '') || '#' ||"
            " coalesce((SELECT string_agg(concat_ws('|', id, content_type_id, codename, name), ',' ORDER BY id)"
            " FROM auth_permission), ''))"
        )
        return cursor.fetchone()[0]


def _delete_everything_but_the_kept(connection: Any, alias: str) -> None:
    kept = set(_kept_tables())
    tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
              if t not in kept]
    quote = connection.ops.quote_name
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        # One round trip: no parameters, so psycopg sends the statements as one simple query.
        # The names are Django's own tables, quoted.
        cursor.execute("".join(f"DELETE FROM {quote(table)};" for table in tables))  # noqa: S608


def _fixture_teardown(self: TransactionTestCase) -> None:
    if self.available_apps is not None or self.serialized_rollback or self.reset_sequences:
        _original_teardown(self)
        return
    for alias in self._databases_names(include_mirrors=False):
        connection = connections[alias]
        if _kept_checksum.get(alias) is None or _checksum(connection) != _kept_checksum[alias]:
            # The first flush of the session, or a test touched the content types or permissions: Django's own
            # flush, then remember what post_migrate rebuilt.
            if alias not in _kept_checksum:
                _refuse_undeferrable_keys(alias)
            _original_teardown_one(self, alias)
            _kept_checksum[alias] = _checksum(connection)
        else:
            _delete_everything_but_the_kept(connection, alias)


def _original_teardown_one(self: TransactionTestCase, alias: str) -> None:
    from django.core.management import call_command

    call_command("flush", verbosity=0, interactive=False, database=alias, reset_sequences=False,
                 allow_cascade=False, inhibit_post_migrate=False)


def _refuse_undeferrable_keys(alias: str) -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT conrelid::regclass::text, conname FROM pg_constraint "
                       "WHERE contype = 'f' AND NOT condeferrable AND connamespace = 'public'::regnamespace")
        keys = cursor.fetchall()
    if keys:
        raise RuntimeError(f"foreign keys that are not deferrable: {keys}; tests/fastflush.py deletes every "
                           "table in one transaction and needs them checked at commit")


def install() -> None:
    """Replace TransactionTestCase's flush for this process."""
    TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[method-assign]


def uninstall() -> None:
    TransactionTestCase._fixture_teardown = _original_teardown  # type: ignore[method-assign]
    _kept_checksum.clear()
