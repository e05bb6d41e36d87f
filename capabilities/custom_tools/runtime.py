"""Make one custom tool call: AI-visible args + fixed values → request, credential injected by its family.

The secret is revealed by the caller and handed in; it goes into a header, a query parameter or a
signature and nowhere else. Every text that leaves this module (results, error messages, previews) is
passed through `redact`, which removes the secret and any token derived from it, so a provider that
echoes a header back cannot put the credential in the model's context, the transcript or a log.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlparse, urlunparse

import httpx2
import jwt

from agenticos import netguard
from agenticos.strings import digits_only
from capabilities.custom_tools.schema import Definition, Param, arg_name

MAX_RESPONSE_BYTES = 5 * 1024 * 1024
PREVIEW_CHARS = 2000
REDACTED = "[credential hidden]"

Kind = Literal["ok", "retry", "transient", "refuse", "bad_news"]


@dataclass
class Prepared:
    method: str
    url: str  # the full URL sent (may carry a query credential: never shown)
    display_url: str  # the URL without any credential
    headers: dict[str, str]
    content: bytes | None
    secrets: list[str] = field(default_factory=list)  # everything to redact


@dataclass
class Outcome:
    kind: Kind
    message: str = ""
    status: int | None = None
    body: Any = None  # parsed JSON, or text
    content_type: str = ""

    def for_model(self) -> Any:
        if self.kind == "ok":
            return {"status": self.status, "body": self.body}
        return self.message


def _set_nested(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value


def _coerce(param: Param, value: Any) -> Any:
    if param.type == "integer" and isinstance(value, str) and digits_only(value.lstrip("-")):
        return int(value)
    if param.type == "number" and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def missing_args(definition: Definition, args: dict[str, Any]) -> list[str]:
    return [arg_name(p) for p in definition.ai_params() if p.required and args.get(arg_name(p)) in (None, "")]


def unknown_args(definition: Definition, args: dict[str, Any]) -> list[str]:
    known = {arg_name(p) for p in definition.ai_params()}
    return sorted(k for k in args if k not in known)


def prepare(definition: Definition, args: dict[str, Any], secret: str | None, *, now: float | None = None) -> Prepared:
    path_values: dict[str, str] = {}
    query: list[tuple[str, Any]] = []
    headers: dict[str, str] = {"Accept": "application/json"}
    body: dict[str, Any] = {}
    for param in definition.parameters:
        value = param.value if param.mode == "fixed" else args.get(arg_name(param))
        if value is None:
            continue
        value = _coerce(param, value)
        if param.location == "path":
            path_values[param.name] = quote(str(value), safe="")
        elif param.location == "query":
            if isinstance(value, list):
                query.extend((param.name, v) for v in value)
            else:
                query.append((param.name, str(value).lower() if isinstance(value, bool) else value))
        elif param.location == "header":
            headers[param.name] = str(value)
        else:
            _set_nested(body, param.name, value)
    url = definition.url
    for name, value in path_values.items():
        url = url.replace("{" + name + "}", value)
    display_query = list(query)
    secrets: list[str] = []
    auth = definition.auth
    if auth.family != "none" and secret:
        secrets.append(secret)
        if auth.family == "query":
            query.append((auth.query_name, secret))
    content = json.dumps(body, separators=(",", ":"), sort_keys=True).encode() if body else None
    if content is not None:
        headers["Content-Type"] = "application/json"
    full_url = _with_query(url, query)
    display_url = _with_query(url, display_query)
    if auth.family != "none" and secret:
        if auth.family == "header":
            headers[auth.header_name] = f"{auth.prefix}{secret}"
        elif auth.family == "hmac":
            stamp = str(int(now if now is not None else time.time()))
            signature = sign(secret, stamp, definition.method, full_url, content or b"")
            headers[auth.timestamp_header] = stamp
            headers[auth.signature_header] = signature
            secrets.append(signature)
        elif auth.family == "jwt":
            issued = int(now if now is not None else time.time())
            claims = {**auth.jwt_claims, "iat": issued, "exp": issued + auth.jwt_ttl_secs}
            token = jwt.encode(claims, secret, algorithm=auth.jwt_algorithm)
            headers[auth.header_name] = f"{auth.prefix}{token}"
            secrets.append(token)
    return Prepared(method=definition.method, url=full_url, display_url=display_url, headers=headers,
                    content=content, secrets=secrets)


def _with_query(url: str, query: list[tuple[str, Any]]) -> str:
    if not query:
        return url
    parsed = urlparse(url)
    extra = urlencode(query, doseq=True)
    return urlunparse(parsed._replace(query=f"{parsed.query}&{extra}" if parsed.query else extra))


def sign(secret: str, stamp: str, method: str, url: str, content: bytes) -> str:
    """HMAC-SHA256 over `timestamp \\n METHOD \\n path?query \\n body`, hex. The documented signed-token family."""
    parsed = urlparse(url)
    target = parsed.path or "/"
    if parsed.query:
        target += "?" + parsed.query
    message = f"{stamp}\n{method.upper()}\n{target}\n".encode() + content
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def redact(text: str, secrets: list[str]) -> str:
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, REDACTED)
            quoted = quote(value, safe="")
            if quoted != value:
                text = text.replace(quoted, REDACTED)
    return text


def _redact_value(value: Any, secrets: list[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redact_value(v, secrets) for v in value]
    if isinstance(value, dict):
        return {redact(str(k), secrets): _redact_value(v, secrets) for k, v in value.items()}
    return value


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…[{len(text) - limit} more characters]"


async def invoke(definition: Definition, args: dict[str, Any], secret: str | None) -> Outcome:
    """Send the call; classify what came back (see capabilities.failures for what each kind means)."""
    missing = missing_args(definition, args)
    if missing:
        return Outcome("retry", f"Missing required argument(s): {', '.join(missing)}.")
    unknown = unknown_args(definition, args)
    if unknown:
        known = ", ".join(arg_name(p) for p in definition.ai_params()) or "none"
        return Outcome("retry", f"Unknown argument(s): {', '.join(unknown)}. This tool takes: {known}.")
    if definition.auth.family != "none" and not secret:
        return Outcome("refuse", "This tool has no credential configured; someone who edits tools must add one.")
    prepared = prepare(definition, args, secret)
    try:
        fetched = await netguard.safe_request(
            prepared.method,
            prepared.url,
            headers=prepared.headers,
            content=prepared.content,
            timeout=definition.timeout_secs,
            max_bytes=MAX_RESPONSE_BYTES,
            sensitive_headers=frozenset(
                {definition.auth.header_name.lower(), definition.auth.signature_header.lower()}
            ),
        )
    except netguard.TooLarge:
        return Outcome("bad_news", f"The response from {prepared.display_url} was larger than "
                                   f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MB and was not read.")
    except netguard.Refused as exc:
        return Outcome("refuse", redact(str(exc), prepared.secrets))
    except httpx2.TimeoutException:
        return Outcome("transient", f"{definition.method} {prepared.display_url} did not answer within "
                                    f"{definition.timeout_secs:g} seconds.")
    except httpx2.RequestError as exc:  # connection refused, TLS, reset: never the message (it may hold the URL)
        return Outcome("transient", f"{definition.method} {prepared.display_url} could not be reached "
                                    f"({type(exc).__name__}).")
    text = redact(fetched.text(), prepared.secrets)
    body: Any = text
    ctype = fetched.media_type
    if ctype.endswith("json") or ctype.endswith("+json"):
        try:
            body = _redact_value(json.loads(fetched.content), prepared.secrets)
        except ValueError:
            if fetched.ok:
                return Outcome("bad_news", "The service said it returned JSON but the body is not valid JSON. "
                                           f"The start of what arrived:\n{preview(text, 500)}",
                               status=fetched.status, body=text, content_type=ctype)
    status = fetched.status
    if fetched.ok:
        return Outcome("ok", status=status, body=body, content_type=ctype)
    excerpt = preview(body, 800)
    if status in (401, 403):
        return Outcome("refuse", f"The service refused the credential (HTTP {status}). {excerpt}", status=status,
                       body=body)
    if status == 429 or status >= 500:
        return Outcome("transient", f"The service answered HTTP {status}. {excerpt}", status=status, body=body)
    if status in (400, 404, 405, 409, 422):
        return Outcome("retry", f"The service rejected the request with HTTP {status}: {excerpt} "
                                "Check the arguments against the tool's description and call again.",
                       status=status, body=body)
    return Outcome("bad_news", f"The service answered HTTP {status}. {excerpt}", status=status, body=body)
