"""allauth's outbound HTTP (discovery, token, JWKS, userinfo) through the project's outbound guard.

allauth speaks `requests` (`SocialAccountAdapter.get_requests_session`); the guard is an httpx transport that
checks and pins the resolved address of every request (`netguard.PinnedSyncTransport`). This session keeps the
small part of `requests.Session` allauth uses (`get`, `post`, `request`, the context manager) and answers with
`requests.Response` objects built from the guarded client's, so an issuer's URL that resolves to a private or
metadata address is refused at each hop, whatever DNS answers later. Written by hand because neither library
bridges to the other; the whole bridge is this file.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.auth import HTTPBasicAuth
from requests.structures import CaseInsensitiveDict

from agenticos import netguard

# The operator's list of IdP hosts that may be on internal addresses (a Keycloak inside the company network).
SSO_HOSTS = "SSO_ALLOWED_PRIVATE_HOSTS"
TIMEOUT_SECONDS = 10
MAX_BYTES = 1024 * 1024  # discovery documents, JWKS and token answers are a few kB


class GuardedSession(requests.Session):
    def request(self, method: str | bytes, url: str | bytes, params: Any = None, data: Any = None,
                headers: Any = None, cookies: Any = None, files: Any = None, auth: Any = None,
                timeout: Any = None, allow_redirects: bool = True, proxies: Any = None, hooks: Any = None,
                stream: Any = None, verify: Any = None, cert: Any = None, json: Any = None) -> requests.Response:
        if isinstance(auth, HTTPBasicAuth):
            auth = (auth.username, auth.password)
        method_text = method.decode() if isinstance(method, bytes) else method
        url_text = url.decode() if isinstance(url, bytes) else url
        with netguard.pinned_sync_client(allowance=SSO_HOSTS, home=url_text, timeout=TIMEOUT_SECONDS,
                                         follow_redirects=False) as client:
            try:
                answer = client.request(method_text, url_text, params=params, data=data, json=json,
                                        headers=headers, auth=auth)
            except netguard.Refused as exc:
                raise requests.ConnectionError(f"The identity provider's address is refused: {exc}") from None
            except Exception as exc:  # httpx's transport errors: the same class allauth already handles
                if netguard.refusal_in(exc) is not None:
                    raise requests.ConnectionError("The identity provider's address is refused.") from None
                raise requests.ConnectionError(f"The identity provider could not be reached ({type(exc).__name__}).") from None
            content = answer.read()
        if len(content) > MAX_BYTES:
            raise requests.ConnectionError("The identity provider's answer is too large.")
        response = requests.Response()
        response.status_code = answer.status_code
        response._content = content
        response.headers = CaseInsensitiveDict(dict(answer.headers.items()))
        response.url = url_text
        response.reason = answer.reason_phrase
        response.encoding = answer.encoding
        return response
