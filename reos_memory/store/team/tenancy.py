"""SQL of orgs, teams, API keys and the audit log. Functions take a psycopg connection already
inside the transaction the caller opened, and return typed rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
import psycopg
from psycopg.errors import UniqueViolation
from psycopg.types.json import Jsonb


class Org(msgspec.Struct, frozen=True):
    id: str
    name: str
    created_at: datetime


class Team(msgspec.Struct, frozen=True):
    org_id: str
    id: str
    name: str
    created_at: datetime


class ApiKeyRow(msgspec.Struct, frozen=True):
    """A stored key: never the key itself; `hash` stays inside the team package."""

    org_id: str
    key_id: str
    team_id: str | None
    role: str
    name: str
    hash: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    member_id: str | None = None
    made_by: str | None = None  # the key that made it (team/keys/create); None: the command line


class Duplicate(Exception):
    """An insert met a unique constraint (the caller says what was duplicated)."""


_KEY_COLUMNS = (
    "org_id, key_id, team_id, role, name, hash, prefix, created_at, expires_at, revoked_at,"
    " member_id, made_by"
)


def insert_org(conn: psycopg.Connection, org_id: str, name: str) -> Org:
    try:
        with conn.transaction():  # a savepoint: the caller's transaction survives a duplicate
            row = conn.execute(
                "INSERT INTO orgs (id, name) VALUES (%s, %s) RETURNING id, name, created_at",
                (org_id, name),
            ).fetchone()
    except UniqueViolation as exc:
        raise Duplicate(name) from exc
    assert row is not None
    return Org(*row)


def find_org(conn: psycopg.Connection, name_or_id: str) -> Org | None:
    """The org named `name_or_id`, else the one with that id."""
    row = conn.execute(
        "SELECT id, name, created_at FROM orgs WHERE name = %s OR id = %s"
        " ORDER BY (name = %s) DESC LIMIT 1",
        (name_or_id, name_or_id, name_or_id),
    ).fetchone()
    return Org(*row) if row else None


def insert_team(conn: psycopg.Connection, org_id: str, team_id: str, name: str) -> Team:
    try:
        with conn.transaction():
            row = conn.execute(
                "INSERT INTO teams (org_id, id, name) VALUES (%s, %s, %s)"
                " RETURNING org_id, id, name, created_at",
                (org_id, team_id, name),
            ).fetchone()
    except UniqueViolation as exc:
        raise Duplicate(name) from exc
    assert row is not None
    return Team(*row)


def find_team(conn: psycopg.Connection, org_id: str, name_or_id: str) -> Team | None:
    """The team of `org_id` named `name_or_id`, else the one with that id."""
    row = conn.execute(
        "SELECT org_id, id, name, created_at FROM teams WHERE org_id = %s"
        " AND (name = %s OR id = %s) ORDER BY (name = %s) DESC LIMIT 1",
        (org_id, name_or_id, name_or_id, name_or_id),
    ).fetchone()
    return Team(*row) if row else None


def insert_key(
    conn: psycopg.Connection,
    *,
    org_id: str,
    key_id: str,
    team_id: str | None,
    role: str,
    name: str,
    hash: str,
    prefix: str,
    expires_at: datetime | None,
    member_id: str | None = None,
    made_by: str | None = None,
) -> ApiKeyRow:
    row = conn.execute(
        "INSERT INTO api_keys"
        " (org_id, key_id, team_id, role, name, hash, prefix, expires_at, member_id, made_by)"
        f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {_KEY_COLUMNS}",
        (org_id, key_id, team_id, role, name, hash, prefix, expires_at, member_id, made_by),
    ).fetchone()
    assert row is not None
    return ApiKeyRow(*row)


def get_key(conn: psycopg.Connection, key_id: str) -> ApiKeyRow | None:
    """The key `key_id` (as the server role: only if the transaction's policies let it see it)."""
    row = conn.execute(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)
    ).fetchone()
    return ApiKeyRow(*row) if row else None


def list_keys(conn: psycopg.Connection, org_id: str) -> list[ApiKeyRow]:
    """The keys of an org, oldest first (revoked and expired ones included)."""
    rows = conn.execute(
        f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE org_id = %s ORDER BY created_at, key_id",
        (org_id,),
    ).fetchall()
    return [ApiKeyRow(*r) for r in rows]


