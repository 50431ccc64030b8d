"""Team and org memories on the team server: add, list, get, update, deprecate, forget, the change
log machines pull, and the usage they report. The tenant is the caller's key: every query is
keyed by its org and the teams it reaches, inside a tenant transaction (row-level security).

Edits keep a memory's id and add a version: the writer that locks the row first is ordered
first, the later one wins, and the earlier text stays in the history as a deprecated version.
Every change takes the org's next change number in the same transaction, so a machine pulling
after number N has seen every change up to N. A write that carries an idempotency key is
answered from its first reply when sent again (an outbox replaying after a lost reply)."""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec
import psycopg
from psycopg.errors import UniqueViolation

from reos_memory.errors import Conflict, Forbidden, InvalidInput, NotFound
from reos_memory.models import MemoryMetrics, iso
from reos_memory.squirrel import activity, api
from reos_memory.squirrel import team_api as tapi
from reos_memory.squirrel.memory.policy import load_policy
from reos_memory.squirrel.projects import normalize_prefix
from reos_memory.squirrel.redaction import redact_folded
from reos_memory.store.team import connection as pg
from reos_memory.store.team import memories as pgsql
from reos_memory.store.team import shares as share_sql
from reos_memory.store.team import tenancy
from reos_memory.team.actions import Action

T = TypeVar("T")
RANK = {"reader": 0, "writer": 1, "admin": 2}
CALLERS_TEAM = ""  # audit(): the row is the caller's team's (no team id is empty)
# A memory's embedding as pgvector's text form ('[0.1,0.2,...]'); None: not embedded.
Embed = Callable[[str], "str | None"]


@dataclass(frozen=True)
class NewMemory:
    """A memory ready to insert: its columns (text redacted) and its embedding."""

    fields: dict[str, Any]
    embedding: str | None


class Who(msgspec.Struct, frozen=True):
    """The verified caller as this module needs it (from `team.service.Caller`)."""

    org_id: str
    team_id: str | None
    role: str
    key_id: str
    request_id: str


# what one key's reports count of one memory in a day (opportunities, and uses among them):
# a machine of a busy member injects a memory a few dozen times a day; a reader key posting a
# million uses counts this much and no more
USAGE_DAILY_BOUND = 500
RECEIPT_SECRET = "usage_receipts"  # the database's secret receipts are signed with
_RECEIPT = re.compile(r"r([0-9]{1,18})\.([0-9a-f]{32})")


def receipt(secret: bytes, who: Who, memory_id: str, seq: int) -> str:
    """The proof that change `seq` of `memory_id` was delivered to key `who`: what the key's
    usage reports of that memory name (`received`)."""
    text = f"{who.org_id}\n{who.key_id}\n{memory_id}\n{seq}".encode()
    return f"r{seq}.{hmac.new(secret, text, hashlib.sha256).hexdigest()[:32]}"


def received(secret: bytes, who: Who, memory_id: str, context_id: str) -> bool:
    """Whether `context_id` is a receipt of a delivery of `memory_id` to key `who`."""
    m = _RECEIPT.fullmatch(context_id)
    return m is not None and hmac.compare_digest(
        receipt(secret, who, memory_id, int(m[1])), context_id
    )


def require(who: Who, role: str, method: Action) -> None:
    if RANK[who.role] < RANK[role]:
        raise Forbidden(method, role)


def reach(who: Who) -> pgsql.Reach:
    return pgsql.Reach(who.org_id, None if who.team_id is None else (who.team_id,))


def writable(who: Who, row: dict[str, Any]) -> bool:
    """Whether the key may change a memory it reaches: a key of the org (no team) any of the
    org's; a team key only its own team's. A team key reads the org's memories but never
    changes them."""
    return who.team_id is None or row["team_id"] == who.team_id


def check_writable(who: Who, row: dict[str, Any], method: Action) -> None:
    if not writable(who, row):
        raise Forbidden(
            method,
            "writer",
            "a team's key changes only its team's memories; an org-wide memory needs a key of"
            " the org (one with no team)",
        )


def vector_text(row: Any) -> str:
    """A vector as pgvector's text input."""
    return "[" + ",".join(f"{float(x):.7g}" for x in row) + "]"


