"""`TeamSync`: this machine's side of a team server (issue 21).

* **Pull.** The server keeps an ordered change log per org; a machine keeps a cursor (`last_seq`)
  and applies `squirrel/changes/pull` pages, each in one transaction with its cursor advance, so
  a crash between pages loses nothing and applies nothing twice. Cached memories are rows of
  `memories` (owner_type team/org) embedded locally, marked in `team_memories`; a pull only
  touches marked rows of its own server and org, never a user's own memories.
* **Outbox.** Team writes are queued with an idempotency key and sent in order; the server
  answers a replayed key with its first reply and changes nothing, so a reply lost on the way
  back costs nothing. A server that is down keeps items pending (nothing lost); one that refuses
  an item (a bad request, a role missing) gets it marked refused with its error, never resent.
* **Usage.** Opportunities, uses and regret counted locally for cached memories are reported in
  batches (`squirrel/usage/report`) through the same outbox, so team CR-Memory sees them all.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import apsw
import msgspec

from reos_memory.models import Memory, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel import team_api as wire
from reos_memory.squirrel.sync.client import TeamCallError, TeamClient
from reos_memory.store import Database
from reos_memory.store import team_cache as team_cache_sql
from reos_memory.store.team_cache import SyncState

USAGE: wire.TeamMethod = "squirrel/usage/report"


class WhoAmI(msgspec.Struct, kw_only=True):
    """What `team/whoami` says of a key (the fields this side needs)."""

    org_id: str
    team_id: str | None
    role: str
    key_id: str


@dataclass(frozen=True)
class SyncSettings:
    pull_interval_s: float = 60.0  # a cache older than this is pulled before it answers
    context_timeout_s: float = 1.0  # the most a get_task_context waits on the server
    page_limit: int = 500
    max_attempts: int = 8  # an item the server keeps failing on (its bug) is refused after this
    usage_batch: int = 1000
    share_episodes: bool = False  # cut episodes go to the team's Memory Writer (config)


@dataclass
class Report:
    """What one sync did (see api.TeamSyncResult)."""

    error: str | None = None
    sent: int = 0
    refused: int = 0
    upserts: int = 0
    forgets: int = 0
    skipped: int = 0
    complete: bool = False
    restarted: bool = False  # the server's log no longer held the cursor: pulled from the start


class _Moved(Exception):
    """The cursor moved under this page (another process applied it first)."""


class TeamSync:
    """Pull, outbox and usage for one team server and API key."""

    def __init__(
        self,
        db: Database,
        vectors: Any,
        client: TeamClient,
        settings: SyncSettings,
        log: Any = None,
    ) -> None:
        self.db = db
        self.vectors = vectors
        self.client = client
        self.settings = settings
        self.log = log
        self._lock = threading.Lock()  # one sync at a time per process
        self._attempted: float | None = None  # monotonic time of this process's last attempt
        self._last_error: str | None = None

    @property
    def server(self) -> str:
        return self.client.server

    # -- reading the state ---------------------------------------------------------------------

    def state(self) -> SyncState | None:
        """What this machine knows of the key's org (None: it never reached the server)."""
        return self.db.read(lambda c: team_cache_sql.sync_state(c, self.server, self.client.key_id))

    def context_info(self) -> api.ContextTeam:
        """The cache's standing for a context, after a pull when it is due (bounded by
        `context_timeout_s`; a slow or down server leaves the cache answering). Nothing on the
        team side may cost the user a context: a failure here is logged and the cache answers."""
        if self._due():
            try:
                self.sync(self.settings.context_timeout_s, wait_s=0)
            except Exception as exc:  # a bug or a busy database: the context goes on
                self._last_error = f"internal: {type(exc).__name__}"
                if self.log:
                    self.log.exception("team_sync_crashed", server=self.server)
        st = self.state()
        error = self._last_error if self._attempted is not None else (st and st.last_error)
        if st is None:
            return api.ContextTeam(status="offline", server=self.server, error=error or None)
        org = st.org_id
        cached = self.db.read(lambda c: team_cache_sql.cached_count(c, self.server, org))
        return api.ContextTeam(
            status="offline" if error or st.last_pull_at is None else "ok",
            server=self.server,
            org_id=org,
            last_pull_at=st.last_pull_at,
            error=error or None,
            cached=sum(cached.values()),
        )

    def owners(self) -> list[tuple[str, str]]:
        """The team and org owners whose cached memories a context of this key may use."""
        st = self.state()
        if st is None:
            return []
        return self.db.read(lambda c: team_cache_sql.cached_owners(c, self.server, st.org_id))

    def _due(self) -> bool:
        now = time.monotonic()
        interval = self.settings.pull_interval_s
        if self._attempted is not None and now - self._attempted < interval:
            return False
        st = self.state()
        if st is None or st.last_pull_at is None:
            return True
        pulled = datetime.fromisoformat(st.last_pull_at)
        age = (datetime.now(UTC) - pulled).total_seconds()
        return age >= interval

    # -- sync: drain the outbox, then pull -----------------------------------------------------

    def sync(self, timeout_s: float, *, wait_s: float | None = None) -> Report:
        """Send what the outbox holds, then pull the change log to its end, within `timeout_s`.
        A sync already running in this process is waited for `wait_s` at most (None: as long as
        it takes; 0: not at all)."""
        if wait_s is None:
            got = self._lock.acquire()
        else:
            got = self._lock.acquire(timeout=wait_s) if wait_s > 0 else self._lock.acquire(False)
        if not got:
            return Report(error="another sync is running")
        try:
            return self._sync(time.monotonic() + timeout_s)
        finally:
            self._lock.release()

    def _sync(self, deadline: float) -> Report:
        rep = Report()
        self._attempted = time.monotonic()
        try:
            known = self.state()
            if known is not None:
                self._queue_usage(known)
            self._drain(deadline, rep)  # first: the pull brings back what it wrote
            self._pull(self._known(deadline), deadline, rep)
            self._last_error = None
        except TeamCallError as exc:
            rep.error = self._last_error = f"{exc.kind}: {exc.message}"
            if self.log:
                self.log.info("team_sync_failed", server=self.server, error=rep.error)
        self.db.write(
            lambda c: team_cache_sql.record_attempt(
                c, self.server, self.client.key_id, now_iso(), self._last_error
            )
        )
        return rep

    def _known(self, deadline: float) -> SyncState:
        """The key's org as recorded, asking the server (`team/whoami`) the first time."""
        st = self.state()
        if st is not None:
            return st
        me = self.client.call("team/whoami", {}, WhoAmI, deadline=deadline)
        self.db.write(
            lambda c: team_cache_sql.remember_key(
                c, self.server, me.org_id, self.client.key_id, me.team_id, me.role
            )
        )
        st = self.state()
        assert st is not None
        return st

    # -- pull -----------------------------------------------------------------------------------

    def _pull(self, st: SyncState, deadline: float, rep: Report) -> None:
        after, mark = st.last_seq, st.last_mark
        while time.monotonic() < deadline:
            params = wire.PullParams(
                after_seq=after, after_mark=mark, limit=self.settings.page_limit
            )
            page = self.client.call(
                "squirrel/changes/pull", params, wire.PullResult, deadline=deadline
            )
            if page.reset:
                self._restart(st, after, rep)
                fresh = self.state()
                after, mark = (fresh.last_seq, fresh.last_mark) if fresh else (0, None)
                continue
            try:
                self._apply(st, after, page, rep)
                after, mark = page.next_seq, page.next_mark
            except _Moved:
                fresh = self.state()
                after, mark = (fresh.last_seq, fresh.last_mark) if fresh else (after, mark)
                continue
            if not page.more:
                rep.complete = True
                return

    def _restart(self, st: SyncState, after: int, rep: Report) -> None:
        """The server's log no longer holds this cache's cursor (its database was restored from
        an earlier backup, or replaced): pull it again from the start."""
        if self.db.write(
            lambda c: team_cache_sql.restart(c, self.server, st.org_id, after, now_iso())
        ):
            rep.restarted = True
            if self.log:
                self.log.warning("team_log_restarted", server=self.server, cursor=after)

    def _apply(self, st: SyncState, after: int, page: wire.PullResult, rep: Report) -> None:
        """One page in one transaction with its cursor advance; the last page of a pull from
        the start after a restart also drops what it did not bring again."""
        latest: dict[str, wire.Change] = {}
        for ch in page.changes:  # in seq order: the last change of a memory is its state
            latest[ch.memory_id] = ch
        ups = [c for c in latest.values() if c.op == "upsert" and c.memory is not None]
        vectors = self._vectors([c.memory for c in ups if c.memory is not None])
        now = now_iso()
        done_at = None if page.more else now

        def tx(conn: apsw.Connection) -> tuple[int, int, int]:
            if not team_cache_sql.advance(
                conn, self.server, st.org_id, after, page.next_seq, page.next_mark, done_at
            ):
                raise _Moved
            added, gone, skipped = _put(
                conn, self.server, st.org_id, list(latest.values()), vectors, now
            )
            if done_at is not None:
                gone += team_cache_sql.sweep(conn, self.server, st.org_id)
            return added, gone, skipped

        added, gone, skipped = self.db.write(tx)
        rep.upserts += added
        rep.forgets += gone
        rep.skipped += skipped
        if skipped and self.log:
            self.log.warning("team_pull_skipped", server=self.server, count=skipped)

    def _vectors(self, mems: list[wire.TeamMemory]) -> dict[str, bytes]:
        """Vectors of the pulled memories whose text is new here (others keep theirs); none when
        the model is not usable now (they are embedded later, as any unembedded memory)."""
        if self.vectors is None or not mems:
            return {}
        have = self.db.read(lambda c: team_cache_sql.cached_texts(c, [m.id for m in mems]))
        todo = [m for m in mems if have.get(m.id) != (m.text, True)]
        emb, _reason = self.vectors.usable_model()
        if emb is None or not todo:
            return {}
        import numpy as np

        vecs = self.vectors.embed_texts([m.text for m in todo], priority=0)
        return {
            m.id: np.ascontiguousarray(v, dtype="<f4").tobytes()
            for m, v in zip(todo, vecs, strict=True)
        }

    # -- outbox -------------------------------------------------------------------------------

    def enqueue(
        self,
        method: wire.TeamMethod,
        params: msgspec.Struct,
        local_memory_id: str | None = None,
        key: str | None = None,
    ) -> team_cache_sql.OutboxItem:
        """Queue a write under `key` (default: a fresh one), set into its params as its
        idempotency key; a key already queued is that same write."""
        key = key or f"w-{uuid.uuid4().hex}"
        body = msgspec.structs.replace(params, idempotency_key=key)  # type: ignore[type-var]
        encoded = msgspec.json.encode(body).decode()
        return self.db.write(
            lambda c: team_cache_sql.enqueue(
                c, self.server, key, method, encoded, local_memory_id, now_iso()
            )
        )

    def write(
        self,
        method: wire.TeamMethod,
        params: msgspec.Struct,
        local_memory_id: str | None = None,
        key: str | None = None,
    ) -> api.TeamWrite:
        """Queue a write and try to send it (and pull its effect) now, within the short context
        timeout; offline it stays queued."""
        item = self.enqueue(method, params, local_memory_id, key)
        timeout = self.settings.context_timeout_s
        self.sync(timeout, wait_s=timeout)  # a sync running meanwhile sends it as well
        return self.outcome(item.idempotency_key)

    def outcome(self, idempotency_key: str) -> api.TeamWrite:
        """Where a queued write stands (sent with the server's reply, queued, or refused)."""
        item = self.db.read(lambda c: team_cache_sql.outbox_item(c, idempotency_key))
        assert item is not None
        state = {"done": "sent", "pending": "queued", "refused": "refused"}[item.state]
        raw = item.result
        return api.TeamWrite(
            state=state,  # type: ignore[arg-type]
            method=item.method,
            idempotency_key=item.idempotency_key,
            error=item.last_error,
            result=msgspec.json.decode(raw) if raw else None,
        )

    def _drain(self, deadline: float, rep: Report) -> None:
        """Send the pending items in order; stop at the first that finds the server down."""
        while time.monotonic() < deadline:
            items = self.db.read(lambda c: team_cache_sql.pending(c, self.server, 100))
            if not items:
                return
            for item in items:
                self._send(item, deadline, rep)

    def _send(self, item: team_cache_sql.OutboxItem, deadline: float, rep: Report) -> None:
        params = msgspec.json.decode(item.params)
        try:
            method = wire.team_method(item.method)
        except ValueError as exc:  # a row no version of this client writes: never sent
            why = str(exc)
            self.db.write(
                lambda c: team_cache_sql.finish(c, item.id, "refused", now_iso(), None, why)
            )
            rep.refused += 1
            return
        try:
            result = self.client.call_raw(method, params, deadline=deadline)
        except TeamCallError as exc:
            error = f"{exc.kind}: {exc.message}"
            gave_up = exc.kind == "down" and exc.code is not None
            gave_up = gave_up and item.attempts + 1 >= self.settings.max_attempts
            state = "refused" if exc.kind == "bad_request" or gave_up else "pending"
            self.db.write(
                lambda c: team_cache_sql.finish(c, item.id, state, now_iso(), None, error)
            )
            if state == "pending":
                raise  # down or the key refused: later items wait, in order
            rep.refused += 1
            if self.log:
                self.log.warning("team_write_refused", method=item.method, error=error)
            return
        encoded = msgspec.json.encode(result).decode()
        missed = _not_received(item, params, result)

        def done(conn: apsw.Connection) -> None:
            team_cache_sql.finish(conn, item.id, "done", now_iso(), encoded, None)
            if missed:  # (a replaced key's receipts): owed again, counted by the next receipts
                st = team_cache_sql.sync_state(conn, self.server, self.client.key_id)
                team_cache_sql.unreport(conn, self.server, missed)
                if st is not None:
                    team_cache_sql.forget_receipts(
                        conn, self.server, st.org_id, [o.memory_id for o in missed]
                    )

        self.db.write(done)
        rep.sent += 1

    def _queue_usage(self, st: SyncState) -> None:
        """Local counts of cached memories not yet reported, queued as one report (and marked
        reported in the same transaction: a count is never reported twice nor dropped). While a
        report waits unsent, the counts keep growing here for the next one."""

        def tx(conn: apsw.Connection) -> None:
            if team_cache_sql.has_pending(conn, self.server, USAGE):
                return
            owed = team_cache_sql.owed_usage(
                conn, self.server, st.org_id, self.settings.usage_batch
            )
            if not owed:
                return
            key = f"usage:{uuid.uuid4().hex}"
            items = [
                wire.UsageItem(
                    memory_id=o.memory_id,
                    context_id=o.receipt,
                    opportunities=o.opportunities,
                    uses=o.uses,
                    regret_hits=o.regret_hits,
                    regret_saved=round(o.regret_saved, 6),
                    last_used_at=o.last_used_at,
                )
                for o in owed
            ]
            body = msgspec.json.encode(wire.UsageParams(idempotency_key=key, items=items))
            team_cache_sql.enqueue(conn, self.server, key, USAGE, body.decode(), None, now_iso())
            team_cache_sql.mark_reported(conn, owed)

        self.db.write(tx)

    # -- status ---------------------------------------------------------------------------------

    def status(self) -> api.TeamStatusResult:
        st = self.state()

        def read(conn: apsw.Connection) -> dict[str, Any]:
            org = st.org_id if st else ""
            pending = team_cache_sql.pending(conn, self.server, 20)
            return {
                "cached": team_cache_sql.cached_count(conn, self.server, org) if st else {},
                "outbox": team_cache_sql.outbox_summary(conn, self.server),
                "refused": [
                    _entry(i) for i in team_cache_sql.items(conn, self.server, "refused", 20, True)
                ],
                "pending": [_entry(i) for i in pending],
            }

        got = self.db.read(read)
        return api.TeamStatusResult(
            configured=True,
            server=self.server,
            api_key="set",
            org_id=st.org_id if st else None,
            team_id=st.team_id if st else None,
            role=st.role if st else None,
            last_seq=st.last_seq if st else 0,
            last_pull_at=st.last_pull_at if st else None,
            last_attempt_at=st.last_attempt_at if st else None,
            last_error=st.last_error if st else self._last_error,
            **got,
        )

    def close(self) -> None:
        self.client.close()


