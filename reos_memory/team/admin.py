"""The operator's actions on a team database (`reos-memory team admin ...`): orgs, teams and API
keys, each in one transaction with its audit-log row. They run on the connection of the role
that owns the tables (the operator's), which row-level security does not restrict."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import psycopg

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.store.team import members as member_sql
from reos_memory.store.team import tenancy
from reos_memory.team import keys
from reos_memory.team.actions import Action

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
    member_id: str | None = None  # the member the key belongs to
    made_by: str | None = None  # the key that made it (team/keys/create); None: the command line


class Actor(msgspec.Struct, frozen=True):
    """Who acts, for the audit log: `cli:<user>` (the command line), `key:<id>` (an API key,
    then also `key_id`) or `server:<host>:<pid>` (the server's own upkeep), and one request id
    per command or request."""

    name: str
    request_id: str
    key_id: str | None = None


def cli_actor(user: str) -> Actor:
    return Actor(name=f"cli:{user}", request_id=uuid.uuid4().hex)


def org_named(conn: psycopg.Connection, name_or_id: str) -> Org:
    """The org named (or with the id) `name_or_id`; NotFound naming the `org` parameter."""
    found = tenancy.find_org(conn, name_or_id)
    if found is None:
        raise NotFound("org", name_or_id, field="org")
    return found


def audit(
    conn: psycopg.Connection,
    actor: Actor,
    org_id: str,
    method: Action,
    *ids: str,
    team_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append the audit row of one action, in the caller's transaction (`team_id`: the team it
    concerned, None for the org as a whole)."""
    tenancy.append_audit(
        conn,
        org_id=org_id,
        key_id=actor.key_id,
        actor=actor.name,
        request_id=actor.request_id,
        method=method,
        target_ids=list(ids),
        team_id=team_id,
        detail=detail,
    )


def valid_name(value: str, field: str) -> str:
    """`value` stripped, if it is a name of 1 to 200 characters; else InvalidInput on `field`."""
    value = value.strip()
    if not value or len(value) > 200:
        raise InvalidInput(field, "a name of 1 to 200 characters")
    return value


def create_org(conn: psycopg.Connection, actor: Actor, name: str) -> Org:
    """A new org; Conflict when the name is taken."""
    name = valid_name(name, "name")
    with conn.transaction():
        try:
            org = tenancy.insert_org(conn, f"org_{uuid.uuid4().hex[:16]}", name)
        except tenancy.Duplicate:
            raise Conflict(f"an org named {name!r} exists", field="$.name") from None
        audit(conn, actor, org.id, "team/admin/create-org", org.id)
    return org


def create_team(conn: psycopg.Connection, actor: Actor, org: str, name: str) -> Team:
    """A new team in `org` (name or id); NotFound for an unknown org, Conflict for a name the
    org already has."""
    name = valid_name(name, "team")
    with conn.transaction():
        o = org_named(conn, org)
        try:
            team = tenancy.insert_team(conn, o.id, f"team_{uuid.uuid4().hex[:16]}", name)
        except tenancy.Duplicate:
            raise Conflict(f"org {o.name!r} has a team named {name!r}", field="$.team") from None
        audit(conn, actor, o.id, "team/admin/create-team", team.id, team_id=team.id)
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
    member: str | None = None,
    method: Action = "team/admin/create-key",
    maker: tenancy.ApiKeyRow | None = None,
) -> tuple[keys.NewKey, KeyInfo]:
    """A new key of `org` (and `team`, a name or id of that org) with `role`, belonging to
    `member` (a live member of the org, name or id) when given; the NewKey holds the only copy
    of the key. `method`: what the audit log records (the command line, or team/keys/create);
    `maker`: the key that makes it, which it never outlives."""
    if role not in keys.ROLES:
        raise InvalidInput("role", f"one of {', '.join(keys.ROLES)}")
    if expires_days is not None and expires_days <= 0:
        raise InvalidInput("expires_days", "a number of days > 0")
    new = keys.new_key()
    _, secret = keys.parse_key(new.key)
    with conn.transaction():
        o = org_named(conn, org)
        team_id = _team_id(conn, o, team)
        member_id = _key_member(conn, o, member, team_id)
        row = tenancy.insert_key(
            conn,
            org_id=o.id,
            key_id=new.key_id,
            team_id=team_id,
            role=role,
            name=name,
            hash=keys.hash_secret(new.key_id, secret),
            prefix=new.prefix,
            expires_at=_no_later(keys.expiry(expires_days), maker),
            member_id=member_id,
            made_by=maker.key_id if maker else None,
        )
        ids = [new.key_id, *([member_id] if member_id else [])]
        audit(conn, actor, o.id, method, *ids, team_id=team_id)
    return new, _info(row, row.created_at)


