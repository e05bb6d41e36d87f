"""SAML 2.0 sign-in through allauth's `saml` provider (python3-saml underneath): what an organization's connection
needs on top of it.

allauth and python3-saml do the protocol — the HTTP-Redirect AuthnRequest, the HTTP-POST Response, the XML
signature, audience, destination, recipient, validity window and InResponseTo (allauth matches it with the state it
stashed). Added here, each for a reason allauth leaves open:

- the IdP's metadata is read once, when the owner saves it, through the project's outbound guard, and the parsed
  entity id, SSO URL and certificate are kept in the row: allauth's `metadata_url` setting fetches with urllib at
  sign-in time, past the guard;
- each organization has its own service-provider key pair (its private key sealed with the vault), so its
  AuthnRequests are signed and an IdP that checks them can;
- assertions must be signed (`want_assertion_signed`), whatever the Response says.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.saml import views as saml_views
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from django.http import Http404, HttpRequest, HttpResponse
from onelogin.saml2.idp_metadata_parser import OneLogin_Saml2_IdPMetadataParser
from onelogin.saml2.utils import OneLogin_Saml2_Utils

PROVIDER = "saml"
MAX_METADATA_BYTES = 512 * 1024

# Where the IdP's attributes are read from, beyond allauth's defaults: Entra ID, Okta, Google Workspace and
# Keycloak name the e-mail differently.
ATTRIBUTE_MAPPING: dict[str, list[str]] = {
    "uid": ["urn:oasis:names:tc:SAML:attribute:subject-id"],
    "email": ["urn:oid:0.9.2342.19200300.100.1.3",
              "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress", "email", "mail"],
    "first_name": ["http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname", "urn:oid:2.5.4.42",
                   "firstName", "givenName"],
    "last_name": ["http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname", "urn:oid:2.5.4.4",
                  "lastName", "sn"],
}


class MetadataProblem(ValueError):
    """The IdP's metadata cannot be used (the message says why, for the owner)."""


def parse_metadata(xml: str | bytes) -> dict[str, str]:
    """The IdP's entity id, HTTP-Redirect SSO URL and signing certificate from its metadata (python3-saml's parser:
    no DTDs, no entities)."""
    try:
        found = OneLogin_Saml2_IdPMetadataParser.parse(xml)
    except Exception as exc:  # lxml's and the parser's errors alike: the owner sees that it is not metadata
        raise MetadataProblem(f"That is not SAML metadata ({type(exc).__name__}).") from None
    idp = found.get("idp") or {}
    entity_id = str(idp.get("entityId") or "")
    sso_url = str((idp.get("singleSignOnService") or {}).get("url") or "")
    cert = str(idp.get("x509cert") or "")
    if not cert:
        certs = (idp.get("x509certMulti") or {}).get("signing") or []
        cert = str(certs[0]) if certs else ""
    if not entity_id or not sso_url.startswith(("https://", "http://")) or not cert:
        raise MetadataProblem("The metadata lacks an IdP entity id, an HTTP-Redirect sign-in URL or a signing "
                              "certificate.")
    try:
        x509.load_pem_x509_certificate(OneLogin_Saml2_Utils.format_cert(cert).encode())
    except ValueError:
        raise MetadataProblem("The metadata's signing certificate cannot be read.") from None
    return {"entity_id": entity_id, "sso_url": sso_url, "cert": cert}


def new_sp_key_pair(common_name: str) -> tuple[str, str]:
    """A service-provider key and a self-signed certificate for it (PEM): SAML trusts the certificate pinned in
    metadata, not a CA."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64] or "agenticos")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=3650)).sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return key_pem, cert.public_bytes(serialization.Encoding.PEM).decode()


def app_settings(*, entity_id: str, sso_url: str, idp_cert: str, sp_cert: str, sp_key: str,
                 verified_email: list[str]) -> dict[str, Any]:
    """The `settings` of allauth's SAML `SocialApp` (allauth.socialaccount.providers.saml.utils)."""
    return {
        "idp": {"entity_id": entity_id, "sso_url": sso_url, "x509cert": idp_cert},
        "attribute_mapping": ATTRIBUTE_MAPPING,
        "verified_email": verified_email,
        "advanced": {
            "strict": True,
            "want_assertion_signed": True,
            "authn_request_signed": bool(sp_key),
            "x509cert": sp_cert,
            "private_key": sp_key,
            "reject_idp_initiated_sso": True,  # only answers to our own AuthnRequests (InResponseTo + state)
            "reject_deprecated_algorithm": True,
        },
    }


def login(request: HttpRequest, slug: str) -> HttpResponse:
    """allauth's SAML login view (the AuthnRequest, HTTP-Redirect to the IdP) for the organization's slug."""
    try:
        return saml_views.login(request, organization_slug=slug)
    except SocialApp.DoesNotExist:
        raise Http404 from None