def to_memory(row: dict[str, Any]) -> tapi.TeamMemory:
    team = row["team_id"]
    return tapi.TeamMemory(
        id=row["id"],
        project_id=row["project_id"],
        scope=row["scope"],
        owner_type=row["owner_type"],
        owner_id=team if team is not None else row["org_id"],
        kind=row["kind"],
        tier=row["tier"],
        key=row["key"],
        text=row["text"],
        status=row["status"],
        confidence=row["confidence"],
        expires_at=None if row["expires_at"] is None else iso(row["expires_at"]),
        created_at=iso(row["created_at"]),
        updated_at=iso(row["updated_at"]),
        polarity=row["polarity"],
        path_prefix=row["path_prefix"],
        version=row["version"],
        seq=row["seq"],
        created_by=row["created_by"],
        updated_by=row["updated_by"],
        origin=row["origin"],
    )


def to_metrics(row: dict[str, Any] | None, memory_id: str) -> MemoryMetrics | None:
    if row is None:
        return None
    return MemoryMetrics(
        memory_id=memory_id,
        use_count=row["use_count"],
        opportunities=row["opportunities"],
        suspected_regret_hits=row["suspected_regret_hits"],
        estimated_regret_saved=row["estimated_regret_saved"],
        last_used_at=None if row["last_used_at"] is None else iso(row["last_used_at"]),
        last_evaluated_at=(
            None if row["last_evaluated_at"] is None else iso(row["last_evaluated_at"])
        ),
    )


def clean_text(text: str) -> str:
    """Text as stored: secrets redacted (again: members' machines redact first), spacing folded."""
    return redact_folded(text)


def no_root(project_root: str | None) -> None:
    if project_root is not None:
        raise InvalidInput(
            "project_root", "the team server has no files: name the project by project_id"
        )


class Counts:
    """Counts of memories, each taken again at most every `ttl_s`: how many live memories a
    reach holds (the share of memories holding a word is a ratio to it; a minute-old total moves
    it by a hair) and whether a filtered reach is small enough for exact vector search (on a
    minute-old size the other search still finds the right rows, only slower or faster)."""

    def __init__(self, ttl_s: float = 60.0) -> None:
        self.ttl_s = ttl_s
        self._seen: dict[Hashable, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, count: Callable[[], int]) -> int:
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        n = count()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen.clear()
            self._seen[key] = (now, n)
        return n


