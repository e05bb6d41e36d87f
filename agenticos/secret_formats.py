"""What a secret of a structured kind must look like, checked when it is saved (created or rotated) so a wrong
paste is refused with a readable reason instead of failing every run that uses it. The messages name fields,
never a value.

`codex_chatgpt` — a Codex "Sign in with ChatGPT" login: the `auth.json` Codex writes in its CODEX_HOME after
`codex login` (the file, pasted whole). Codex reads `tokens.id_token` (a JWT whose claims carry the account and
plan), `tokens.access_token` (sent as the bearer), `tokens.refresh_token` (traded for new tokens when the access
token expires, after which Codex rewrites the file) and `tokens.account_id`; `last_refresh` says when it last did.
A file holding only `OPENAI_API_KEY` is an API-key login: that key is saved as an API key instead.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

CODEX_CHATGPT = "codex_chatgpt"
# sandboxd seeds a task's private home with files of at most this size (sandboxd/tasks.py HOME_FILE_CAP).
CODEX_LOGIN_MAX_BYTES = 64 * 1024


def _jwt_claims(token: str) -> dict[str, Any] | None:
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def codex_login_problem(value: str) -> str | None:
    """Why `value` is not a Codex ChatGPT sign-in (`auth.json`), or None."""
    if len(value.encode()) > CODEX_LOGIN_MAX_BYTES:
        return f"A Codex sign-in file is at most {CODEX_LOGIN_MAX_BYTES // 1024} KiB; this is larger."
    try:
        data = json.loads(value)
    except ValueError:
        return ("This is not JSON: paste the whole auth.json Codex wrote in its home folder (~/.codex/auth.json) "
                "after `codex login` with Sign in with ChatGPT.")
    if not isinstance(data, dict):
        return "auth.json is a JSON object with a \"tokens\" object in it."
    tokens = data.get("tokens")
    if tokens is None and data.get("OPENAI_API_KEY"):
        return ("This auth.json holds an API key, not a ChatGPT sign-in: save the key itself as an API key "
                "secret instead.")
    if not isinstance(tokens, dict):
        return "auth.json has no \"tokens\" object: sign in with ChatGPT (`codex login`) and paste the file again."
    missing = [name for name in ("id_token", "access_token", "refresh_token")
               if not isinstance(tokens.get(name), str) or not tokens[name].strip()]
    if missing:
        return f"auth.json's \"tokens\" lacks {', '.join(missing)}: sign in with ChatGPT again and paste the new file."
    if _jwt_claims(tokens["id_token"]) is None:
        return "auth.json's tokens.id_token is not a JSON Web Token (three dot-separated parts), as Codex needs."
    if "account_id" in tokens and tokens["account_id"] is not None and not isinstance(tokens["account_id"], str):
        return "auth.json's tokens.account_id must be text."
    if "last_refresh" in data and data["last_refresh"] is not None and not isinstance(data["last_refresh"], str):
        return "auth.json's last_refresh must be a date written as text."
    return None


def problem(kind: str, value: str) -> str | None:
    """Why `value` cannot be a secret of `kind`, or None (kinds without a structure take any text)."""
    if kind == CODEX_CHATGPT:
        return codex_login_problem(value)
    return None
