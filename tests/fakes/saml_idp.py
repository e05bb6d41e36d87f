"""A local SAML 2.0 identity provider (stdlib ThreadingHTTPServer in a thread) speaking the real protocol: IdP
metadata with its signing certificate, the HTTP-Redirect binding for the AuthnRequest (deflated, base64, in the
query), and the HTTP-POST binding for the answer — an HTML form carrying a Response whose Assertion and Response are
both XML-signed (RSA-SHA256, exclusive c14n) with a key and self-signed certificate made at start-up
(`cryptography`; the signature itself is xmlsec's, through python3-saml's signing helper).

A test sets who signs in next (`idp.person = {"email": ..., "groups": [...]}`) and, to attack, how the next answer
is bent: `idp.bend = {"unsigned": True, "tamper": True, "audience": "...", "expired": True, "foreign_key": True}`.
The AuthnRequests it received are in `idp.authn_requests` (their parsed fields); every request in `idp.requests`.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import re
import secrets
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse
from xml.etree import ElementTree

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from onelogin.saml2.constants import OneLogin_Saml2_Constants as C
from onelogin.saml2.utils import OneLogin_Saml2_Utils

from tests.fakes.ports import listening_socket

NS = {"samlp": "urn:oasis:names:tc:SAML:2.0:protocol", "saml": "urn:oasis:names:tc:SAML:2.0:assertion"}


def key_and_cert(name: str) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30)).sign(key, hashes.SHA256()))
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode(),
            cert.public_bytes(serialization.Encoding.PEM).decode())


def _instant(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cert_body(pem: str) -> str:
    return "".join(line for line in pem.strip().splitlines() if "-----" not in line)


@dataclass
class SamlIdp:
    name: str = "idp"
    person: dict[str, Any] = field(default_factory=lambda: {"email": "ada@acme.com", "groups": []})
    bend: dict[str, Any] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    authn_requests: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key, self.cert = key_and_cert(f"{self.name} signing")
        self.foreign_key, self.foreign_cert = key_and_cert("someone else")
        self.server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SamlIdp:
        sock = listening_socket()
        self.port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.entity_id = f"{self.base}/metadata"
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self), bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.daemon_threads = True
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ------------------------------------------------------------------ the protocol
    def metadata(self) -> str:
        return (
            f'<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="{self.entity_id}">'
            '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" '
            'WantAuthnRequestsSigned="false">'
            '<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">'
            f"<ds:X509Data><ds:X509Certificate>{_cert_body(self.cert)}</ds:X509Certificate></ds:X509Data>"
            "</ds:KeyInfo></md:KeyDescriptor>"
            "<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>"
            f'<md:SingleSignOnService Binding="{C.BINDING_HTTP_REDIRECT}" Location="{self.base}/sso"/>'
            "</md:IDPSSODescriptor></md:EntityDescriptor>"
        )

    @staticmethod
    def decode_authn_request(query: dict[str, str]) -> dict[str, str]:
        """HTTP-Redirect binding: base64 of the raw-DEFLATEd AuthnRequest."""
        xml = zlib.decompress(base64.b64decode(query["SAMLRequest"]), -15)
        root = ElementTree.fromstring(xml)  # noqa: S314 (our own SP's request, in a test)
        issuer = root.find("saml:Issuer", NS)
        return {"id": root.get("ID", ""), "acs": root.get("AssertionConsumerServiceURL", ""),
                "issuer": issuer.text or "" if issuer is not None else "", "relay_state": query.get("RelayState", ""),
                "signed": "Signature" in query}

    def response_xml(self, request: dict[str, str]) -> str:
        now = dt.datetime.now(dt.UTC)
        until = now - dt.timedelta(minutes=10) if self.bend.get("expired") else now + dt.timedelta(minutes=5)
        audience = self.bend.get("audience", request["issuer"])
        email = html.escape(self.person["email"])
        assertion_id, response_id = f"_a{secrets.token_hex(16)}", f"_r{secrets.token_hex(16)}"
        groups = "".join(f"<saml:AttributeValue>{html.escape(g)}</saml:AttributeValue>"
                         for g in self.person.get("groups") or [])
        assertion = (
            f'<saml:Assertion xmlns:saml="{NS["saml"]}" ID="{assertion_id}" Version="2.0" '
            f'IssueInstant="{_instant(now)}">'
            f"<saml:Issuer>{self.entity_id}</saml:Issuer>"
            "<saml:Subject>"
            f'<saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">{email}</saml:NameID>'
            '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">'
            f'<saml:SubjectConfirmationData NotOnOrAfter="{_instant(until)}" Recipient="{request["acs"]}" '
            f'InResponseTo="{request["id"]}"/></saml:SubjectConfirmation></saml:Subject>'
            f'<saml:Conditions NotBefore="{_instant(now - dt.timedelta(minutes=15))}" '
            f'NotOnOrAfter="{_instant(until)}">'
            f"<saml:AudienceRestriction><saml:Audience>{html.escape(audience)}</saml:Audience>"
            "</saml:AudienceRestriction></saml:Conditions>"
            f'<saml:AuthnStatement AuthnInstant="{_instant(now)}" SessionIndex="_s{secrets.token_hex(8)}">'
            "<saml:AuthnContext><saml:AuthnContextClassRef>"
            "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
            "</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>"
            "<saml:AttributeStatement>"
            f'<saml:Attribute Name="email"><saml:AttributeValue>{email}</saml:AttributeValue></saml:Attribute>'
            + (f'<saml:Attribute Name="groups">{groups}</saml:Attribute>' if groups else "")
            + "</saml:AttributeStatement></saml:Assertion>"
        )
        key, cert = (self.foreign_key, self.foreign_cert) if self.bend.get("foreign_key") else (self.key, self.cert)
        if not self.bend.get("unsigned"):
            assertion = self._sign(assertion, key, cert)
        response = (
            f'<samlp:Response xmlns:samlp="{NS["samlp"]}" xmlns:saml="{NS["saml"]}" ID="{response_id}" '
            f'Version="2.0" IssueInstant="{_instant(now)}" Destination="{request["acs"]}" '
            f'InResponseTo="{request["id"]}">'
            f"<saml:Issuer>{self.entity_id}</saml:Issuer>"
            f'<samlp:Status><samlp:StatusCode Value="{C.STATUS_SUCCESS}"/></samlp:Status>'
            f"{assertion}</samlp:Response>"
        )
        if not self.bend.get("unsigned"):
            response = self._sign(response, key, cert)
        if self.bend.get("tamper"):
            # After signing: the signed e-mail is swapped for another one, so the digests no longer match.
            response = response.replace(email, "mallory@acme.com")
        return response

    @staticmethod
    def _sign(xml: str, key: str, cert: str) -> str:
        signed = OneLogin_Saml2_Utils.add_sign(xml, key, cert, sign_algorithm=C.RSA_SHA256,
                                               digest_algorithm=C.SHA256)
        text = signed.decode() if isinstance(signed, bytes) else str(signed)
        return re.sub(r"^<\?xml[^>]*\?>\s*", "", text)

    def answer(self, query: dict[str, str]) -> str:
        """The HTTP-POST binding: an auto-submitting form to the SP's ACS URL."""
        request = self.decode_authn_request(query)
        self.authn_requests.append(request)
        encoded = base64.b64encode(self.response_xml(request).encode()).decode()
        return (
            f'<html><body onload="document.forms[0].submit()"><form method="post" action="{html.escape(request["acs"])}">'
            f'<input type="hidden" name="SAMLResponse" value="{encoded}"/>'
            f'<input type="hidden" name="RelayState" value="{html.escape(request["relay_state"])}"/>'
            '<input type="submit" value="Continue"/></form></body></html>'
        )


def _handler(idp: SamlIdp):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            pass

        def _send(self, status: int, body: str, ctype: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlparse(self.path)
            idp.requests.append(("GET", parts.path))
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/metadata":
                self._send(200, idp.metadata(), "application/samlmetadata+xml")
            elif parts.path == "/sso" and "SAMLRequest" in query:
                self._send(200, idp.answer(query), "text/html")
            else:
                self._send(404, "not found", "text/plain")

    return Handler


def form_fields(page: str) -> tuple[str, dict[str, str]]:
    """The action and hidden inputs of the IdP's HTTP-POST form (what a browser would submit)."""
    action = html.unescape(re.search(r'action="([^"]*)"', page).group(1))  # type: ignore[union-attr]
    fields = {html.unescape(n): html.unescape(v)
              for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)}
    return action, fields
