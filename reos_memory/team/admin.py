"""The operator's actions on a team database (`reos-memory team admin ...`): orgs, teams and API
keys, each in one transaction with its audit-log row. They run on the connection of the role
that owns the tables (the operator's), which row-level security does not restrict."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
import psycopg

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.store.team import tenancy
from reos_memory.team import keys

Org = tenancy.Org
Team = tenancy.Team


class KeyInfo(msgspec.Struct, frozen=True):
    """A key as listed: never its secret or hash."""

    key_id: str
    prefix: str
    org_id: str
    team_id: str | None
    role: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    status: str  # active | expired | revoked


class Actor(msgspec.Struct, frozen=True):
    """Who acts, for the audit log: `cli:<user>` and one request id per command."""

    name: str
    request_id: str


def cli_actor(user: str) -> Actor:
    return Actor(name=f"cli:{user}", request_id=uuid.uuid4().hex)


def _org(conn: psycopg.Connection, name_or_id: str) -> Org:
    org = tenancy.find_org(conn, name_or_id)
    if org is None:
        raise NotFound("org", name_or_id, field="org")
    return org


def _audit(conn: psycopg.Connection, actor: Actor, org_id: str, method: str, *ids: str) -> None:
    tenancy.append_audit(
        conn,
        org_id=org_id,
        key_id=None,
        actor=actor.name,
        request_id=actor.request_id,
        method=method,
        target_ids=list(ids),
    )


def _name(value: str, field: str) -> str:
    value = value.strip()
    if not value or len(value) > 200:
        raise InvalidInput(field, "a name of 1 to 200 characters")
    return value


def create_org(conn: psycopg.Connection, actor: Actor, name: str) -> Org:
    """A new org; Conflict when the name is taken."""
    name = _name(name, "name")
    with conn.transaction():
        try:
            org = tenancy.insert_org(conn, f"org_{uuid.uuid4().hex[:16]}", name)
        except tenancy.Duplicate:
            raise Conflict(f"an org named {name!r} exists", field="$.name") from None
        _audit(conn, actor, org.id, "team/admin/create-org", org.id)
    return org


def create_team(conn: psycopg.Connection, actor: Actor, org: str, name: str) -> Team:
    """A new team in `org` (name or id); NotFound for an unknown org, Conflict for a name the
    org already has."""
    name = _name(name, "team")
    with conn.transaction():
        o = _org(conn, org)
        try:
            team = tenancy.insert_team(conn, o.id, f"team_{uuid.uuid4().hex[:16]}", name)
        except tenancy.Duplicate:
            raise Conflict(f"org {o.name!r} has a team named {name!r}", field="$.team") from None
        _audit(conn, actor, o.id, "team/admin/create-team", team.id)
    return team


def create_key(
    conn: psycopg.Connection,
    actor: Actor,
    *,
    org: str,
    role: str,
    team: str | None = None,
    name: str = "",
    expires_days: float | None = None,
) -> tuple[keys.NewKey, KeyInfo]:
    """A new key of `org` (and `team`, a name or id of that org) with `role`; the NewKey holds
    the only copy of the key."""
    if role not in keys.ROLES:
        raise InvalidInput("role", f"one of {', '.join(keys.ROLES)}")
    if expires_days is not None and expires_days <= 0:
        raise InvalidInput("expires_days", "a number of days > 0")
    new = keys.new_key()
    _, secret = keys.parse_key(new.key)
    with conn.transaction():
        o = _org(conn, org)
        team_id = None
        if team is not None:
            t = tenancy.find_team(conn, o.id, team)
            if t is None:
                raise NotFound(f"team of org {o.name!r}", team, field="team")
            team_id = t.id
        row = tenancy.insert_key(
            conn,
            org_id=o.id,
            key_id=new.key_id,
            team_id=team_id,
            role=role,
            name=name,
            hash=keys.hash_secret(new.key_id, secret),
            prefix=new.prefix,
            expires_at=keys.expiry(expires_days),
        )
        _audit(conn, actor, o.id, "team/admin/create-key", new.key_id)
    return new, _info(row, row.created_at)


def revoke_key(conn: psycopg.Connection, actor: Actor, key_id: str) -> tuple[KeyInfo, bool]:
    """Revoke a key (by id or `rmk_<id>` prefix); (the key, whether it was revoked now: False
    when it already was, and then nothing is written)."""
    key_id = key_id.removeprefix(f"{keys.PREFIX}_")
    with conn.transaction():
        if tenancy.get_key(conn, key_id) is None:
            raise NotFound("API key", key_id, field="key_id")
        now = tenancy.revoke_key(conn, key_id)
        row = tenancy.get_key(conn, key_id)
        assert row is not None
        if now is not None:
            _audit(conn, actor, row.org_id, "team/admin/revoke-key", key_id)
    return _info(row, row.revoked_at or row.created_at), now is not None


def list_keys(conn: psycopg.Connection, org: str, now: datetime | None = None) -> list[KeyInfo]:
    """The keys of `org` with their status at `now`; no secret, no hash."""
    with conn.transaction():
        o = _org(conn, org)
        rows = tenancy.list_keys(conn, o.id)
    return [_info(r, now) for r in rows]


def _info(row: tenancy.ApiKeyRow, now: datetime | None) -> KeyInfo:
    at = now or datetime.now(UTC)
    status = (
        "revoked"
        if row.revoked_at is not None and row.revoked_at <= at
        else "expired"
        if row.expires_at is not None and row.expires_at <= at
        else "active"
    )
    return KeyInfo(
        key_id=row.key_id,
        prefix=row.prefix,
        org_id=row.org_id,
        team_id=row.team_id,
        role=row.role,
        name=row.name,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        status=status,
    )


def key_info(row: tenancy.ApiKeyRow, now: datetime | None = None) -> KeyInfo:
    """A stored key as listed (status at `now`): never its secret or hash."""
    return _info(row, now)
