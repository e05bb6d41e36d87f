"""A software WebAuthn authenticator (a platform passkey in a test): it answers `navigator.credentials.create` and
`.get` the way a browser and its authenticator do — client data JSON with the challenge and origin, authenticator
data with the RP id hash, flags and a signature counter, a "none" attestation carrying an ES256 COSE key, and ES256
signatures over authenticator data + the client data hash. Built from fido2's own data types and `cryptography`;
what it returns is the JSON form `PublicKeyCredential.toJSON()` gives."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import ES256
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    Aaguid,
    AttestationObject,
    AttestedCredentialData,
    AuthenticatorData,
    CollectedClientData,
)

FLAGS = AuthenticatorData.FLAG


@dataclass
class SoftAuthenticator:
    origin: str = "http://localhost"
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    counter: int = 0
    # A discoverable credential (a passkey) keeps the user handle the RP gave at creation and returns it with each
    # assertion; the RP asks for one with authenticatorSelection.residentKey "required" (or "preferred").
    user_handle: str | None = None
    user_verified: bool = True  # the person unlocked it (PIN, biometrics): the UV flag

    def __post_init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())

    def _rp_hash(self, rp_id: str) -> bytes:
        return hashlib.sha256(rp_id.encode()).digest()

    def create(self, options: dict[str, Any], *, origin: str | None = None) -> dict[str, Any]:
        public_key = options["publicKey"]
        resident = (public_key.get("authenticatorSelection") or {}).get("residentKey") in ("required", "preferred")
        self.user_handle = public_key["user"]["id"] if resident else None
        client_data = CollectedClientData.create("webauthn.create", public_key["challenge"], origin or self.origin)
        credential_data = AttestedCredentialData.create(Aaguid.NONE, self.credential_id,
                                                        ES256.from_cryptography_key(self.key.public_key()))
        auth_data = AuthenticatorData.create(self._rp_hash(public_key["rp"]["id"]), FLAGS.UP | FLAGS.UV | FLAGS.AT,
                                             self.counter, credential_data)
        attestation = AttestationObject.create("none", auth_data, {})
        raw_id = websafe_encode(self.credential_id)
        return {"id": raw_id, "rawId": raw_id, "type": "public-key", "authenticatorAttachment": "platform",
                "response": {"clientDataJSON": websafe_encode(client_data),
                             "attestationObject": websafe_encode(attestation), "transports": ["internal"]},
                "clientExtensionResults": {"credProps": {"rk": resident}}}

    def get(self, options: dict[str, Any], *, origin: str | None = None, rp_id: str | None = None) -> dict[str, Any]:
        public_key = options["publicKey"]
        allowed = [websafe_decode(c["id"]) for c in public_key.get("allowCredentials") or []]
        if allowed and self.credential_id not in allowed:
            raise LookupError("this authenticator holds none of the allowed credentials")
        if not allowed and self.user_handle is None:
            raise LookupError("no credential named, and this one is not discoverable")
        self.counter += 1
        client_data = CollectedClientData.create("webauthn.get", public_key["challenge"], origin or self.origin)
        flags = FLAGS.UP | FLAGS.UV if self.user_verified else FLAGS.UP
        auth_data = AuthenticatorData.create(self._rp_hash(rp_id or public_key["rpId"]), flags, self.counter)
        signature = self.key.sign(bytes(auth_data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
        raw_id = websafe_encode(self.credential_id)
        return {"id": raw_id, "rawId": raw_id, "type": "public-key", "authenticatorAttachment": "platform",
                "response": {"clientDataJSON": websafe_encode(client_data), "authenticatorData": websafe_encode(auth_data),
                             "signature": websafe_encode(signature), "userHandle": self.user_handle},
                "clientExtensionResults": {}}
