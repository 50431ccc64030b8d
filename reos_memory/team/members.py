"""An org's members: the people its keys belong to. The same functions serve the admin command
line (the owner's connection, the whole org) and the `team/members/*` methods (a tenant
transaction, limited to the caller's team for a team-scoped key); each write appends its audit
row in the caller's transaction. Removing a member revokes its keys in the same transaction, so
no key outlives the person it was given to."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Literal

import msgspec
import psycopg

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.store.team import members as member_sql
from reos_memory.store.team import tenancy
from reos_memory.team.actions import Action
from reos_memory.team.admin import Actor, audit, valid_name

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class Member(msgspec.Struct, frozen=True):
    member_id: str
    org_id: str
    team_id: str | None  # None: a member of the org in no team
    name: str
    email: str | None
    created_at: datetime
    removed_at: datetime | None
    status: Literal["active", "removed"]


class MemberList(msgspec.Struct, frozen=True):
    members: list[Member]


class MemberRemoved(msgspec.Struct, frozen=True):
    member: Member
    removed_now: bool  # False: it already was removed, nothing written
    revoked_key_ids: list[str]  # the member's keys this removal revoked


def member(row: member_sql.MemberRow) -> Member:
    """A stored member as the methods show it."""
    return Member(
        member_id=row.id,
        org_id=row.org_id,
        team_id=row.team_id,
        name=row.name,
        email=row.email,
        created_at=row.created_at,
        removed_at=row.removed_at,
        status="active" if row.removed_at is None else "removed",
    )


def add_member(
    conn: psycopg.Connection,
    actor: Actor,
    org_id: str,
    method: Action,
    *,
    name: str,
    team: str | None = None,
    email: str | None = None,
    reach: str | None = None,
) -> Member:
    """A new member of `org_id`, in `team` (name or id) or, when None, in the team `reach` (the
    caller's team; None: the org in no team). A team outside `reach` is not found; a name a
    live member has is a Conflict."""
    name = valid_name(name, "name")
    if email is not None and (len(email) > 320 or not _EMAIL.match(email)):
        raise InvalidInput("email", "an email address such as ada@example.com (<= 320 characters)")
    with conn.transaction():
        team_id = _team_in_reach(conn, org_id, team, reach)
        try:
            row = member_sql.insert_member(
                conn,
                org_id=org_id,
                member_id=f"mbr_{uuid.uuid4().hex[:16]}",
                team_id=team_id,
                name=name,
                email=email,
            )
        except tenancy.Duplicate:
            raise Conflict(f"a member named {name!r} exists", field="$.name") from None
        audit(conn, actor, org_id, method, row.id, team_id=team_id)
    return member(row)


def remove_member(
    conn: psycopg.Connection,
    actor: Actor,
    org_id: str,
    method: Action,
    name_or_id: str,
    *,
    reach: str | None = None,
) -> MemberRemoved:
    """Remove a member of `org_id` within `reach` and revoke its live keys, with one audit row
    naming the member and those keys; removing a removed member writes nothing. A member out
    of reach is not found, as one that does not exist."""
    with conn.transaction():
        row = member_sql.find_member(conn, org_id, name_or_id)
        if row is None or not _reaches(reach, row.team_id):
            raise NotFound("member", name_or_id, field="member_id")
        removed = member_sql.mark_removed(conn, org_id, row.id)
        revoked: list[str] = []
        if removed is not None:
            revoked = tenancy.revoke_member_keys(conn, org_id, row.id)
            audit(conn, actor, org_id, method, row.id, *revoked, team_id=row.team_id)
            row = removed
    return MemberRemoved(
        member=member(row), removed_now=removed is not None, revoked_key_ids=revoked
    )


def list_members(
    conn: psycopg.Connection, org_id: str, *, reach: str | None = None
) -> list[Member]:
    """The members of `org_id` within `reach` (removed ones too, with their status)."""
    with conn.transaction():
        rows = member_sql.list_members(conn, org_id)
    return [member(r) for r in rows if _reaches(reach, r.team_id)]


def get_member(conn: psycopg.Connection, org_id: str, member_id: str) -> Member | None:
    """The member with this id (live or removed), None if the org has none."""
    row = member_sql.get_member(conn, org_id, member_id)
    return member(row) if row is not None else None


def _reaches(reach: str | None, team_id: str | None) -> bool:
    """A team-scoped caller reaches its own team's members; an org-wide one all of them."""
    return reach is None or team_id == reach


def _team_in_reach(
    conn: psycopg.Connection, org_id: str, team: str | None, reach: str | None
) -> str | None:
    if team is None:
        return reach
    t = tenancy.find_team(conn, org_id, team)
    if t is None or not _reaches(reach, t.id):
        raise NotFound("team", team, field="team")
    return t.id
