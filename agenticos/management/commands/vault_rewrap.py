"""`manage.py vault_rewrap`: re-wrap every sealed row's data key under the current master key.

Rotation (docs/operations.md):
    VAULT_PREVIOUS_KEYS="1:<old key>"  VAULT_MASTER_KEY=<new key>  VAULT_KEY_VERSION=2
    manage.py vault_rewrap              # every row now at version 2
    then drop VAULT_PREVIOUS_KEYS.

Only data keys are re-wrapped; ciphertexts do not change, so the values are never decrypted here.
All rows move in one transaction: a row that cannot be unwrapped aborts the whole rotation.
"""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import models, transaction

from agenticos import audit, vault

SEALED_FIELDS = {"organization", "key_version", "wrapped_key", "ciphertext"}


def sealed_models() -> list[type[models.Model]]:
    """Every model that stores vault-sealed values (Secret today; any later model with the same fields)."""
    found = []
    for model in apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if SEALED_FIELDS <= names:
            found.append(model)
    return sorted(found, key=lambda m: m._meta.label)


class Command(BaseCommand):
    help = "Re-wrap every sealed value's data key under the current VAULT_MASTER_KEY / VAULT_KEY_VERSION."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count what would change, change nothing.")

    def handle(self, *args, dry_run: bool = False, **options):
        target = settings.VAULT_KEY_VERSION
        totals: dict[str, tuple[int, int]] = {}
        try:
            with transaction.atomic():
                for model in sealed_models():
                    totals[model._meta.label] = self._rewrap_model(model, target)
                changed = sum(c for c, _ in totals.values())
                if dry_run:
                    transaction.set_rollback(True)
                elif changed:
                    audit.record(
                        actor=None,
                        organization=None,
                        action="vault.rewrap",
                        target_type="vault",
                        target_name=f"key version {target}",
                        details={"to_version": target, "rewrapped": {k: c for k, (c, _) in totals.items()}},
                    )
        except vault.VaultError as exc:
            raise CommandError(
                f"{exc} Nothing was changed. Keep every old key in VAULT_PREVIOUS_KEYS=\"<version>:<key>\" "
                "until the rotation has finished."
            ) from exc
        verb = "would re-wrap" if dry_run else "re-wrapped"
        for label, (changed_rows, current_rows) in totals.items():
            self.stdout.write(f"{label}: {verb} {changed_rows}, already at version {target}: {current_rows}")
        total = sum(c for c, _ in totals.values())
        self.stdout.write(self.style.SUCCESS(f"Done: {verb} {total} row(s) to key version {target}."))

    def _rewrap_model(self, model: type[models.Model], target: int) -> tuple[int, int]:
        changed = current = 0
        # Sealed rows are few (keys, tokens); lock them all so no rotation races a concurrent write.
        for row in model._default_manager.select_for_update().order_by("pk"):  # type: ignore[attr-defined]
            if vault.rewrap(row, to_version=target):
                row.save(update_fields=["wrapped_key", "key_version"])
                changed += 1
            else:
                current += 1
        return changed, current
