"""Resilience of the team server (issue 21), with real `reos-memory team-server` subprocesses on
one embedded PostgreSQL, each given its URL as N processes behind a load balancer would be:

* two processes with concurrent writers (adds, and updates of shared memories): every
  acknowledged write is there, each memory's versions go 1, 2, 3 ... without a gap, and the
  org's change log numbers are unique and gap-free;
* `kill -9` of a process with writes in flight (one of them held at its last statement): each
  write is whole (memory, change, audit, idempotency reply) or absent, the other process serves
  on, a restarted one serves, and replaying the unanswered writes applies each exactly once;
* PostgreSQL stopped and started under live traffic: every request is answered within seconds,
  every failure is one a client may retry (HTTP 503 or 429, or a JSON-RPC error with
  `data.retryable`), the servers' pools recover without a restart, and every acknowledged write
  is there once.

The invariants are read from the tables themselves, as their owner (no row-level security), so
what the server does not show is checked too."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from reos_memory.team.keys import parse_key
from tests.team_fixtures import ACTOR, Server, start_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

HASH = {"REOS_MEMORY_EMBEDDER": "hash"}  # 384 dimensions, no model to load
ANSWER_WITHIN_S = 5.0  # "never hang past a few seconds"
CLIENT_TIMEOUT_S = 20.0  # longer, so that a slow answer is measured rather than cut off
RETRY_FOR_S = 40.0  # how long a member's outbox keeps resending one write


@dataclass
class Outcome:
    """One HTTP request and what came back (status None: no answer at all)."""

    server: str
    method: str
    params: dict[str, Any]
    started: float
    seconds: float
    status: int | None
    reply: Any

    @property
    def ok(self) -> bool:
        return self.status == 200 and isinstance(self.reply, dict) and "result" in self.reply

    @property
    def result(self) -> Any:
        assert self.ok, self
        return self.reply["result"]

    @property
    def retryable(self) -> bool:
        """What a client may send again: the server said so (HTTP 503 or 429 with Retry-After,
        or a JSON-RPC error whose data says retryable)."""
        if self.status in (429, 503):
            return True
        if self.status == 200 and isinstance(self.reply, dict) and "error" in self.reply:
            return self.reply["error"].get("data", {}).get("retryable") is True
        return False


def send(srv: Server, key: str, method: str, params: dict[str, Any]) -> Outcome:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    req = urllib.request.Request(f"{srv.base}/rpc", data=body, headers=headers)
    t = time.monotonic()
    status: int | None
    try:
        with urllib.request.urlopen(req, timeout=CLIENT_TIMEOUT_S) as resp:
            status, text = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read()
    except (OSError, http.client.IncompleteRead):
        # refused, reset, timed out, or killed between the reply's head and its body: no answer
        status, text = None, b""
    reply = json.loads(text) if text else None
    return Outcome(srv.base, method, params, t, time.monotonic() - t, status, reply)


@dataclass
class Member:
    """One member's machine: it sends its writes to the servers in turn (a load balancer's round
    robin), each with an idempotency key, and sends a write again with the same key when the
    answer says it may (as the local outbox does)."""

    servers: list[Server]
    key: str
    turn: int = 0
    sent: list[Outcome] = field(default_factory=list)

    def write(self, method: str, params: dict[str, Any]) -> Outcome:
        params = {**params, "idempotency_key": f"idem-{uuid.uuid4().hex}"}
        until = time.monotonic() + RETRY_FOR_S
        while True:
            srv = self.servers[self.turn % len(self.servers)]
            self.turn += 1
            out = send(srv, self.key, method, params)
            self.sent.append(out)
            if out.ok or not out.retryable or time.monotonic() > until:
                return out
            time.sleep(0.1)


def phrase(rng: random.Random) -> str:
    """A sentence of made-up words: no two alike, so none is deduplicated into another."""
    syllable = "bcdfghjklmnprstvz"
    return " ".join(
        "".join(rng.choice(syllable) + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
        for _ in range(8)
    )


def add_params(rng: random.Random) -> dict[str, Any]:
    return {"scope": "project", "project_id": "proj-core", "kind": "note", "text": phrase(rng)}


@dataclass
class Org:
    id: str
    keys: list[str]


def new_org(db: TeamDatabase, name: str, writers: int, readers: int = 0) -> Org:
    """An org with one key per member (each member its own rate): writers, then readers."""
    roles = ["writer"] * writers + ["reader"] * readers
    with db.connect() as conn:
        org = admin.create_org(conn, ACTOR, name)
        keys = [admin.create_key(conn, ACTOR, org=org.id, role=r)[0].key for r in roles]
    return Org(org.id, keys)


@pytest.fixture(scope="module")
def db(team_db: TeamDatabase) -> TeamDatabase:
    return team_db


@contextmanager
def running(db: TeamDatabase, logs: Path, n: int) -> Iterator[list[Server]]:
    """`n` server processes on the database's URL (no embedded server of their own), stopped at
    the end; their logs under `logs`."""
    servers: list[Server] = []
    try:
        for _ in range(n):
            servers.append(start(db, logs))
        yield servers
    finally:
        for srv in servers:
            if srv.proc.poll() is None:
                srv.proc.terminate()
                srv.proc.wait(timeout=15)


def start(db: TeamDatabase, logs: Path) -> Server:
    log = logs / f"server-{uuid.uuid4().hex[:6]}.log"
    return start_server(logs / "unused", "--database-url", db.url, env=HASH, log=log)


def in_threads(n: int, work: Callable[[int], None]) -> None:
    """Run work(0..n-1) at once; an assertion in any of them fails the test."""
    with ThreadPoolExecutor(n) as pool:
        for f in [pool.submit(work, i) for i in range(n)]:
            f.result()


def check_whole(db: TeamDatabase, org_id: str) -> dict[str, dict[str, Any]]:
    """The invariants of an org's memory writes, from its tables: change numbers 1..N with the
    counter at N; every change's memory exists and every memory has one change per version,
    the last one its `seq`; earlier versions 1..v-1 in the history; one audit row per change;
    every stored idempotency reply names a memory that exists. The memories, by id."""
    with db.connect() as conn:
        cur = conn.execute(
            "SELECT id, text, version, seq FROM memories WHERE org_id = %s", (org_id,)
        )
        mems = {r[0]: {"text": r[1], "version": r[2], "seq": r[3]} for r in cur.fetchall()}
        changes = conn.execute(
            "SELECT seq, memory_id FROM changes WHERE org_id = %s ORDER BY seq", (org_id,)
        ).fetchall()
        counter = conn.execute(
            "SELECT seq FROM change_counters WHERE org_id = %s", (org_id,)
        ).fetchone()
        history = conn.execute(
            "SELECT memory_id, version FROM memory_history WHERE org_id = %s", (org_id,)
        ).fetchall()
        audit = conn.execute(
            "SELECT target_ids FROM audit_log WHERE org_id = %s"
            " AND method LIKE 'squirrel/memories/%%'",
            (org_id,),
        ).fetchall()
        replies = conn.execute(
            "SELECT response FROM idempotency WHERE org_id = %s", (org_id,)
        ).fetchall()
    seqs = [s for s, _ in changes]
    assert seqs == list(range(1, len(seqs) + 1)), "change numbers not unique and gap-free"
    assert (counter[0] if counter else 0) == len(seqs)
    per_memory = Counter(mid for _, mid in changes)
    assert set(per_memory) == set(mems), "a change without its memory, or the reverse"
    last = {mid: s for s, mid in changes}
    for mid, m in mems.items():
        assert per_memory[mid] == m["version"] and last[mid] == m["seq"], (mid, m)
        assert sorted(v for h, v in history if h == mid) == list(range(1, m["version"])), mid
    assert Counter(t for (ids,) in audit for t in ids) == per_memory, "audit rows != changes"
    for (reply,) in replies:
        assert reply["memory"]["id"] in mems, reply
    return mems


@dataclass
class Cache:
    """A machine's copy of the team memories (id -> version), kept by pulling the change log
    from its cursor, as the local service does."""

    key: str
    seen: dict[str, int] = field(default_factory=dict)
    cursor: int = 0

    def pull(self, srv: Server, limit: int = 20) -> bool:
        """One page; True when more follow (a refusal it may retry counts as more)."""
        p = {"after_seq": self.cursor, "limit": limit}
        out = send(srv, self.key, "squirrel/changes/pull", p)
        if out.retryable:
            time.sleep(0.1)
            return True
        page = out.result
        for c in page["changes"]:
            if c["memory"] is None:
                self.seen.pop(c["memory_id"], None)
            else:
                self.seen[c["memory_id"]] = c["memory"]["version"]
        self.cursor = page["next_seq"]
        return bool(page["more"])

    def follow(self, servers: list[Server], until: threading.Event) -> None:
        """Pull while writers write (each page from the next server), then to the end."""
        turn = 0
        while not until.is_set():
            turn += 1
            if not self.pull(servers[turn % len(servers)]):
                time.sleep(0.02)
        while self.pull(servers[0]):
            pass


def list_all(srv: Server, key: str) -> set[str]:
    ids: set[str] = set()
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = send(srv, key, "squirrel/memories/list", params).result
        ids |= {m["id"] for m in page["memories"]}
        if page["next_cursor"] is None:
            return ids
        params["cursor"] = page["next_cursor"]


def test_two_processes_with_concurrent_writers_lose_no_acknowledged_write(db, tmp_path):
    org = new_org(db, "two-processes", writers=6, readers=2)
    with running(db, tmp_path, 2) as servers:
        first = Member(servers, org.keys[0])
        rng = random.Random(0)
        shared = [first.write("squirrel/memories/add", add_params(rng)).result["memory"]["id"]
                  for _ in range(3)]  # fmt: skip
        members = [Member(servers, k, turn=i) for i, k in enumerate(org.keys[:6])]

        def work(i: int) -> None:
            rng = random.Random(i + 1)
            for n in range(24):
                if n % 2:
                    p = {"memory_id": rng.choice(shared), "text": phrase(rng)}
                    out = members[i].write("squirrel/memories/update", p)
                else:
                    out = members[i].write("squirrel/memories/add", add_params(rng))
                assert out.ok, out
                assert "deduplicated_into" not in out.result, out

        done = threading.Event()
        follower, fresh = Cache(org.keys[6]), Cache(org.keys[7])
        following = threading.Thread(target=follower.follow, args=(servers, done))
        following.start()
        try:
            in_threads(len(members), work)
        finally:
            done.set()
            following.join()
        sent = [o for m in [first, *members] for o in m.sent]
        acked = [o for o in sent if o.ok]
        assert len(acked) == 3 + 6 * 24 and all(o.retryable for o in sent if not o.ok)
        assert {o.server for o in acked} == {s.base for s in servers}

        mems = check_whole(db, org.id)
        adds = [o for o in acked if o.method == "squirrel/memories/add"]
        for o in adds:
            mid = o.result["memory"]["id"]
            assert mid in shared or mems[mid]["text"] == o.params["text"]
        updates = [o for o in acked if o.method == "squirrel/memories/update"]
        for mid in shared:
            got = send(servers[1], org.keys[1], "squirrel/memories/get", {"memory_id": mid}).result
            text_at = {h["version"]: h["text"] for h in got["history"]}
            text_at[got["memory"]["version"]] = got["memory"]["text"]
            mine = sorted((o.result["memory"] for o in updates if o.params["memory_id"] == mid),
                          key=lambda m: m["seq"])  # fmt: skip
            # each acknowledged update made one version, in the order of its change number
            assert [m["version"] for m in mine] == list(range(2, 2 + len(mine)))
            assert sorted(text_at) == list(range(1, 2 + len(mine)))
            for o in updates:
                if o.params["memory_id"] == mid:
                    assert text_at[o.result["memory"]["version"]] == o.params["text"]
        assert len(mems) == len(adds)
        # a machine that pulled all along, and one pulling from scratch, see every change
        fresh.follow(servers, done)
        for cache in (follower, fresh):
            assert cache.seen == {mid: m["version"] for mid, m in mems.items()}
        assert list_all(servers[1], org.keys[2]) == set(mems)
        print(f"{len(acked)} writes over 2 processes, {len(mems)} memories,"
              f" {sum(m['version'] for m in mems.values())} changes, all accounted for")  # fmt: skip


def _wait_for(what: str, check: Callable[[], bool], within_s: float) -> None:
    until = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < until, f"{what}: not within {within_s} s"
        time.sleep(0.01)


def _parked(db: TeamDatabase) -> bool:
    """A server's write is waiting at its last statement (the idempotency insert)."""
    with db.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE 'INSERT INTO idempotency%%'"
        ).fetchone()
    return row is not None and row[0] > 0


