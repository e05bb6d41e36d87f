"""Who is calling sandboxd: the service token (the operator: every workspace), or a tenant token derived
from it for one organization, which reaches only that organization's workspaces.

A tenant token is `sbx1.<tenant>.<HMAC-SHA256(service token, tenant)>`. The platform seals an
organization's derived token in that organization's vault, never the service token: whatever the
organization's own people do with their secret (bind it to a custom tool that sends it somewhere), it opens
only their own workspaces. sandboxd needs no table of tenants to check one.
"""

from __future__ import annotations

import hashlib
import hmac
import re

PREFIX = "sbx1"
TENANT_PATTERN = re.compile(r"^[a-z0-9]{1,40}$")


def derive(service_token: str, tenant: str) -> str:
    if not TENANT_PATTERN.match(tenant):
        raise ValueError("a tenant is 1-40 lowercase letters or digits")
    mac = hmac.new(service_token.encode(), f"sandboxd-tenant:{tenant}".encode(), hashlib.sha256).hexdigest()
    return f"{PREFIX}.{tenant}.{mac}"


def principal(service_token: str, presented: str) -> str | None:
    """"" for the service token, the tenant for a valid tenant token, None for anything else."""
    if hmac.compare_digest(presented.encode(), service_token.encode()):
        return ""
    parts = presented.split(".")
    if len(parts) != 3 or parts[0] != PREFIX or not TENANT_PATTERN.match(parts[1]):
        return None
    if hmac.compare_digest(presented.encode(), derive(service_token, parts[1]).encode()):
        return parts[1]
    return None
