"""SQL of an org's members (migrations/team/0002: `members`). Functions take a psycopg connection
already inside the transaction the caller opened, and return typed rows."""

from __future__ import annotations

from datetime import datetime

import msgspec
import psycopg
from psycopg.errors import UniqueViolation

from reos_memory.store.team.tenancy import Duplicate


class MemberRow(msgspec.Struct, frozen=True):
    org_id: str
    id: str
    team_id: str | None  # None: a member of the org, in no team
    name: str
    email: str | None
    created_at: datetime
    removed_at: datetime | None


_COLUMNS = "org_id, id, team_id, name, email, created_at, removed_at"


def insert_member(
    conn: psycopg.Connection,
    *,
    org_id: str,
    member_id: str,
    team_id: str | None,
    name: str,
    email: str | None,
) -> MemberRow:
    """A new member; Duplicate when a live member of the org has the name."""
    try:
        with conn.transaction():  # a savepoint: the caller's transaction survives a duplicate
            row = conn.execute(
                "INSERT INTO members (org_id, id, team_id, name, email)"
                f" VALUES (%s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
                (org_id, member_id, team_id, name, email),
            ).fetchone()
    except UniqueViolation as exc:
        raise Duplicate(name) from exc
    assert row is not None
    return MemberRow(*row)


def find_member(
    conn: psycopg.Connection, org_id: str, name_or_id: str, *, lock: bool = False
) -> MemberRow | None:
    """The live member of `org_id` named `name_or_id`, else the member (live or removed) with
    that id (a name is looked up first, as for orgs and teams); `lock` holds its row against a
    concurrent removal until the transaction ends."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM members WHERE org_id = %s"
        " AND ((name = %s AND removed_at IS NULL) OR id = %s)"
        " ORDER BY (id <> %s) DESC LIMIT 1" + (" FOR SHARE" if lock else ""),
        (org_id, name_or_id, name_or_id, name_or_id),
    ).fetchone()
    return MemberRow(*row) if row else None


def get_member(conn: psycopg.Connection, org_id: str, member_id: str) -> MemberRow | None:
    """The member (live or removed) with this id."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM members WHERE org_id = %s AND id = %s", (org_id, member_id)
    ).fetchone()
    return MemberRow(*row) if row else None


def list_members(conn: psycopg.Connection, org_id: str) -> list[MemberRow]:
    """The members of an org, removed ones included, oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM members WHERE org_id = %s ORDER BY created_at, id", (org_id,)
    ).fetchall()
    return [MemberRow(*r) for r in rows]


def mark_removed(conn: psycopg.Connection, org_id: str, member_id: str) -> MemberRow | None:
    """Mark a live member removed now; the row as it is now, None when it already was."""
    row = conn.execute(
        f"UPDATE members SET removed_at = now() WHERE org_id = %s AND id = %s"
        f" AND removed_at IS NULL RETURNING {_COLUMNS}",
        (org_id, member_id),
    ).fetchone()
    return MemberRow(*row) if row else None
