"""The team service: what the team server's methods do, on PostgreSQL, for a caller known only by
its verified API key. Every query runs in a tenant transaction of the key's org (row-level
security as defence in depth) with its statement and lock timeouts; every write appends its
audit row in the same transaction. A timeout or a lost database is DatabaseUnavailable, which
tells the client to retry."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
import psycopg
from psycopg_pool import ConnectionPool

from reos_memory.errors import Forbidden, InvalidInput, NotFound
from reos_memory.store.team import connection as pg
from reos_memory.store.team import tenancy
from reos_memory.team import keys, members
from reos_memory.team.actions import Action
from reos_memory.team.admin import Actor, KeyInfo, audit, create_key, key_info
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
    member: members.Member | None  # the member the key belongs to, if any


class KeyList(msgspec.Struct, frozen=True):
    keys: list[KeyInfo]


class CreatedKey(msgspec.Struct, frozen=True):
    """A new key: `key` is its only copy, shown once."""

    key_id: str
    key: str
    info: KeyInfo


class RevokeResult(msgspec.Struct, frozen=True):
    key: KeyInfo
    revoked_now: bool  # False: it already was revoked, nothing written
    also_revoked: list[str] = []  # with_minted: the keys it made (and they made) revoked now


class AuditQuery(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    team_id: str | None = None  # this team's rows only (a team-scoped key: always its own)
    method: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    before_id: Annotated[int, msgspec.Meta(ge=1)] | None = None  # the cursor: next_before_id
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class RevokeParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    key_id: str  # the key's id, or its `rmk_<id>` prefix
    with_minted: bool = False  # also revoke every live key it made, and what those made


class CreateKeyParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    role: Literal["reader", "writer", "admin"]
    team: str | None = None  # a team of the org (name or id); a team key: its own team only
    name: Annotated[str, msgspec.Meta(max_length=200)] = ""
    expires_days: Annotated[float, msgspec.Meta(gt=0, le=3650)] | None = None
    member: str | None = None  # the live member (name or id) the key belongs to


class AddMemberParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str  # unique among the org's live members
    team: str | None = None  # a team of the org (name or id); a team key: its own by default
    email: str | None = None


class RemoveMemberParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    member_id: str  # the member's id (or its name)


class AuditEntry(msgspec.Struct, frozen=True):
    id: int
    key_id: str | None
    actor: str
    request_id: str | None
    method: str
    target_ids: list[str]
    at: datetime
    team_id: str | None  # the team the action concerned; None: the org as a whole
    detail: dict[str, Any] | None  # what ids cannot say (a prune: rows deleted, their age)


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
        timeouts: pg.Timeouts | None = None,
    ) -> None:
        self.timeouts = timeouts or pg.DEFAULT_TIMEOUTS
        self._sampler = Sampler(AUDIT_SAMPLE, 60.0)
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_max,
            kwargs={"autocommit": True, "connect_timeout": pg.CONNECT_TIMEOUT_S},
            configure=self.timeouts.configure,
            open=True,
            timeout=POOL_WAIT_S,
        )
        # without an embedder, memories are stored unembedded and found by full text only
        self.memories = TeamMemories(
            self._connection, embed or (lambda text: None), policy_file=policy_file
        )
        self.shares = Shares(self.memories)
        self.episodes = TeamEpisodes(self.memories)
        self.retrieval = TeamRetrieval(self.memories)
        self.learning = TeamLearning(self.memories)

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection (its sessions carry the timeouts: `Timeouts.configure`, which
        every tenant transaction on it sets again with SET LOCAL); a timeout or a lost database
        in its use is DatabaseUnavailable. Every service above uses connections from here."""
        with pg.retryable_failures(self.timeouts), self.pool.connection() as conn:
            yield conn

    @contextmanager
    def _tenant(self, caller: Caller) -> Iterator[psycopg.Connection]:
        with self._connection() as conn, pg.tenant_transaction(conn, caller.key.org_id):
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
        with self._connection() as conn:
            return keys.verify_key(conn, presented)

    def audit_attempt(
        self,
        org_id: str,
        key_id: str,
        team_id: str | None,
        method: Action,
        request_id: str,
        **detail: str,
    ) -> bool:
        """An audit row of the key's org for an attempt that was turned away (`team/refused`:
        a forbidden call, a revoked, expired or wrong-secret key) or for a UI sign-in
        (`team/ui/signin`), sampled: at most AUDIT_SAMPLE rows a minute per org, method,
        reason and key, the next row saying how many were left out. False when sampled out."""
        why = detail.get("why", "")
        skipped = self._sampler.admit((org_id, method, why, key_id))
        if skipped is None:
            return False
        if skipped:
            detail["left_out"] = str(skipped)
        actor = Actor(name=f"key:{key_id}", request_id=request_id, key_id=key_id)
        with self._connection() as conn, pg.tenant_transaction(conn, org_id):
            audit(conn, actor, org_id, method, key_id, team_id=team_id, detail=detail)
        return True

    def whoami(self, caller: Caller) -> WhoAmI:
        """The org, team, role and id of the caller's key, and the member it belongs to."""
        k = caller.key
        member = None
        if k.member_id is not None:
            with self._tenant(caller) as conn:
                member = members.get_member(conn, k.org_id, k.member_id)
        return WhoAmI(
            org_id=k.org_id, team_id=k.team_id, role=k.role, key_id=k.key_id, name=k.name,
            member=member,
        )  # fmt: skip

    def list_members(self, caller: Caller) -> members.MemberList:
        """The org's members, or its team's for a team key (admin), removed ones included."""
        method: Action = "team/members/list"
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            found = members.list_members(conn, caller.key.org_id, reach=caller.key.team_id)
        return members.MemberList(members=found)

    def add_member(
        self, caller: Caller, name: str, team: str | None, email: str | None
    ) -> members.Member:
        """A new member of the caller's org, in `team` (a team key: its own team only) (admin)."""
        method: Action = "team/members/add"
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            return members.add_member(
                conn, _actor(caller), caller.key.org_id, method, name=name, team=team,
                email=email, reach=caller.key.team_id,
            )  # fmt: skip

    def remove_member(self, caller: Caller, member_id: str) -> members.MemberRemoved:
        """Remove a member the caller reaches and revoke its keys (admin); any other member is
        not found."""
        method: Action = "team/members/remove"
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            return members.remove_member(
                conn, _actor(caller), caller.key.org_id, method, member_id,
                reach=caller.key.team_id,
            )  # fmt: skip

    def list_keys(self, caller: Caller) -> KeyList:
        """The keys of the caller's org, or of its team for a team key (admin); never a secret or
        hash."""
        method: Action = "team/keys/list"
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            rows = tenancy.list_keys(conn, caller.key.org_id)
        return KeyList(keys=[key_info(r) for r in rows if _reaches(caller, r)])

    def create_key(
        self,
        caller: Caller,
        *,
        role: str,
        team: str | None = None,
        name: str = "",
        expires_days: float | None = None,
        member: str | None = None,
    ) -> CreatedKey:
        """A new key of the caller's org (admin): a team admin makes keys of its own team only
        (an org-wide key or another team's is refused); the key is returned once."""
        method: Action = "team/keys/create"
        _require(caller, "admin", method)
        own = caller.key.team_id
        with self._tenant(caller) as conn:
            if own is not None:
                if team is None:
                    team = own
                found = tenancy.find_team(conn, caller.key.org_id, team)
                if found is None or found.id != own:
                    raise InvalidInput("team", "a team admin's key makes keys of its own team only")
            maker = tenancy.get_key(conn, caller.key.key_id)
            new, info = create_key(
                conn, _actor(caller), org=caller.key.org_id, role=role, team=team, name=name,
                expires_days=expires_days, member=member, method=method, maker=maker,
            )  # fmt: skip
        return CreatedKey(key_id=new.key_id, key=new.key, info=info)

    def revoke_key(self, caller: Caller, key_id: str, *, with_minted: bool = False) -> RevokeResult:
        """Revoke a key of the caller's org (of its team for a team key) (admin); any other key is
        not found. `with_minted`: also every live key it made, and what those made."""
        method: Action = "team/keys/revoke"
        _require(caller, "admin", method)
        key_id = key_id.removeprefix(f"{keys.PREFIX}_")
        also: list[str] = []
        with self._tenant(caller) as conn:
            row = tenancy.get_key(conn, key_id)
            if row is None or row.org_id != caller.key.org_id or not _reaches(caller, row):
                raise NotFound("API key", key_id, field="key_id")
            now = tenancy.revoke_key(conn, key_id)
            if now is not None:
                audit(conn, _actor(caller), row.org_id, method, key_id, team_id=row.team_id)
            if with_minted:
                for made in tenancy.revoke_made_by(conn, row.org_id, key_id):
                    audit(conn, _actor(caller), made.org_id, method, made.key_id,
                          team_id=made.team_id)  # fmt: skip
                    also.append(made.key_id)
            row = tenancy.get_key(conn, key_id)
        assert row is not None
        return RevokeResult(key=key_info(row), revoked_now=now is not None, also_revoked=also)

    def list_audit(self, caller: Caller, q: AuditQuery) -> AuditPage:
        """The audit log of the caller's org (admin), newest first, filtered and paged."""
        method: Action = "team/audit/list"
        _require(caller, "admin", method)
        with self._tenant(caller) as conn:
            rows = tenancy.list_audit(
                conn,
                caller.key.org_id,
                team_id=_audit_team(conn, caller, q.team_id),
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
                team_id=r.team_id,
                detail=r.detail,
            )
            for r in rows
        ]
        return AuditPage(entries=entries, next_before_id=rows[-1].id if more else None)