def _settled(db: TeamDatabase) -> bool:
    """No session of the database is inside a transaction or waiting for a lock."""
    with db.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            " AND (state LIKE 'idle in transaction%%' OR wait_event_type = 'Lock'"
            " OR state = 'active')"
        ).fetchone()
    return row is not None and row[0] == 0


def test_kill_9_mid_write_leaves_every_write_whole_or_absent(db, tmp_path):
    org = new_org(db, "killed", writers=6)
    trap = new_org(db, "trap", writers=1)
    trap_key = f"idem-{uuid.uuid4().hex}"
    with running(db, tmp_path, 2) as (a, b):
        # the trap: a write of another org held at its last statement (its memory, change and
        # audit row written, not committed) by an idempotency row this test inserted first
        blocker = db.connect()
        blocker.execute("BEGIN")
        blocker.execute(
            "INSERT INTO idempotency (org_id, idem_key, key_id, method, request_hash, response)"
            " VALUES (%s, %s, %s, 'test', 'test', '{}')",
            (trap.id, trap_key, parse_key(trap.keys[0])[0]),  # (idempotency keys are per key)
        )
        trap_params = {**add_params(random.Random(99)), "idempotency_key": trap_key}
        trapped: list[Outcome] = []
        trap_thread = threading.Thread(
            target=lambda: trapped.append(
                send(a, trap.keys[0], "squirrel/memories/add", trap_params)
            )
        )
        stop = threading.Event()
        # four members write through A, two through B
        members = [Member([a if i < 4 else b], k) for i, k in enumerate(org.keys)]

        def work(i: int) -> None:
            rng = random.Random(100 + i)
            while not stop.is_set():
                out = members[i].write("squirrel/memories/add", add_params(rng))
                if out.status is None:
                    return  # its server died: the outbox keeps this write for later
                assert out.ok, out

        pool = ThreadPoolExecutor(len(members))
        futures = [pool.submit(work, i) for i in range(len(members))]
        try:
            _wait_for(
                "30 writes acknowledged",
                lambda: sum(o.ok for m in members for o in m.sent) >= 30,
                30,
            )
            # kill as soon as the trap is parked (before any lock timeout could answer it)
            trap_thread.start()
            _wait_for("the trapped write parked", lambda: _parked(db), 10)
            killed_at = time.monotonic()
            a.proc.kill()
            a.proc.wait(timeout=10)
            time.sleep(0.5)  # B serves on meanwhile
        finally:
            stop.set()
            for f in futures:
                f.result()
            pool.shutdown()
        trap_thread.join(timeout=10)
        blocker.rollback()
        blocker.close()
        assert trapped and trapped[0].status is None, "the trapped write was answered"
        _wait_for("the killed server's sessions ended", lambda: _settled(db), 10)

        sent = [o for m in members for o in m.sent]
        unanswered = [(m.key, o) for m in members for o in m.sent if o.status is None]
        assert unanswered, "no write was in flight when the server died"
        assert any(o.ok and o.server == b.base and o.started > killed_at for o in sent)
        mems = check_whole(db, org.id)
        texts = Counter(m["text"] for m in mems.values())
        for o in sent:
            if o.ok:
                assert mems[o.result["memory"]["id"]]["text"] == o.params["text"]
        committed = sum(texts[o.params["text"]] for _, o in unanswered)
        assert all(texts[o.params["text"]] <= 1 for _, o in unanswered)
        assert check_whole(db, trap.id) == {}, "the trapped write left something behind"
        print(f"kill -9 with {len(unanswered) + 1} writes unanswered: {committed} had committed,"
              f" the rest (the trapped one included) left nothing;"
              f" {sum(o.ok for o in sent)} acknowledged writes all present")  # fmt: skip

        # each member's outbox replays what went unanswered, to the survivor: a write that had
        # committed gets its first reply back, the others are applied now; each exactly once
        replies = [send(b, key, o.method, o.params) for key, o in unanswered]
        assert all(r.ok for r in replies), replies
        assert send(b, trap.keys[0], trapped[0].method, trapped[0].params).ok
        mems = check_whole(db, org.id)
        by_text = {m["text"]: mid for mid, m in mems.items()}
        assert len(by_text) == len(mems)
        assert all(o.params["text"] in by_text for o in sent)
        for r in replies:
            assert by_text[r.params["text"]] == r.result["memory"]["id"]
        assert len(check_whole(db, trap.id)) == 1

        restarted = start(db, tmp_path)
        try:
            mid = next(iter(mems))
            got = send(restarted, org.keys[5], "squirrel/memories/get", {"memory_id": mid})
            assert got.result["memory"]["text"] == mems[mid]["text"]
        finally:
            restarted.proc.terminate()
            restarted.proc.wait(timeout=15)


