"""The vault: sealing per organization, and rotating the master key with `manage.py vault_rewrap`."""

from __future__ import annotations

import logging
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agenticos import vault
from agenticos.models import AuditEvent, Secret
from tests import factories
from tests.ops import world

OLD_KEY = "old-master-key-for-the-rotation-test-0001"
NEW_KEY = "new-master-key-for-the-rotation-test-0002"


@pytest.fixture
def on_old_key(db, settings):
    settings.VAULT_MASTER_KEY = OLD_KEY
    settings.VAULT_KEY_VERSION = 1
    settings.VAULT_PREVIOUS_KEYS = {}
    return settings


def rotate_settings(settings) -> None:
    settings.VAULT_MASTER_KEY = NEW_KEY
    settings.VAULT_KEY_VERSION = 2
    settings.VAULT_PREVIOUS_KEYS = {1: OLD_KEY}


def rewrap(*args: str) -> str:
    out = StringIO()
    call_command("vault_rewrap", *args, stdout=out)
    return out.getvalue()


def test_a_sealed_value_opens_in_its_own_organization(org):
    secret = world.secret(org, "sk-round-trip-0123456789abcd")
    assert vault.reveal(secret) == "sk-round-trip-0123456789abcd"
    assert secret.hint == "abcd"
    assert b"round-trip" not in bytes(secret.ciphertext)


def test_a_ciphertext_copied_onto_another_organizations_row_does_not_open(org, outsider_org):
    mine = world.secret(org, "sk-stay-home-0123456789")
    theirs = world.secret(outsider_org, "sk-theirs-0123456789")
    theirs.key_version, theirs.wrapped_key, theirs.ciphertext = mine.key_version, mine.wrapped_key, mine.ciphertext
    theirs.save()
    theirs.refresh_from_db()
    with pytest.raises(vault.VaultError) as excinfo:
        vault.reveal(theirs)
    assert "sk-stay-home" not in str(excinfo.value)


def test_rotating_the_master_key_rewraps_every_secret_and_they_open_without_the_old_key(on_old_key, caplog):
    caplog.set_level(logging.DEBUG)
    a, b = factories.organization("A"), factories.organization("B")
    values = {"sk-a-rotation-0123456789": a, "sk-b-rotation-0123456789": b, "sk-b2-rotation-012345678": b}
    secrets = {value: world.secret(org, value) for value, org in values.items()}
    ciphertexts = {value: bytes(s.ciphertext) for value, s in secrets.items()}

    rotate_settings(on_old_key)
    out = rewrap()
    assert "agenticos.Secret: re-wrapped 3, already at version 2: 0" in out
    assert "Done: re-wrapped 3 row(s) to key version 2." in out

    on_old_key.VAULT_PREVIOUS_KEYS = {}  # the old key is dropped once the rotation finished
    for value, secret in secrets.items():
        secret.refresh_from_db()
        assert secret.key_version == 2
        assert bytes(secret.ciphertext) == ciphertexts[value]  # only the data key moved
        assert vault.reveal(secret) == value
        assert value not in out and value not in caplog.text

    event = AuditEvent.objects.get(action="vault.rewrap")
    assert event.details["to_version"] == 2
    assert event.details["rewrapped"]["agenticos.Secret"] == 3
    assert "already at version 2: 3" in rewrap()
    assert AuditEvent.objects.filter(action="vault.rewrap").count() == 1


def test_a_secret_left_on_the_old_key_cannot_be_opened_once_the_old_key_is_dropped(on_old_key):
    secret = world.secret(factories.organization("A"), "sk-forgotten-0123456789")
    rotate_settings(on_old_key)
    on_old_key.VAULT_PREVIOUS_KEYS = {}
    with pytest.raises(vault.VaultError):
        vault.reveal(secret)


def test_a_rotation_without_the_old_key_changes_nothing_and_says_how_to_fix_it(on_old_key):
    org = factories.organization("A")
    first = world.secret(org, "sk-first-0123456789abc")
    rotate_settings(on_old_key)
    world.secret(org, "sk-already-new-0123456789")  # sealed with version 2
    on_old_key.VAULT_PREVIOUS_KEYS = {}

    with pytest.raises(CommandError) as excinfo:
        rewrap()
    assert "No master key is configured for vault key version 1" in str(excinfo.value)
    assert "VAULT_PREVIOUS_KEYS" in str(excinfo.value)
    first.refresh_from_db()
    assert first.key_version == 1
    assert not AuditEvent.objects.filter(action="vault.rewrap").exists()


def test_every_model_holding_sealed_values_is_rotated():
    from agenticos.management.commands.vault_rewrap import sealed_models

    labels = [m._meta.label for m in sealed_models()]
    assert "agenticos.Secret" in labels
    assert "agents.Run" not in labels  # only models with every sealed field


def test_a_dry_run_counts_without_changing_anything(on_old_key):
    secret = world.secret(factories.organization("A"), "sk-dry-run-0123456789")
    rotate_settings(on_old_key)
    out = rewrap("--dry-run")
    assert "agenticos.Secret: would re-wrap 1, already at version 2: 0" in out
    secret.refresh_from_db()
    assert secret.key_version == 1
    assert not AuditEvent.objects.filter(action="vault.rewrap").exists()


def test_a_wrong_old_key_aborts_the_rotation(on_old_key):
    secret = world.secret(factories.organization("A"), "sk-wrong-old-0123456789")
    rotate_settings(on_old_key)
    on_old_key.VAULT_PREVIOUS_KEYS = {1: "not-the-key-that-sealed-it"}
    with pytest.raises(CommandError, match="cannot be unwrapped with key version 1"):
        rewrap()
    assert Secret.objects.get(pk=secret.pk).key_version == 1