class TeamMemories:
    """The memory methods of the team server over a connection pool."""

    def __init__(
        self,
        connection: Callable[[], Any],
        embed: Embed,
        dedup_threshold: float = 0.92,
        policy_file: str | None = None,
    ) -> None:
        self._connection = connection  # a context manager factory: the pool's connection()
        self._receipt_secret: bytes | None = None  # (read from the database at first use)
        self._embed = embed
        self.dedup_threshold = dedup_threshold
        # the server's memory policy: the shipped default, then the operator's file; the team
        # server has no project checkout, so no project file takes part
        self.policy = load_policy(policy_file, None)
        self.semantic = False  # set once an embedding was made
        self.counts = Counts()

    def nearest(
        self,
        conn: psycopg.Connection,
        rch: pgsql.Reach,
        filters: pgsql.Filters,
        qvec: str,
        k: int,
    ) -> list[tuple[str, float]]:
        """The `k` memories of the filtered reach nearest `qvec`: exact for a small reach, HNSW
        with an iterative scan for a large one (store/team/memories.py: `nearest`)."""
        size = self.counts.get(
            ("size", rch, filters),
            lambda: pgsql.reach_size(conn, rch, filters, pgsql.EXACT_BELOW + 1),
        )
        return pgsql.nearest(conn, rch, filters, qvec, k, exact=size <= pgsql.EXACT_BELOW)

    def embed(self, text: str) -> str | None:
        """`text`'s vector (pgvector's text form), None without an embedder."""
        vec = self._embed(text)
        if vec is not None:
            self.semantic = True
        return vec

    def policy_get(self, p: api.PolicyParams) -> api.PolicyResult:
        no_root(p.project_root)
        return api.PolicyResult(policy=self.policy.raw, sources=self.policy.sources)

    def status(self, who: Who) -> tapi.TeamStatusResult:
        """What the key reaches: memories by status, kind and tier; episodes by outcome;
        pending shares; the org's last change number."""
        r = reach(who)
        with self.tenant(who) as conn:
            memories = {c: pgsql.count_by(conn, r, c) for c in ("status", "kind", "tier")}
            episodes = pgsql.episodes_by_outcome(conn, r)
            pending = share_sql.pending_count(conn, r)
            last = pgsql.last_seq(conn, who.org_id)
        return tapi.TeamStatusResult(
            org_id=who.org_id,
            team_id=who.team_id,
            role=who.role,
            memories={f"by_{c}": v for c, v in memories.items()},
            episodes=episodes,
            pending_shares=pending,
            last_seq=last,
            writer="rules",
            semantic_available=self.semantic,
        )

    def _secret(self, conn: psycopg.Connection) -> bytes:
        """The database's receipt secret, read once."""
        if self._receipt_secret is None:
            self._receipt_secret = pgsql.server_secret(conn, RECEIPT_SECRET).encode()
        return self._receipt_secret

    @contextmanager
    def tenant(self, who: Who) -> Iterator[psycopg.Connection]:
        with self._connection() as conn, pg.tenant_transaction(conn, who.org_id):
            yield conn

    # -- owners ----------------------------------------------------------------------------

    def owner_team(
        self, conn: psycopg.Connection, who: Who, owner_type: str | None, owner_id: str | None
    ) -> str | None:
        """The team a write goes to (None: the org). A team key writes its own team's memories;
        an org key writes the org's, or a team's of its org it names. Another org's or team's id
        is not found, so its existence does not leak."""
        if owner_type == "user":
            raise InvalidInput(
                "owner_type",
                "team or org: the team server keeps shared memories; a personal one stays on"
                " its member's machine (share it with `sqrl share`)",
            )
        if owner_type is None:
            owner_type = "org" if who.team_id is None else "team"
        if owner_type == "org":
            if owner_id is not None and owner_id != who.org_id:
                raise NotFound("org", owner_id, field="owner_id")
            if who.team_id is not None:
                raise InvalidInput(
                    "owner_type", "team: this key belongs to one team and writes only its memories"
                )
            return None
        if who.team_id is not None:
            if owner_id is not None and owner_id != who.team_id:
                team = tenancy.find_team(conn, who.org_id, owner_id)
                if team is None or team.id != who.team_id:
                    raise NotFound("team", owner_id, field="owner_id")
            return who.team_id
        if owner_id is None:
            raise InvalidInput("owner_id", "the team (name or id) of a team memory")
        team = tenancy.find_team(conn, who.org_id, owner_id)
        if team is None:
            raise NotFound("team", owner_id, field="owner_id")
        return team.id

    def owner_filter(
        self, conn: psycopg.Connection, who: Who, owner_type: str | None, owner_id: str | None
    ) -> tuple[str, str] | None:
        """A read's owner filter: the org's own memories, or one team's the key reaches."""
        if owner_type is None:
            return None
        if owner_type == "user":
            raise InvalidInput(
                "owner_type", "team or org: the team server keeps no personal memory"
            )
        if owner_type == "org":
            if owner_id is not None and owner_id != who.org_id:
                raise NotFound("org", owner_id, field="owner_id")
            return ("org", who.org_id)
        if owner_id is None:
            if who.team_id is None:
                raise InvalidInput("owner_id", "the team (name or id) to filter by")
            return ("team", who.team_id)
        team = tenancy.find_team(conn, who.org_id, owner_id)
        if team is None or (who.team_id is not None and team.id != who.team_id):
            raise NotFound("team", owner_id, field="owner_id")
        return ("team", team.id)

    # -- idempotency -----------------------------------------------------------------------

    def once(
        self,
        who: Who,
        method: Action,
        params: msgspec.Struct,
        idem_key: str | None,
        result_type: type[T],
        work: Callable[[psycopg.Connection], T],
    ) -> T:
        """Run `work` in one tenant transaction; with an idempotency key, a repeat of the same
        request by the same API key gets the stored reply (a different request under a key it
        used is a conflict); another API key's idempotency keys are its own."""
        if idem_key is None:
            with self.tenant(who) as conn:
                return work(conn)
        digest = _request_hash(method, params)
        for _ in range(2):  # a concurrent twin commits first: read its reply on the retry
            try:
                with self.tenant(who) as conn:
                    stored = pgsql.idempotent_reply(conn, who.org_id, who.key_id, idem_key)
                    if stored is not None:
                        if stored[0] != method or stored[1] != digest:
                            raise Conflict(
                                "this idempotency_key was used for a different request",
                                field="$.idempotency_key",
                            )
                        return msgspec.convert(stored[2], result_type)
                    out = work(conn)
                    pgsql.remember_reply(
                        conn, who.org_id, idem_key, who.key_id, method, digest,
                        msgspec.to_builtins(out),
                    )  # fmt: skip
                    return out
            except UniqueViolation:
                continue
        raise Conflict("this idempotency_key is in use by a request still running")

    # -- writes ----------------------------------------------------------------------------

    def add(self, who: Who, p: tapi.TeamMemoryAddParams) -> tapi.TeamMemoryResult:
        """A new team or org memory (writer)."""
        method: Action = "squirrel/memories/add"
        require(who, "writer", method)
        no_root(p.project_root)
        new = self.new_memory(
            scope=p.scope, project_id=p.project_id, kind=p.kind, tier=p.tier, key=p.key,
            text=p.text, confidence=p.confidence, ttl_days=p.ttl_days, polarity=p.polarity,
            path_prefix=p.path_prefix,
        )  # fmt: skip

        def work(conn: psycopg.Connection) -> tapi.TeamMemoryResult:
            team_id = self.owner_team(conn, who, p.owner_type, p.owner_id)
            return self.write_new(conn, who, method, team_id, new)

        return self.once(who, method, p, p.idempotency_key, tapi.TeamMemoryResult, work)

    def new_memory(
        self,
        *,
        scope: str,
        project_id: str | None,
        kind: str,
        tier: str,
        key: str | None,
        text: str,
        polarity: int,
        path_prefix: str | None,
        confidence: float | None = None,
        ttl_days: int | None = None,
        origin: str = "rpc",
    ) -> NewMemory:
        """A memory to write, checked, redacted and embedded (before any transaction opens)."""
        clean = clean_text(text)
        return NewMemory(
            fields={
                "project_id": self._project(scope, project_id),
                "scope": scope,
                "kind": kind,
                "tier": tier,
                "key": key,
                "text": clean,
                "status": "provisional",
                "confidence": confidence,
                "expires_at": _expiry(ttl_days),
                "polarity": polarity,
                "path_prefix": self._prefix(scope, path_prefix),
                "origin": origin,
            },
            embedding=self.embed(clean),
        )

    def write_new(
        self,
        conn: psycopg.Connection,
        who: Who,
        method: Action,
        team_id: str | None,
        new: NewMemory,
    ) -> tapi.TeamMemoryResult:
        """Write `new` for that team (None: the org) unless a live memory of the same owner and
        project says the same already; a key already held gives its holder a new version (the
        later write wins)."""
        f, vec = new.fields, new.embedding
        if f["key"] is not None:
            holder = pgsql.live_key_holder(conn, who.org_id, team_id, f["project_id"], f["key"])
            if holder is not None:
                changes = {n: f[n] for n in ("text", "kind", "tier", "polarity")}
                locked = self._locked(conn, who, holder, method)
                row = self._new_version(conn, who, changes, vec, locked)
                self.audit(conn, who, method, holder, team_id=team_id)
                return tapi.TeamMemoryResult(memory=to_memory(row), replaced=[holder])
        same = self._duplicate(conn, who, team_id, f["project_id"], f["text"], vec)
        if same is not None:
            kept = pgsql.get(conn, reach(who), same)
            assert kept is not None
            return tapi.TeamMemoryResult(memory=to_memory(kept), deduplicated_into=same)
        seq = pgsql.next_seq(conn, who.org_id)
        row = pgsql.insert(
            conn,
            {
                **f,
                "org_id": who.org_id,
                "team_id": team_id,
                "id": f"tmem-{uuid.uuid4().hex[:20]}",
                "owner_type": "org" if team_id is None else "team",
                "embedding": vec,
                "seq": seq,
                "created_by": who.key_id,
                "updated_by": who.key_id,
            },
        )
        pgsql.record_change(conn, who.org_id, seq, row["id"], team_id, "upsert")
        self.audit(conn, who, method, row["id"], team_id=team_id)
        return tapi.TeamMemoryResult(memory=to_memory(row))

    def update(self, who: Who, p: tapi.TeamMemoryUpdateParams) -> tapi.TeamMemoryResult:
        """A new version of a memory the key reaches (writer). Without `expected_version` the
        later write wins; with it, a memory changed meanwhile is a conflict."""
        method: Action = "squirrel/memories/update"
        require(who, "writer", method)
        changes: dict[str, Any] = {}
        for name in ("kind", "tier", "key", "status", "confidence", "polarity"):
            value = getattr(p, name)
            if value is not None:
                changes[name] = value
        if p.clear_key:
            changes["key"] = None
        if p.ttl_days is not None:
            changes["expires_at"] = _expiry(p.ttl_days)
        if p.clear_ttl:
            changes["expires_at"] = None
        vec = None
        if p.text is not None:
            changes["text"] = clean_text(p.text)
            vec = self.embed(changes["text"])
        if not changes:
            raise InvalidInput("text", "at least one field to change")

        def work(conn: psycopg.Connection) -> tapi.TeamMemoryResult:
            row = self._locked(conn, who, p.memory_id, method)
            if p.expected_version is not None and row["version"] != p.expected_version:
                raise Conflict(
                    f"memory {p.memory_id!r} is at version {row['version']}, not"
                    f" {p.expected_version}",
                    field="$.expected_version",
                    version=row["version"],
                )
            new_key = changes.get("key", row["key"])
            if new_key is not None and new_key != row["key"]:
                holder = pgsql.live_key_holder(
                    conn, who.org_id, row["team_id"], row["project_id"], new_key
                )
                if holder is not None and holder != row["id"]:
                    raise Conflict(
                        f"key {new_key!r} is held by memory {holder!r}",
                        field="$.key",
                        existing_id=holder,
                    )
            out = self._new_version(conn, who, changes, vec, row)
            self.audit(conn, who, method, row["id"], team_id=row["team_id"])
            return tapi.TeamMemoryResult(memory=to_memory(out))

        return self.once(who, method, p, p.idempotency_key, tapi.TeamMemoryResult, work)

    def deprecate(self, who: Who, p: tapi.TeamMemoryIdParams) -> tapi.TeamMemoryResult:
        """Mark a memory deprecated (writer): a new version, so the change reaches every cache."""
        method: Action = "squirrel/memories/deprecate"
        require(who, "writer", method)

        def work(conn: psycopg.Connection) -> tapi.TeamMemoryResult:
            row = self._locked(conn, who, p.memory_id, method)
            if row["status"] != "deprecated":
                row = self.deprecate_locked(conn, who, row)
                self.audit(conn, who, method, row["id"], team_id=row["team_id"])
            return tapi.TeamMemoryResult(memory=to_memory(row))

        return self.once(who, method, p, p.idempotency_key, tapi.TeamMemoryResult, work)

    def deprecate_locked(
        self, conn: psycopg.Connection, who: Who, row: dict[str, Any]
    ) -> dict[str, Any]:
        """A new version of a locked live memory, deprecated."""
        return self.new_version_locked(conn, who, row, {"status": "deprecated"})

    def new_version_locked(
        self, conn: psycopg.Connection, who: Who, row: dict[str, Any], changes: dict[str, Any]
    ) -> dict[str, Any]:
        """A new version of a memory the caller locked, with `changes` (text unchanged)."""
        return self._new_version(conn, who, changes, None, row)

    def forget(self, who: Who, p: tapi.TeamMemoryIdParams) -> tapi.TeamForgetResult:
        """Delete a memory with its history and metrics (writer); caches drop it on their next
        pull. Forgetting one already gone (of this reach) is not an error: forgotten is False."""
        method: Action = "squirrel/memories/forget"
        require(who, "writer", method)

        def work(conn: psycopg.Connection) -> tapi.TeamForgetResult:
            row = pgsql.get(conn, reach(who), p.memory_id, lock=True)
            if row is None:
                return tapi.TeamForgetResult(forgotten=False, memory_id=p.memory_id)
            check_writable(who, row, method)
            seq = pgsql.next_seq(conn, who.org_id)
            pgsql.delete(conn, who.org_id, row["id"])
            pgsql.record_change(conn, who.org_id, seq, row["id"], row["team_id"], "forget")
            self.audit(conn, who, method, row["id"], team_id=row["team_id"])
            return tapi.TeamForgetResult(forgotten=True, memory_id=row["id"])

        return self.once(who, method, p, p.idempotency_key, tapi.TeamForgetResult, work)

    # -- reads -----------------------------------------------------------------------------

    def get(self, who: Who, p: api.MemoryIdParams) -> tapi.TeamMemoryGetResult:
        with self.tenant(who) as conn:
            row = pgsql.get(conn, reach(who), p.memory_id)
            if row is None:
                raise NotFound("memory", p.memory_id, field="memory_id")
            metrics = pgsql.metrics_of(conn, who.org_id, [row["id"]]).get(row["id"])
            hist = pgsql.history(conn, who.org_id, row["id"])
            eps = pgsql.episodes_of(conn, reach(who), row["id"])
            ctxs = pgsql.contexts_of(conn, reach(who), row["id"])
        return tapi.TeamMemoryGetResult(
            episodes=[
                tapi.TeamEpisodeRef(
                    episode_id=e["id"],
                    at=iso(e["created_at"]),
                    project_id=e["project_id"],
                    outcome=e["outcome"],
                )
                for e in eps
            ],
            injections=[
                tapi.TeamInjection(
                    context_id=c["id"],
                    created_at=iso(c["created_at"]),
                    session_id=c["session_id"],
                    task=c["task"],
                    rank=int(c["rank"] or 0),
                    feedback=c["feedback"],
                )
                for c in ctxs
            ],
            memory=to_memory(row),
            metrics=to_metrics(metrics, row["id"]),
            history=[
                tapi.MemoryVersion(
                    **{
                        **h,
                        "expires_at": None if h["expires_at"] is None else iso(h["expires_at"]),
                        "replaced_at": iso(h["replaced_at"]),
                    }
                )
                for h in hist
            ],
        )

    def list(self, who: Who, p: api.MemoryListParams) -> tapi.TeamMemoryListResult:
        """Memories the key reaches, newest change first (or in `sort`), paged by an opaque
        cursor."""
        no_root(p.project_root)
        sort = p.sort or "updated"
        after = _decode_cursor(p.cursor) if sort == "updated" else None
        offset = _decode_offset(p.cursor) if sort != "updated" else 0
        with self.tenant(who) as conn:
            owner = self.owner_filter(conn, who, p.owner_type, p.owner_id)
            filters = pgsql.Filters(
                project_id=p.project_id,
                include_global=p.include_global,
                statuses=tuple(p.statuses),
                kinds=None if p.kinds is None else tuple(p.kinds),
                tiers=None if p.tiers is None else tuple(p.tiers),
                scope=p.scope,
                owner=owner,
                key_prefix=p.key_prefix,
                text=p.text,
            )
            if sort == "updated":
                rows = pgsql.list_page(conn, reach(who), filters, after, p.limit + 1)
            else:
                rows = pgsql.list_sorted(conn, reach(who), filters, sort, offset, p.limit + 1)
            page = rows[: p.limit]
            metrics = pgsql.metrics_of(conn, who.org_id, [r["id"] for r in page])
        more = len(rows) > p.limit
        nxt = None
        if more and page:
            nxt = _encode_cursor(page[-1]) if sort == "updated" else f"o:{offset + len(page)}"
        return tapi.TeamMemoryListResult(
            memories=[to_memory(r) for r in page],
            metrics=[to_metrics(metrics.get(r["id"]), r["id"]) for r in page],
            next_cursor=nxt,
        )

    def activity(self, who: Who, p: api.ActivityParams) -> api.ActivityResult:
        """squirrel/activity over what the key reaches: memories learned by kind, contexts given
        and memories in them, episodes sent to the team's writer (the offline writer: no
        tokens), day by day."""
        no_root(p.project_root)
        days = activity.day_range(p.days)
        with self.tenant(who) as conn:
            counted = pgsql.activity(conn, reach(who), days[0], p.project_id)
        return activity.assemble(p.project_id, days, counted)

    def pull(self, who: Who, p: tapi.PullParams) -> tapi.PullResult:
        """The changes after the machine's cursor that the key reaches, in order."""
        with self.tenant(who) as conn:
            # the org's last number first: every change up to it has committed (numbers commit
            # in order), so the page read after it cannot miss one of them; with nothing more,
            # the cursor moves to that number (changes of teams this key does not reach never
            # need to be read again)
            last = pgsql.last_seq(conn, who.org_id)
            if p.after_seq > last or (
                p.after_seq > 0
                and p.after_mark is not None
                and pgsql.mark_of(conn, who.org_id, p.after_seq) != p.after_mark
            ):  # the machine's cursor is in another history: a restored or replaced database
                return tapi.PullResult(changes=[], next_seq=0, more=True, reset=True)
            rows, more = pgsql.changes_after(conn, reach(who), p.after_seq, p.limit)
            next_seq = rows[-1][0] if more else max(last, p.after_seq, *[r[0] for r in rows[-1:]])
            mark = pgsql.mark_of(conn, who.org_id, next_seq)
            secret = self._secret(conn)
        changes = [
            tapi.Change(
                seq=s,
                op="forget" if op == "forget" or row is None else "upsert",  # type: ignore[arg-type]
                memory_id=mid,
                memory=None if row is None else to_memory(row),
                receipt=None if op == "forget" or row is None else receipt(secret, who, mid, s),
            )
            for s, op, mid, row in rows
        ]
        return tapi.PullResult(changes=changes, next_seq=next_seq, more=more, next_mark=mark)

    def report_usage(self, who: Who, p: tapi.UsageParams) -> tapi.UsageResult:
        """Add the counts a member's machine reports for team memories it injected (reader: using
        memories is what every key does). Each item names the receipt of the delivery (a pull)
        that brought the memory to this same key: ids the key cannot see are listed (`unknown`),
        items whose receipt is not of a delivery of that memory to this key are listed
        (`not_received`), and neither is counted; what goes over the key's daily bound for a
        memory, all its deliveries together (USAGE_DAILY_BOUND; uses within opportunities,
        regret hits within uses), is not counted either (`clipped`)."""
        method: Action = "squirrel/usage/report"

        def work(conn: psycopg.Connection) -> tapi.UsageResult:
            ids = list(dict.fromkeys(i.memory_id for i in p.items))
            seen = pgsql.get_many(conn, reach(who), ids)
            secret = self._secret(conn)
            applied = 0
            clipped: list[str] = []
            not_received: list[str] = []
            pgsql.prune_usage_days(conn, who.org_id)
            for item in p.items:
                if item.memory_id not in seen:
                    continue
                if not received(secret, who, item.memory_id, item.context_id):
                    not_received.append(item.memory_id)
                    continue
                wanted = (item.opportunities, item.uses, item.regret_hits)
                got = pgsql.claim_usage(
                    conn, who.org_id, who.key_id, item.memory_id, wanted, USAGE_DAILY_BOUND
                )
                if got != wanted:
                    clipped.append(item.memory_id)
                if any(got):
                    pgsql.note_reporter(conn, who.org_id, who.key_id, [item.memory_id])
                saved = item.regret_saved * (got[2] / wanted[2]) if wanted[2] else 0.0
                pgsql.add_metrics(
                    conn,
                    who.org_id,
                    item.memory_id,
                    opportunities=got[0],
                    uses=got[1],
                    regret_hits=got[2],
                    regret_saved=saved,
                    last_used_at=_parse_time(item.last_used_at),
                )
                applied += 1
            if applied:
                self.audit(conn, who, method, *[i for i in ids if i in seen])
            return tapi.UsageResult(
                applied=applied,
                unknown=[i for i in ids if i not in seen],
                clipped=clipped,
                not_received=list(dict.fromkeys(not_received)),
            )

        return self.once(who, method, p, p.idempotency_key, tapi.UsageResult, work)

    # -- helpers ---------------------------------------------------------------------------

    def _project(self, scope: str, project_id: str | None) -> str | None:
        if scope == "global":
            if project_id is not None:
                raise InvalidInput(
                    "scope", "a global memory belongs to no project: drop project_id"
                )
            return None
        if project_id is None:
            raise InvalidInput("project_id", f"scope {scope!r} needs the project's id")
        return project_id

    def _prefix(self, scope: str, path_prefix: str | None) -> str | None:
        if scope != "repo_path":
            return None
        if not path_prefix:
            raise InvalidInput("path_prefix", "scope repo_path needs path_prefix")
        return normalize_prefix(path_prefix)

    def _locked(
        self, conn: psycopg.Connection, who: Who, memory_id: str, method: Action
    ) -> dict[str, Any]:
        """The memory, locked, when the key reaches it (else not found) and may change it."""
        row = pgsql.get(conn, reach(who), memory_id, lock=True)
        if row is None:
            raise NotFound("memory", memory_id, field="memory_id")
        check_writable(who, row, method)
        return row

    def _new_version(
        self,
        conn: psycopg.Connection,
        who: Who,
        changes: dict[str, Any],
        vec: str | None,
        locked: dict[str, Any],
    ) -> dict[str, Any]:
        """A new version of the memory `locked` (a row the caller locked and may change)."""
        seq = pgsql.next_seq(conn, who.org_id)
        row = pgsql.new_version(conn, locked, changes, by=who.key_id, seq=seq, embedding=vec)
        pgsql.record_change(conn, who.org_id, seq, row["id"], row["team_id"], "upsert")
        return row

    def _duplicate(
        self,
        conn: psycopg.Connection,
        who: Who,
        team_id: str | None,
        project_id: str | None,
        text: str,
        vec: str | None,
    ) -> str | None:
        """A live memory of the same owner and project saying the same thing, if any."""
        same = pgsql.same_text(conn, who.org_id, team_id, project_id, text)
        if same is not None or vec is None:
            return same
        owner = ("team", team_id) if team_id is not None else ("org", who.org_id)
        near = self.nearest(
            conn,
            pgsql.Reach(who.org_id, None if team_id is None else (team_id,)),
            pgsql.Filters(project_id=project_id, include_global=project_id is None, owner=owner),
            vec,
            3,
        )
        for mid, cos in near:
            if cos >= self.dedup_threshold:
                return mid
        return None

    def audit(
        self,
        conn: psycopg.Connection,
        who: Who,
        method: Action,
        *ids: str,
        team_id: str | None = CALLERS_TEAM,
    ) -> None:
        """The audit row of a write: `team_id` is the team of what it changed (None: the
        org's), by default the caller's; team/audit/list filters by it."""
        if team_id == CALLERS_TEAM:
            team_id = who.team_id
        tenancy.append_audit(
            conn,
            org_id=who.org_id,
            key_id=who.key_id,
            actor=f"key:{who.key_id}",
            request_id=who.request_id,
            method=method,
            target_ids=list(ids),
            team_id=team_id,
        )


