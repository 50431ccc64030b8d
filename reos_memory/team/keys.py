"""API keys of the team server: `rmk_<key_id>_<secret>`, shown once, stored as a hash.

The secret is `secrets.token_urlsafe(32)`: 256 random bits. Its hash is SHA-256 (of the key id
and the secret together, so a stored hash cannot be moved to another key id). A slow password
hash (scrypt, argon2) exists to make guessing a low-entropy password expensive; a 256-bit random
secret cannot be guessed at any speed, and SHA-256 keeps verification at microseconds on every
request where scrypt would cost tens of milliseconds and memory per call. Hashes are compared
with `hmac.compare_digest`, and an unknown key id is compared against a dummy hash, so the time
taken says nothing about which part of a presented key was wrong."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import Literal

import msgspec
import psycopg

from reos_memory.errors import ReosError
from reos_memory.store.team import connection as pg
from reos_memory.store.team import tenancy

PREFIX = "rmk"
ROLES = ("reader", "writer", "admin")
Role = Literal["reader", "writer", "admin"]
_KEY = re.compile(r"^rmk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()


class KeyRefused(ReosError):
    """A presented key is not a valid, live key; `reason` says why (for logs, not for clients:
    a client is told only that the key was refused)."""

    def __init__(
        self,
        why: Literal["malformed", "unknown", "mismatch", "revoked", "expired"],
        row: tenancy.ApiKeyRow | None = None,
    ):
        super().__init__(f"API key refused ({why})", why=why)
        self.why = why
        self.row = row  # the stored key it names, when there is one (its org audits the attempt)


class NewKey(msgspec.Struct, frozen=True):
    """A key as created: `key` is the only copy of the secret, shown once."""

    key_id: str
    key: str
    prefix: str


class VerifiedKey(msgspec.Struct, frozen=True):
    """What a valid key grants: the tenant comes from here, never from a request body."""

    key_id: str
    org_id: str
    team_id: str | None
    role: Role
    name: str
    member_id: str | None = None  # the member the key belongs to


def new_key() -> NewKey:
    """A fresh key id and secret."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return NewKey(key_id=key_id, key=f"{PREFIX}_{key_id}_{secret}", prefix=f"{PREFIX}_{key_id}")


def hash_secret(key_id: str, secret: str) -> str:
    """The stored form of a key's secret (see the module docstring for why SHA-256)."""
    return hashlib.sha256(f"{key_id}:{secret}".encode()).hexdigest()


def parse_key(presented: str) -> tuple[str, str]:
    """(key_id, secret) of a key of the right shape, else KeyRefused('malformed')."""
    m = _KEY.match(presented.strip())
    if not m:
        raise KeyRefused("malformed")
    return m.group(1), m.group(2)


def check_key(
    row: tenancy.ApiKeyRow | None, key_id: str, secret: str, now: datetime
) -> VerifiedKey:
    """The grant of a stored key, if `secret` is its secret and it is neither revoked nor
    expired at `now`; else KeyRefused. The hash comparison runs whether or not the key exists."""
    stored = row.hash if row is not None else _DUMMY_HASH
    matches = hmac.compare_digest(stored, hash_secret(key_id, secret))
    if row is None:
        raise KeyRefused("unknown")
    if not matches:
        raise KeyRefused("mismatch", row)
    if row.revoked_at is not None and row.revoked_at <= now:
        raise KeyRefused("revoked", row)
    if row.expires_at is not None and row.expires_at <= now:
        raise KeyRefused("expired", row)
    role: Role = row.role  # type: ignore[assignment]  # the table's CHECK holds it to ROLES
    return VerifiedKey(
        key_id=row.key_id, org_id=row.org_id, team_id=row.team_id, role=role, name=row.name,
        member_id=row.member_id,
    )  # fmt: skip


def verify_key(
    conn: psycopg.Connection,
    presented: str,
    now: datetime | None = None,
    timeouts: pg.Timeouts | None = None,
) -> VerifiedKey:
    """Authenticate a presented key as the server does: as the server role, which may read only
    the row of the key id it presents (row-level security), then the checks of `check_key`."""
    key_id, secret = parse_key(presented)
    with pg.key_lookup_transaction(conn, key_id, timeouts):
        row = tenancy.get_key(conn, key_id)
    return check_key(row, key_id, secret, now or datetime.now(UTC))


def expiry(days: float | None, now: datetime | None = None) -> datetime | None:
    """When a key made now for `days` days expires (None: never)."""
    if days is None:
        return None
    return (now or datetime.now(UTC)) + timedelta(days=days)