def _no_later(expires: datetime | None, maker: tenancy.ApiKeyRow | None) -> datetime | None:
    """A new key's expiry: what was asked, but never after its maker's (a key that expires
    tomorrow made one that never did)."""
    if maker is None or maker.expires_at is None:
        return expires
    return maker.expires_at if expires is None else min(expires, maker.expires_at)


def _team_id(conn: psycopg.Connection, o: Org, team: str | None) -> str | None:
    """The id of `team` (name or id) of org `o`, None for none; NotFound naming `team`."""
    if team is None:
        return None
    t = tenancy.find_team(conn, o.id, team)
    if t is None:
        raise NotFound(f"team of org {o.name!r}", team, field="team")
    return t.id


def _key_member(
    conn: psycopg.Connection, o: Org, member: str | None, team_id: str | None
) -> str | None:
    """The id of the live member a new key belongs to (locked until commit, so a removal that
    revokes the member's keys cannot miss this one); a member of another team than the key's is
    refused."""
    if member is None:
        return None
    row = member_sql.find_member(conn, o.id, member, lock=True)
    if row is None or row.removed_at is not None:
        raise NotFound(f"member of org {o.name!r}", member, field="member")
    if team_id is not None and row.team_id not in (None, team_id):
        raise InvalidInput("member", "a member of the key's team, or of the org in no team")
    return row.id


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
            audit(conn, actor, row.org_id, "team/admin/revoke-key", key_id, team_id=row.team_id)
    return _info(row, row.revoked_at or row.created_at), now is not None


def list_keys(conn: psycopg.Connection, org: str, now: datetime | None = None) -> list[KeyInfo]:
    """The keys of `org` with their status at `now`; no secret, no hash."""
    with conn.transaction():
        o = org_named(conn, org)
        rows = tenancy.list_keys(conn, o.id)
    return [_info(r, now) for r in rows]


class PruneResult(msgspec.Struct, frozen=True):
    older_than_days: int
    deleted: int  # audit rows deleted, all orgs together
    by_org: dict[str, int]  # org id -> rows deleted (orgs with none are left out)


def prune_audit(conn: psycopg.Connection, actor: Actor, older_than_days: int) -> PruneResult:
    """Delete the audit rows older than `older_than_days` days in every org, and record in each
    org that lost rows one row saying how many and of what age (so a prune is itself audited).
    `conn` is the tables' owner's: the server role may only append to the audit log."""
    if older_than_days < 1:
        raise InvalidInput("older_than_days", "a whole number of days >= 1")
    with conn.transaction():
        by_org = tenancy.prune_audit(conn, older_than_days)
        for org_id, n in by_org.items():
            detail = {"deleted": n, "older_than_days": older_than_days}
            audit(conn, actor, org_id, "team/admin/prune-audit", detail=detail)
    return PruneResult(older_than_days, sum(by_org.values()), by_org)


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
        member_id=row.member_id,
        made_by=row.made_by,
    )


def key_info(row: tenancy.ApiKeyRow, now: datetime | None = None) -> KeyInfo:
    """A stored key as listed (status at `now`): never its secret or hash."""
    return _info(row, now)
