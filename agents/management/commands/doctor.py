"""`manage.py doctor`: one line per dependency, OK or FAIL with the fix; exit code 1 when anything fails.

    OK database: ok
    FAIL celery worker: no worker answered within 1.0s — fix: start one: `celery -A config worker -Q runs,default,cpu -P threads` (make run starts one)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.core.management.base import BaseCommand, CommandError

from agenticos import health, vault

Check = Callable[[], tuple[bool, str]]

# A fixed, never-used organization id: the vault check seals and opens a value under it.
_DOCTOR_ORG = uuid.UUID("00000000-0000-4000-8000-00000000d0c7")


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        if self.ok:
            return f"OK {self.name}: {self.detail}"
        return f"FAIL {self.name}: {self.detail} — fix: {self.fix}"


def check_vault() -> tuple[bool, str]:
    from django.conf import settings

    if len(settings.VAULT_MASTER_KEY) < 16:
        return False, f"VAULT_MASTER_KEY is too short ({len(settings.VAULT_MASTER_KEY)} characters)"
    probe = f"doctor-{uuid.uuid4().hex}"
    try:
        sealed = vault.seal(_DOCTOR_ORG, probe)
        opened = vault.open_sealed(_DOCTOR_ORG, sealed.key_version, sealed.wrapped_key, sealed.ciphertext)
    except Exception as exc:
        return False, f"cannot seal and open a test value ({type(exc).__name__})"
    if opened != probe:
        return False, "a sealed test value did not open to itself"
    previous = sorted(settings.VAULT_PREVIOUS_KEYS)
    extra = f", previous versions {previous}" if previous else ""
    return True, f"key version {settings.VAULT_KEY_VERSION} seals and opens{extra}"


def stale_secret_versions() -> list[int]:
    """Key versions still used by sealed rows (secrets, sealed DSNs…) that no configured master key opens."""
    from django.conf import settings

    from agenticos.management.commands.vault_rewrap import sealed_models

    usable = {settings.VAULT_KEY_VERSION, *settings.VAULT_PREVIOUS_KEYS}
    used: set[int] = set()
    try:
        for model in sealed_models():
            used |= set(model._default_manager.values_list("key_version", flat=True).distinct())  # type: ignore[attr-defined]
    except Exception:  # an unmigrated database: the model check reports it
        return []
    return sorted(used - usable)


def check_celery(timeout: float) -> tuple[bool, str]:
    from celery import current_app as app  # the project's (config.celery, loaded with the settings)

    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as exc:
        return False, f"cannot reach the broker ({type(exc).__name__})"
    if not replies:
        return False, f"no worker answered within {timeout:g}s"
    names = sorted(name for reply in replies for name in reply)
    return True, f"{len(names)} worker(s) answering: {', '.join(names)}"


def check_model() -> tuple[bool, str]:
    from agents.models import PROVIDERS_NEEDING_BASE_URL, PROVIDERS_NEEDING_KEY, ModelProfile

    try:
        profiles = list(ModelProfile.objects.filter(kind=ModelProfile.Kind.CHAT).values("provider", "secret_id", "base_url"))
    except Exception as exc:
        return False, f"cannot read model profiles ({type(exc).__name__}; is the database migrated?)"
    runnable = [
        p
        for p in profiles
        if not (p["provider"] in PROVIDERS_NEEDING_KEY and p["secret_id"] is None)
        and not (p["provider"] in PROVIDERS_NEEDING_BASE_URL and not p["base_url"])
    ]
    if not runnable:
        if profiles:
            return False, f"{len(profiles)} chat profile(s), none with the key or base URL it needs"
        return False, "no chat model profile exists"
    providers = sorted({p["provider"] for p in runnable})
    return True, f"{len(runnable)} runnable chat profile(s) ({', '.join(providers)})"


class Command(BaseCommand):
    help = "Check every dependency (database, pgvector, Redis, vault key, Celery worker, a runnable model)."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=1.0, help="Seconds to wait for a Celery worker.")

    def handle(self, *args, **options):
        results = self.run_checks(options["timeout"])
        for result in results:
            style = self.style.SUCCESS if result.ok else self.style.ERROR
            self.stdout.write(style(result.line()))
        failed = [r.name for r in results if not r.ok]
        if failed:
            raise CommandError(f"{len(failed)} check(s) failed: {', '.join(failed)}", returncode=1)

    def run_checks(self, timeout: float) -> list[Result]:
        results: list[Result] = []

        def add(name: str, outcome: tuple[bool, str], fix: str) -> bool:
            results.append(Result(name, outcome[0], outcome[1], fix))
            return outcome[0]

        db_ok = add(
            "database",
            health.check_database(),
            "start PostgreSQL (`make run` starts the embedded one) or set DATABASE_URL to a reachable server",
        )
        if db_ok:
            add(
                "pgvector",
                health.check_pgvector(),
                "run `manage.py migrate` (it creates the extension); on your own server install pgvector "
                "(the pgvector/pgvector image ships it)",
            )
        else:
            add("pgvector", (False, "skipped: the database is down"), "fix the database first")
        redis_ok = add(
            "redis",
            health.check_redis(),
            "start Redis (`make run` starts the embedded one) or set REDIS_URL to a reachable server",
        )
        vault_ok = add(
            "vault key",
            check_vault(),
            "set VAULT_MASTER_KEY to at least 32 random characters (and VAULT_KEY_VERSION); keep older keys in VAULT_PREVIOUS_KEYS=\"1:<old key>\"",
        )
        if vault_ok and db_ok:
            stale = stale_secret_versions()
            if stale:
                results[-1] = Result(
                    "vault key",
                    False,
                    f"secrets sealed with key version(s) {stale} have no configured master key",
                    "add the old key(s) to VAULT_PREVIOUS_KEYS=\"<version>:<key>\", then run `manage.py vault_rewrap`",
                )
        if redis_ok:
            add(
                "celery worker",
                check_celery(timeout),
                "start one: `celery -A config worker -Q runs,default,cpu -P threads` "
                "(`make run` starts one; in docker-compose the `worker` service)",
            )
        else:
            add("celery worker", (False, "skipped: Redis (the broker) is down"), "fix Redis first")
        if db_ok:
            add(
                "model",
                check_model(),
                "run `manage.py platform_bootstrap` (creates the offline demo profile) or add a chat model "
                "profile with its key in /admin/agents/modelprofile/",
            )
        else:
            add("model", (False, "skipped: the database is down"), "fix the database first")
        return results
