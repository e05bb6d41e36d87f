"""The test databases are copies of one migrated template (PostgreSQL's CREATE DATABASE … TEMPLATE), not each
migrated from nothing.

Migrating a fresh test database runs every migration of every app: 20–60 s of each xdist worker on this 2-core
machine, and minutes under load (159 s measured at a load of 14) — for every worker of every run, the same
schema each time. Here the first process that needs it migrates a template database once, named after a hash of
what decides the schema (every installed app's migration files, Django's version); every test database is then a
copy of it, which takes about a second. Django still runs `migrate` on the copy, as on any test database: it finds
every migration applied and only checks, so a schema the hash missed would still be migrated, not wrong.

The template is built under a PostgreSQL advisory lock, so parallel workers (and other checkouts sharing the
server) build it once and the others wait for it; it is built under a temporary name and renamed when complete,
so a build that died leaves no template half-made. The few newest templates are kept, older ones dropped.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import connections

PREFIX = "agenticos_tpl_"
KEEP = 4  # templates of other branches' schemas (other checkouts share the server) survive a few changes
_LOCK = 0x61676E74  # any constant: the advisory lock's key, the same in every process


def schema_hash() -> str:
    digest = hashlib.sha256(django.get_version().encode())
    for config in sorted(apps.get_app_configs(), key=lambda config: config.label):
        folder = Path(config.path) / "migrations"
        # An app without migrations gets its tables from its models (migrate's run_syncdb).
        files = sorted(folder.glob("*.py")) if folder.is_dir() else sorted(Path(config.path).glob("models*.py"))
        for path in files:
            digest.update(f"{config.label}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _admin(alias: str):
    """A connection to the server's maintenance database, outside Django's pool."""
    import psycopg

    params = connections[alias].get_connection_params()
    params.pop("pool", None)
    params["dbname"] = "postgres"
    return psycopg.connect(**params, autocommit=True)


def _migrate_into(alias: str, name: str) -> None:
    connection = connections[alias]
    previous = connection.settings_dict["NAME"]
    connection.close()
    connection.close_pool()
    connection.settings_dict["NAME"] = name
    try:
        call_command("migrate", verbosity=0, interactive=False, database=alias, run_syncdb=True)
    finally:
        connection.close()
        connection.close_pool()  # a pooled connection to the template would refuse every copy of it
        connection.settings_dict["NAME"] = previous


def use_template(alias: str = "default") -> str:
    """Make sure the template of the current schema exists, and have Django's test database created from it."""
    name = PREFIX + schema_hash()
    quote = connections[alias].ops.quote_name
    with _admin(alias) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", [_LOCK])
        try:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                building = f"{name}_building"
                admin.execute(f"DROP DATABASE IF EXISTS {quote(building)} WITH (FORCE)")  # a build that died
                admin.execute(f"CREATE DATABASE {quote(building)}")
                _migrate_into(alias, building)
                admin.execute(f"ALTER DATABASE {quote(building)} RENAME TO {quote(name)}")
                _drop_old_templates(admin, quote)
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    settings.DATABASES[alias].setdefault("TEST", {})["TEMPLATE"] = name
    connections[alias].settings_dict.setdefault("TEST", {})["TEMPLATE"] = name
    return name


def _drop_old_templates(admin, quote) -> None:
    rows = admin.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname NOT LIKE %s ORDER BY oid DESC",
        [PREFIX + "%", "%_building"],
    ).fetchall()
    for (old,) in rows[KEEP:]:
        try:
            admin.execute(f"DROP DATABASE {quote(old)}")
        except Exception:  # noqa: BLE001, S110  (being copied by another checkout's run: dropped next time)
            pass


# The session's last step, run by a process of its own: DROP DATABASE unlinks every file of the test database and
# waits for a checkpoint, seconds at the end of every worker (4–7 s measured on this machine quiet, up to ~20 s
# beside a loaded one, in the teardown of each worker's last test; py-spy: `_destroy_test_db`) — time in which
# nothing is tested. Nothing needs the database gone before pytest exits: the next run creates its test database
# under the same name and pytest-django drops a leftover one first (`--create-db`).
_DROP = """
import json, sys, psycopg
params = json.loads(sys.argv[1])
with psycopg.connect(**params["connect"], autocommit=True) as admin:
    admin.execute("DROP DATABASE IF EXISTS " + params["name"] + " WITH (FORCE)")
"""


def drop_test_database_in_background(alias: str = "default") -> None:
    """Have the test database of `alias` dropped by a detached process when pytest-django tears it down."""
    connection = connections[alias]
    creation = connection.creation

    def destroy(test_database_name: str, verbosity: int) -> None:
        connection.close_pool()
        given = connection.settings_dict
        connect = {key: value for key, value in {
            "dbname": "postgres", "host": given.get("HOST"), "port": given.get("PORT"),
            "user": given.get("USER")}.items() if value}
        arguments = json.dumps({"connect": connect, "name": connection.ops.quote_name(test_database_name)})
        environment = dict(os.environ, PGPASSWORD=str(given.get("PASSWORD") or ""))  # not in the command line
        subprocess.Popen([sys.executable, "-c", _DROP, arguments], start_new_session=True, env=environment,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    creation._destroy_test_db = destroy


if __name__ == "__main__":
    # `make test` builds the template here, in the background, while it checks the migrations and pytest starts
    # and collects (seconds of CPU per worker): on a fresh checkout the build (~25 s of CPU) no longer starts only
    # once the workers ask for their databases, with the second worker waiting on the lock meanwhile.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    print(f"test database template: {use_template()}")