def _entry(i: team_cache_sql.OutboxItem) -> api.OutboxEntry:
    return api.OutboxEntry(
        idempotency_key=i.idempotency_key,
        method=i.method,
        local_memory_id=i.local_memory_id,
        created_at=i.created_at,
        attempts=i.attempts,
        last_error=i.last_error,
    )


def _not_received(
    item: team_cache_sql.OutboxItem, params: Any, result: Any
) -> list[team_cache_sql.Owed]:
    """The items of a usage report the server did not count because their receipt was not one
    it gave this key (a key replaced since the memory was pulled)."""
    if item.method != USAGE or not isinstance(result, dict):
        return []
    missed = set(result.get("not_received") or [])
    if not missed:
        return []
    sent = msgspec.convert(params, wire.UsageParams)  # (this client queued it in that form)
    return [
        team_cache_sql.Owed(
            u.memory_id,
            u.context_id,
            u.opportunities,
            u.uses,
            u.regret_hits,
            u.regret_saved,
            u.last_used_at,
        )
        for u in sent.items
        if u.memory_id in missed
    ]


def _put(
    conn: apsw.Connection,
    server: str,
    org_id: str,
    changes: list[wire.Change],
    vectors: dict[str, bytes],
    now: str,
) -> tuple[int, int, int]:
    """Apply the last change of each memory of a page to the cache: (upserted, forgotten,
    skipped because the id is not this cache's)."""
    added = gone = skipped = 0
    for ch in changes:
        m = ch.memory
        if ch.op == "upsert" and m is not None:
            got = team_cache_sql.put_cached(
                conn,
                server,
                org_id,
                _local(m),
                m.version,
                ch.seq,
                now,
                vectors.get(m.id),
                ch.receipt,
            )
            skipped += got == "refused"
            added += got != "refused"
        else:
            gone += team_cache_sql.drop_cached(conn, server, org_id, ch.memory_id)
    if added or gone:
        from reos_memory.store.vectors import MEMORIES, prune_changes

        prune_changes(conn, space=MEMORIES)
    return added, gone, skipped


_MEMORY_FIELDS = [f.name for f in msgspec.structs.fields(Memory)]


def _local(m: wire.TeamMemory) -> Memory:
    """A pulled team memory as a local `memories` row."""
    return Memory(**{k: getattr(m, k) for k in _MEMORY_FIELDS})
