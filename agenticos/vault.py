"""The vault: secrets sealed per organization with envelope encryption.

Each secret gets a random 256-bit data key that encrypts the value (AES-GCM). The data key is
wrapped (AES-GCM) by a key-encryption key derived with HKDF from VAULT_MASTER_KEY, the organization
id and the key version, so a ciphertext copied onto another organization's row cannot be opened,
and rotating the master key only rewraps data keys (`manage.py vault_rewrap`).

`reveal` is the only way out, and only runtime code (model clients, tool calls) calls it; each use of a secret is
an audit event (agenticos.secret_access).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

NONCE_BYTES = 12


class VaultError(Exception):
    """A sealed value could not be opened. The message never contains key material."""


@dataclass(frozen=True)
class Sealed:
    key_version: int
    wrapped_key: bytes
    ciphertext: bytes
    hint: str


def master_key_for(version: int) -> str:
    if version == settings.VAULT_KEY_VERSION:
        return settings.VAULT_MASTER_KEY
    try:
        return settings.VAULT_PREVIOUS_KEYS[version]
    except KeyError:
        raise VaultError(f"No master key is configured for vault key version {version}.") from None


def _kek(master_key: str, organization_id: object, version: int) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=None,
        info=f"agenticos-vault|org={organization_id}|v={version}".encode(),
    ).derive(master_key.encode())


def _encrypt(key: bytes, data: bytes, aad: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, data, aad)


def _decrypt(key: bytes, blob: bytes, aad: bytes) -> bytes:
    blob = bytes(blob)
    return AESGCM(key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], aad)


def hint_for(value: str) -> str:
    """At most the last four characters, and none for short values (they would give too much away)."""
    return value[-4:] if len(value) >= 12 else ""


def seal(organization_id: object, plaintext: str, *, version: int | None = None) -> Sealed:
    version = version or settings.VAULT_KEY_VERSION
    aad = str(organization_id).encode()
    data_key = AESGCM.generate_key(bit_length=256)
    wrapped = _encrypt(_kek(master_key_for(version), organization_id, version), data_key, aad)
    ciphertext = _encrypt(data_key, plaintext.encode(), aad)
    return Sealed(version, wrapped, ciphertext, hint_for(plaintext))


def open_sealed(organization_id: object, key_version: int, wrapped_key: bytes, ciphertext: bytes) -> str:
    aad = str(organization_id).encode()
    try:
        data_key = _decrypt(_kek(master_key_for(key_version), organization_id, key_version), wrapped_key, aad)
        return _decrypt(data_key, ciphertext, aad).decode()
    except (InvalidTag, ValueError) as exc:
        raise VaultError("This secret cannot be opened by this organization or with this master key.") from exc


def reveal(secret) -> str:
    """The plaintext of a Secret row, or of a row that keeps its own sealed value (a bot's credential, an SSO
    connection's client secret, a database connection's DSN, a person's MCP tokens). Runtime use only; never put
    the result in a response or log. Each use is an audit event (`secret.used`, agenticos.secret_access: once per secret and run, no statement of its own)."""
    # Imported here: the vault stays usable without the app registry (seal/open in management checks, doctor).
    from agenticos import secret_access

    plaintext = open_sealed(secret.organization_id, secret.key_version, secret.wrapped_key, secret.ciphertext)
    secret_access.note(secret)
    return plaintext


def rewrap(secret, *, to_version: int | None = None) -> bool:
    """Re-wrap a row's data key under the current master key. Returns True when the row changed."""
    to_version = to_version or settings.VAULT_KEY_VERSION
    if secret.key_version == to_version:
        return False
    aad = str(secret.organization_id).encode()
    old_kek = _kek(master_key_for(secret.key_version), secret.organization_id, secret.key_version)
    try:
        data_key = _decrypt(old_kek, secret.wrapped_key, aad)
    except InvalidTag as exc:
        raise VaultError(f"Secret {secret.pk} cannot be unwrapped with key version {secret.key_version}.") from exc
    new_kek = _kek(master_key_for(to_version), secret.organization_id, to_version)
    secret.wrapped_key = _encrypt(new_kek, data_key, aad)
    secret.key_version = to_version
    return True
