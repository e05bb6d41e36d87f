"""Slack request signatures (v0): HMAC-SHA256 of "v0:{timestamp}:{body}" with the signing secret.

slack-sdk's SignatureVerifier does exactly this (constant-time compare, 5-minute window).
"""

from __future__ import annotations

import time

from slack_sdk.signature import SignatureVerifier

MAX_SKEW_SECONDS = 5 * 60


def is_valid(signing_secret: str, body: bytes, timestamp: str | None, signature: str | None) -> bool:
    if not signing_secret or not timestamp or not signature:
        return False
    try:
        ts = int(timestamp)
    except ValueError:
        return False
    if abs(time.time() - ts) > MAX_SKEW_SECONDS:
        return False
    verifier = SignatureVerifier(signing_secret)
    return verifier.is_valid(body=body, timestamp=timestamp, signature=signature)


def sign(signing_secret: str, body: bytes, timestamp: str) -> str:
    """What Slack sends in X-Slack-Signature (the tests and the bench play Slack with it)."""
    return SignatureVerifier(signing_secret).generate_signature(timestamp=timestamp, body=body) or ""