def _request_hash(method: str, params: msgspec.Struct) -> str:
    body = msgspec.to_builtins(params)
    if isinstance(body, dict):
        body.pop("idempotency_key", None)
    return hashlib.sha256(method.encode() + b"\0" + msgspec.json.encode(body)).hexdigest()


def _expiry(ttl_days: int | None) -> datetime | None:
    return None if ttl_days is None else datetime.now(UTC) + timedelta(days=ttl_days)


def _parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput("last_used_at", "an ISO 8601 time") from None


def _encode_cursor(row: dict[str, Any], field: str = "updated_at") -> str:
    """A keyset cursor after `row` in (`field`, id) order."""
    return f"{row[field].timestamp():.6f}|{row['id']}"


def _decode_offset(cursor: str | None) -> int:
    """The place a cursor of a sorted list continues from (`o:N`)."""
    if cursor is None:
        return 0
    tag, _, n = cursor.partition(":")
    if tag != "o" or not n.isdigit():
        raise InvalidInput("cursor", "a next_cursor returned by squirrel/memories/list")
    return int(n)


def _decode_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    if cursor is None:
        return None
    ts, sep, mid = cursor.partition("|")
    try:
        if not sep or not mid:
            raise ValueError
        return datetime.fromtimestamp(float(ts), UTC), mid
    except (ValueError, OverflowError, OSError):  # not a number, or not a time
        raise InvalidInput("cursor", "a next_cursor returned by squirrel/memories/list") from None