def revoke_key(conn: psycopg.Connection, key_id: str) -> datetime | None:
    """Mark the key revoked now unless it already is; the revocation time, None if unchanged."""
    row = conn.execute(
        "UPDATE api_keys SET revoked_at = now() WHERE key_id = %s AND revoked_at IS NULL"
        " RETURNING revoked_at",
        (key_id,),
    ).fetchone()
    return row[0] if row else None


def revoke_made_by(conn: psycopg.Connection, org_id: str, key_id: str) -> list[ApiKeyRow]:
    """Revoke now every live key `key_id` made, and what those made, all the way down; the keys
    revoked."""
    rows = conn.execute(
        "WITH RECURSIVE made AS ("
        " SELECT key_id FROM api_keys WHERE org_id = %s AND made_by = %s"
        " UNION SELECT k.key_id FROM api_keys k JOIN made m ON k.made_by = m.key_id"
        " WHERE k.org_id = %s)"
        " UPDATE api_keys SET revoked_at = now() WHERE org_id = %s AND revoked_at IS NULL"
        f" AND key_id IN (SELECT key_id FROM made) RETURNING {_KEY_COLUMNS}",
        (org_id, key_id, org_id, org_id),
    ).fetchall()
    return sorted((ApiKeyRow(*r) for r in rows), key=lambda r: r.key_id)


def revoke_member_keys(conn: psycopg.Connection, org_id: str, member_id: str) -> list[str]:
    """Revoke now every live key of a member; the ids of the keys revoked."""
    rows = conn.execute(
        "UPDATE api_keys SET revoked_at = now() WHERE org_id = %s AND member_id = %s"
        " AND revoked_at IS NULL RETURNING key_id",
        (org_id, member_id),
    ).fetchall()
    return sorted(r[0] for r in rows)


def append_audit(
    conn: psycopg.Connection,
    *,
    org_id: str,
    key_id: str | None,
    actor: str,
    request_id: str | None,
    method: str,
    target_ids: list[str],
    team_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> int:
    """Record one action (`team_id`: the team it concerned, None for the org); its id."""
    row = conn.execute(
        "INSERT INTO audit_log"
        " (org_id, key_id, actor, request_id, method, target_ids, team_id, detail)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (org_id, key_id, actor, request_id, method, target_ids, team_id, _jsonb(detail)),
    ).fetchone()
    assert row is not None
    return int(row[0])


class AuditRow(msgspec.Struct, frozen=True):
    id: int
    org_id: str
    key_id: str | None
    actor: str
    request_id: str | None
    method: str
    target_ids: list[str]
    at: datetime
    team_id: str | None
    detail: dict[str, Any] | None


def list_audit(
    conn: psycopg.Connection,
    org_id: str,
    *,
    team_id: str | None,
    method: str | None,
    since: datetime | None,
    until: datetime | None,
    before_id: int | None,
    limit: int,
) -> list[AuditRow]:
    """An org's audit rows (of one team when `team_id` is given), newest first, filtered by
    method and time, after the cursor."""
    rows = conn.execute(
        "SELECT id, org_id, key_id, actor, request_id, method, target_ids, at, team_id, detail"
        " FROM audit_log WHERE org_id = %s AND (%s::text IS NULL OR team_id = %s)"
        " AND (%s::text IS NULL OR method = %s)"
        " AND (%s::timestamptz IS NULL OR at >= %s) AND (%s::timestamptz IS NULL OR at < %s)"
        " AND (%s::bigint IS NULL OR id < %s) ORDER BY id DESC LIMIT %s",
        (org_id, team_id, team_id, method, method, since, since, until, until, before_id,
         before_id, limit),
    ).fetchall()  # fmt: skip
    return [AuditRow(*r) for r in rows]


def prune_audit(conn: psycopg.Connection, older_than_days: int) -> dict[str, int]:
    """Delete the audit rows of every org older than `older_than_days` days (as the tables'
    owner: the server role may not delete them); org id -> rows deleted."""
    rows = conn.execute(
        "WITH gone AS (DELETE FROM audit_log WHERE at < now() - make_interval(days => %s)"
        " RETURNING org_id) SELECT org_id, count(*) FROM gone GROUP BY org_id ORDER BY org_id",
        (older_than_days,),
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return Jsonb(value) if value is not None else None


def ping(conn: psycopg.Connection) -> None:
    """A round trip to the database."""
    conn.execute("SELECT 1").fetchone()