def _restart_postgres(db: TeamDatabase, outage_s: float) -> tuple[float, float]:
    """Stop the embedded PostgreSQL (fast: sessions are ended, as a crash or failover ends them),
    wait, start it again under the same data directory; (stopped at, started at)."""
    server = db.embedded
    assert server is not None
    server.stop()
    down = time.monotonic()
    time.sleep(outage_s)
    server.start()  # same socket, same URL
    return down, time.monotonic()


def _healthy(srv: Server) -> bool:
    try:
        with urllib.request.urlopen(f"{srv.base}/health", timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_postgres_restarted_mid_traffic_costs_retries_not_hangs_or_writes(db, tmp_path):
    org = new_org(db, "restarted", writers=4)
    with running(db, tmp_path, 2) as servers:
        pids = [s.proc.pid for s in servers]
        members = [Member(servers, k, turn=i) for i, k in enumerate(org.keys)]
        stop = threading.Event()
        reads: list[Outcome] = []

        def work(i: int) -> None:
            rng = random.Random(200 + i)
            while not stop.is_set():
                out = members[i].write("squirrel/memories/add", add_params(rng))
                assert out.ok, out  # the outbox's retries outlast the outage
                mid = out.result["memory"]["id"]
                reads.append(send(servers[i % 2], org.keys[i], "squirrel/memories/get",
                                  {"memory_id": mid}))  # fmt: skip

        pool = ThreadPoolExecutor(len(members))
        futures = [pool.submit(work, i) for i in range(len(members))]
        try:
            time.sleep(1.0)
            down, up = _restart_postgres(db, outage_s=3.0)
            _wait_for("both servers healthy again", lambda: all(map(_healthy, servers)), 30)
            recovered = time.monotonic() - up
            time.sleep(1.0)
        finally:
            stop.set()
            for f in futures:
                f.result()
            pool.shutdown()

        assert [s.proc.pid for s in servers] == pids and all(s.proc.poll() is None for s in servers)
        sent = [o for m in members for o in m.sent] + reads
        failed = [o for o in sent if not o.ok]
        slowest = max(o.seconds for o in sent)
        print(f"PostgreSQL down {up - down:.1f} s: {len(sent)} requests, {len(failed)} refused"
              f" (statuses {dict(Counter(o.status for o in failed))}), slowest answer"
              f" {slowest:.2f} s, both servers healthy {recovered:.2f} s after the restart")  # fmt: skip
        assert slowest < ANSWER_WITHIN_S, [o for o in sent if o.seconds >= ANSWER_WITHIN_S][:3]
        assert [o for o in failed if not o.retryable] == []
        assert any(down <= o.started <= up for o in failed), "the outage refused nothing"
        assert all(o.ok for o in sent if o.started > up + recovered + 0.5), "not recovered"

        mems = check_whole(db, org.id)
        texts = Counter(m["text"] for m in mems.values())
        acked = [o for o in sent if o.ok and o.method == "squirrel/memories/add"]
        assert acked and all(texts[o.params["text"]] == 1 for o in acked)
        assert len(mems) == len(acked)
