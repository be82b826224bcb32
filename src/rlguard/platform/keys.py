"""API keys and job tokens: random secrets shown once, stored only as their SHA-256.

A key is 32 random bytes (URL-safe base64) behind a prefix that says what it is (`rlg_` for API
keys, `rlj_` for job tokens). Such a secret has 256 bits of entropy, so a fast hash is the right
store (as GitHub and Stripe do for tokens): no dictionary attack applies, and a lookup by hash is
one indexed query. The visible prefix (the first characters) lets a person tell keys apart.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

API_KEY_PREFIX = "rlg_"
JOB_TOKEN_PREFIX = "rlj_"
VISIBLE_CHARS = 12


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def visible_prefix(secret: str) -> str:
    return secret[:VISIBLE_CHARS]


def same_digest(secret: str, stored: str) -> bool:
    return hmac.compare_digest(digest(secret), stored)


def new_id(kind: str) -> str:
    """A resource id in OpenAI's style (`ftjob-...`): the kind, a dash, 24 random characters."""
    return f"{kind}-{secrets.token_hex(12)}"