AUDIT_SAMPLE = 10  # audit rows a minute per org, method, reason and key of attempts


class Sampler:
    """At most `n` admissions per `window_s` seconds for each name; the count left out since
    the last admission comes back with the next one. A flood of refusals writes a few rows,
    not one each; the server log still has every one."""

    def __init__(self, n: int, window_s: float, clock: Callable[[], float] = time.monotonic):
        self.n, self.window_s, self.clock = n, window_s, clock
        self._mutex = threading.Lock()
        self._seen: OrderedDict[Hashable, tuple[float, int, int]] = OrderedDict()

    def admit(self, name: Hashable) -> int | None:
        """None when `name` is over its count for this window, else how many were left out."""
        now = self.clock()
        with self._mutex:
            start, used, skipped = self._seen.pop(name, (now, 0, 0))
            if now - start >= self.window_s:
                start, used = now, 0
            if used >= self.n:
                self._seen[name] = (start, used, skipped + 1)
                return None
            self._seen[name] = (start, used + 1, 0)
            while len(self._seen) > 10_000:
                self._seen.popitem(last=False)
            return skipped


def _require(caller: Caller, role: str, method: Action) -> None:
    if _RANK[caller.key.role] < _RANK[role]:
        raise Forbidden(method, role)


def _actor(caller: Caller) -> Actor:
    return Actor(
        name=f"key:{caller.key.key_id}", request_id=caller.request_id, key_id=caller.key.key_id
    )


def _audit_team(conn: psycopg.Connection, caller: Caller, team_id: str | None) -> str | None:
    """The team whose audit rows a caller asked for: a team key's own team, whatever it asks;
    another team (or one of another org) is not found."""
    own = caller.key.team_id
    if team_id is None:
        return own
    team = tenancy.find_team(conn, caller.key.org_id, team_id)
    if team is None or team.id != team_id or own not in (None, team_id):
        raise NotFound("team", team_id, field="team_id")
    return team_id


def _reaches(caller: Caller, row: tenancy.ApiKeyRow) -> bool:
    """A team key reaches the keys of its own team only; an org key reaches the whole org's."""
    return caller.key.team_id is None or row.team_id == caller.key.team_id
