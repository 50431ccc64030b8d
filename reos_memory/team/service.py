"""The team service: what the team server's methods do, on PostgreSQL, for a caller known only by
its verified API key. Every query runs in a tenant transaction of the key's org (row-level
security as defence in depth); every write appends its audit row in the same transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated

import msgspec
import psycopg
from psycopg_pool import ConnectionPool

from reos_memory.errors import Forbidden, NotFound
from reos_memory.store.team import connection as pg
from reos_memory.store.team import tenancy
from reos_memory.team import keys
from reos_memory.team.admin import KeyInfo, key_info
from reos_memory.team.episodes import TeamEpisodes
from reos_memory.team.learning import TeamLearning
from reos_memory.team.memories import Embed, TeamMemories, Who
from reos_memory.team.retrieval import TeamRetrieval
from reos_memory.team.shares import Shares

_RANK = {"reader": 0, "writer": 1, "admin": 2}
POOL_MAX = 8
# How long a request waits for a pooled connection before it is refused (503 for /health and
# authentication): a database that does not answer is reported, not waited on.
POOL_WAIT_S = 2.0


class Caller(msgspec.Struct, frozen=True):
    """Who calls: the verified key, and this request's id (for the audit log)."""

    key: keys.VerifiedKey
    request_id: str


def who(caller: Caller) -> Who:
    """The caller as the memory methods take it."""
    k = caller.key
    return Who(
        org_id=k.org_id, team_id=k.team_id, role=k.role, key_id=k.key_id,
        request_id=caller.request_id,
    )  # fmt: skip


class WhoAmI(msgspec.Struct, frozen=True):
    org_id: str
    team_id: str | None
    role: str
    key_id: str
    name: str


class KeyList(msgspec.Struct, frozen=True):
    keys: list[KeyInfo]


class RevokeResult(msgspec.Struct, frozen=True):
    key: KeyInfo
    revoked_now: bool  # False: it already was revoked, nothing written


class AuditQuery(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    method: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before_id: Annotated[int, msgspec.Meta(ge=1)] | None = None  # the cursor: next_before_id
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class AuditEntry(msgspec.Struct, frozen=True):
    id: int
    key_id: str | None
    actor: str
    request_id: str | None
    method: str
    target_ids: list[str]
    at: datetime


class AuditPage(msgspec.Struct, frozen=True):
    entries: list[AuditEntry]
    next_before_id: int | None  # pass as before_id for the next (older) page; None: no more


class TeamService:
    """The typed surface of the team server: every entry point calls these methods."""

    def __init__(
        self,
        url: str,
        pool_max: int = POOL_MAX,
        embed: Embed | None = None,
        policy_file: str | None = None,
    ) -> None:
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_max,
            kwargs={"autocommit": True, "connect_timeout": pg.CONNECT_TIMEOUT_S},
            open=True,
            timeout=POOL_WAIT_S,
        )
        # without an embedder, memories are stored unembedded and found by full text only
        self.memories = TeamMemories(
            self.pool.connection, embed or (lambda text: None), policy_file=policy_file
        )
        self.shares = Shares(self.memories)
        self.episodes = TeamEpisodes(self.memories)
        self.retrieval = TeamRetrieval(self.memories)
        self.learning = TeamLearning(self.memories)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _tenant(self, caller: Caller) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn, pg.tenant_transaction(conn, caller.key.org_id):
            yield conn

    def healthy(self) -> bool:
        """True when the database answers."""
        try:
            with self.pool.connection(timeout=POOL_WAIT_S) as conn:
                tenancy.ping(conn)
        except Exception:  # any failure to reach it is "unreachable"
            return False
        return True

    def authenticate(self, presented: str) -> keys.VerifiedKey:
        """The grant of a presented key, else KeyRefused (constant-time check in keys.py)."""
        with self.pool.connection() as conn:
            return keys.verify_key(conn, presented)

    def whoami(self, caller: Caller) -> WhoAmI:
        """The org, team, role and id of the caller's key."""
        k = caller.key
        return WhoAmI(org_id=k.org_id, team_id=k.team_id, role=k.role, key_id=k.key_id, name=k.name)

    def list_keys(self, caller: Caller, method: str) -> KeyList:
        """The keys of the caller's org, or of its team for a team key (admin); never a secret or
        hash."""
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            rows = tenancy.list_keys(conn, caller.key.org_id)
        return KeyList(keys=[key_info(r) for r in rows if _reaches(caller, r)])

    def revoke_key(self, caller: Caller, method: str, key_id: str) -> RevokeResult:
        """Revoke a key of the caller's org (of its team for a team key) (admin); any other key is
        not found."""
        _require(caller, "admin", method)
        key_id = key_id.removeprefix(f"{keys.PREFIX}_")
        with self._tenant(caller) as conn:
            row = tenancy.get_key(conn, key_id)
            if row is None or row.org_id != caller.key.org_id or not _reaches(caller, row):
                raise NotFound("API key", key_id, field="key_id")
            now = tenancy.revoke_key(conn, key_id)
            if now is not None:
                tenancy.append_audit(
                    conn,
                    org_id=caller.key.org_id,
                    key_id=caller.key.key_id,
                    actor=f"key:{caller.key.key_id}",
                    request_id=caller.request_id,
                    method=method,
                    target_ids=[key_id],
                )
            row = tenancy.get_key(conn, key_id)
        assert row is not None
        return RevokeResult(key=key_info(row), revoked_now=now is not None)

    def list_audit(self, caller: Caller, method: str, q: AuditQuery) -> AuditPage:
        """The audit log of the caller's org (admin), newest first, filtered and paged."""
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            rows = tenancy.list_audit(
                conn,
                caller.key.org_id,
                method=q.method,
                since=q.since,
                until=q.until,
                before_id=q.before_id,
                limit=q.limit + 1,
            )
        more = len(rows) > q.limit
        rows = rows[: q.limit]
        entries = [
            AuditEntry(
                id=r.id,
                key_id=r.key_id,
                actor=r.actor,
                request_id=r.request_id,
                method=r.method,
                target_ids=r.target_ids,
                at=r.at,
            )
            for r in rows
        ]
        return AuditPage(entries=entries, next_before_id=rows[-1].id if more else None)


def _require(caller: Caller, role: str, method: str) -> None:
    if _RANK[caller.key.role] < _RANK[role]:
        raise Forbidden(method, role)


def _reaches(caller: Caller, row: tenancy.ApiKeyRow) -> bool:
    """A team key reaches the keys of its own team only; an org key reaches the whole org's."""
    return caller.key.team_id is None or row.team_id == caller.key.team_id
