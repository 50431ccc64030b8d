"""Crash trials: SIGKILL a process at a random point of one operation, then look at what it left.

A scenario builds a starting database, runs one operation on a copy of it in a child process and
knows what "none of it" and "all of it" look like. A trial copies the start, begins the
operation, kills the process after a random share of the time an uninterrupted run takes, and
checks that

* the file passes `PRAGMA integrity_check`;
* the operation is all-or-nothing: the state is the starting one or the finished one (for work
  made of many units - episodes, log lines, migrations - each unit is whole);
* finishing the work afterwards (the same request again, or the service resuming from its
  cursor or claim) ends in exactly the state of a run that was never killed.

tests/test_crash_e2e.py runs a few trials of each; `tools/crash.py` as many as you like.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw

from harness.agent_homes import ClaudeSession
from harness.rpc_client import ROOT, SQRL, Server

NO_CATCH_UP = {"REOS_MEMORY_CATCH_UP_INDEXING": "false"}
WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "juniper",
    "kelp",
    "lumen",
    "moss",
    "nectar",
]


def sentence(i: int, n: int = 12) -> str:
    """A distinct, readable sentence for unit `i`."""
    rng = random.Random(i)
    return f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(n)) + "."


class TrialFailed(AssertionError):
    pass


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def integrity(db: Path) -> None:
    found = rows(db, "PRAGMA integrity_check")
    if found != [("ok",)]:
        raise TrialFailed(f"{db.name}: integrity_check says {found[:5]}")


def copy_db(src: Path, dst: Path) -> Path:
    for suffix in ("", "-wal"):
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


@dataclass
class Running:
    """One operation under way in a child process."""

    proc: subprocess.Popen[bytes]
    server: Server | None = None
    rid: Any = None

    def wait(self, timeout: float = 600) -> None:
        if self.server is not None:
            reply = self.server.response(self.rid, timeout=timeout)
            if "error" in reply:
                raise TrialFailed(f"the operation failed: {reply['error']}")
        elif self.proc.wait(timeout) != 0:
            raise TrialFailed(f"the operation exited with {self.proc.returncode}")

    def kill(self) -> bool:
        """SIGKILL; True when the operation was still running."""
        alive = self.proc.poll() is None and (
            self.server is None or not self.server.has_response(self.rid)
        )
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.close()
        return alive

    def close(self) -> None:
        if self.server is not None:
            self.server.__exit__(None, None, None)


def serve(
    db: Path, method: str, params: dict[str, Any], env: dict[str, str] | None = None
) -> Running:
    """A server on `db`, ready, with `method` sent (its reply not awaited)."""
    srv = Server(db, env=env)
    srv.call("ping", timeout=120)
    return Running(srv.proc, srv, srv.request(method, params))


def call(db: Path, method: str, params: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    with Server(db, env=env) as srv:
        return srv.call(method, params, timeout=600)


class Scenario:
    """One kind of operation to interrupt. Subclasses fill in the five steps."""

    name = ""

    def __init__(self, work: Path, scale: float = 1.0) -> None:
        self.work = work
        self.scale = scale

    def units(self, n: int) -> int:
        return max(2, int(n * self.scale))

    def build(self, base: Path) -> None:
        """Create the starting database at `base` (and any input files under `self.work`)."""
        raise NotImplementedError

    def start(self, db: Path) -> Running:
        """Begin the operation on `db`."""
        raise NotImplementedError

    def snapshot(self, db: Path) -> Any:
        """What the operation changes, comparable between two databases."""
        raise NotImplementedError

    def finish(self, db: Path, state: str) -> None:
        """Complete the work after a crash that left `state`: the same operation again, which
        resumes from its cursor or claim (a finished one is not repeated: a second run over
        changed state may rightly decide differently)."""
        if state != "all":
            running = self.start(db)
            running.wait()
            running.close()

    def check(self, db: Path, before: Any, after: Any) -> str:
        """After a kill: 'none' or 'all' of the operation, or 'part' when whole units of it
        are done; raise TrialFailed for anything else."""
        now = self.snapshot(db)
        if now == before:
            return "none"
        if now == after:
            return "all"
        raise TrialFailed(f"{self.name}: neither the state before nor after: {_diff(now, after)}")


def _diff(now: Any, want: Any) -> str:
    return f"found {str(now)[:300]} ... wanted {str(want)[:300]}"


# -- the scenarios -----------------------------------------------------------------------------


class IndexBatch(Scenario):
    """`memory/index/batch` over an act of unindexed blocks."""

    name = "index_batch"

    def build(self, base: Path) -> None:
        with Server(base, env=NO_CATCH_UP) as srv:
            n = self.units(3000)
            for start in range(0, n, 250):
                items = [
                    {
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "blocks/create",
                        "params": {
                            "type": "paragraph",
                            "act_id": "crash",
                            "content": sentence(i),
                            "index": False,
                        },
                    }
                    for i in range(start, min(n, start + 250))
                ]
                assert all("result" in r for r in srv.batch(items, timeout=120))

    def start(self, db: Path) -> Running:
        return serve(db, "memory/index/batch", {"act_id": "crash"}, NO_CATCH_UP)

    def snapshot(self, db: Path) -> Any:
        return rows(
            db,
            "SELECT (SELECT count(*) FROM blocks),"
            " (SELECT count(*) FROM block_embeddings),"
            " (SELECT count(*) FROM block_embeddings e JOIN blocks b ON b.id = e.block_id"
            "  AND b.content_hash = e.content_hash)",
        )


class DocumentsInsert(Scenario):
    """`documents/insert` of a long Markdown file: the document with all its chunks, or nothing."""

    name = "documents_insert"

    def build(self, base: Path) -> None:
        doc = self.work / "handbook.md"
        parts = []
        for i in range(self.units(1500)):
            if i % 10 == 0:
                parts.append(f"## Section {i // 10}\n")
            parts.append(" ".join(sentence(i * 7 + k, 14) for k in range(4)) + "\n")
        doc.write_text("\n".join(parts))
        call(base, "ping", {})

    def start(self, db: Path) -> Running:
        path = str(self.work / "handbook.md")
        return serve(db, "documents/insert", {"path": path, "act_id": "docs"}, NO_CATCH_UP)

    def snapshot(self, db: Path) -> Any:
        return rows(
            db,
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM blocks),"
            " (SELECT count(*) FROM block_embeddings), (SELECT count(*) FROM blocks_fts)",
        )


def session_events(i: int) -> list[dict[str, Any]]:
    """One coding session the offline writer learns from: a failure, its fix, a statement."""
    tool = f"tool{i}"
    fail = f"ModuleNotFoundError: No module named 'pkg_{i}'\nFAILED tests/test_{i}.py - 1 failed"
    out: list[dict[str, Any]] = [
        {"role": "user", "kind": "message", "text": f"make tests/test_{i}.py pass in module_{i}"},
    ]
    for k in range(2):
        out += [
            {
                "role": "assistant",
                "kind": "tool_call",
                "tool_name": "Bash",
                "command": f"pytest tests/test_{i}.py",
                "call_id": f"r{k}",
            },
            {
                "role": "tool",
                "kind": "tool_result",
                "tool_name": "Bash",
                "call_id": f"r{k}",
                "is_error": True,
                "exit_code": 1,
                "text": fail,
            },
        ]
    out += [
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Edit",
            "file": f"module_{i}.py",
            "call_id": "e",
            "summary": f"import pkg_{i} lazily in module_{i}.py",
        },
        {"role": "tool", "kind": "tool_result", "tool_name": "Edit", "call_id": "e", "text": "ok"},
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": f"pytest tests/test_{i}.py",
            "call_id": "ok",
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "tool_name": "Bash",
            "call_id": "ok",
            "exit_code": 0,
            "text": "3 passed in 0.2s",
        },
        {
            "role": "user",
            "kind": "message",
            "text": f"thanks. From now on always run {tool} before pytest, never skip it.",
        },
    ]
    return out


class SquirrelCommit(Scenario):
    """The Memory Writer's commits: episodes written one after another, each with its memories,
    evidence and new state in one transaction. A killed writer's claim is taken over at once."""

    name = "squirrel_commit"
    # the LLM writer is configured but out of daily budget: episodes wait, unprocessed
    DEFER = {
        "REOS_MEMORY_WRITER": "llm",
        "REOS_MEMORY_LLM_PROVIDER": "openai",
        "REOS_MEMORY_LLM_MODEL": "gpt-test",
        "REOS_MEMORY_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "REOS_MEMORY_WRITER_DAILY_TOKEN_BUDGET": "0",
    }
    RULES = {**NO_CATCH_UP, "REOS_MEMORY_WRITER": "rules"}

    def build(self, base: Path) -> None:
        project = self.work / "project"
        (project / ".git").mkdir(parents=True, exist_ok=True)
        with Server(base, env=self.DEFER) as srv:
            for i in range(self.units(40)):
                where = {"project_root": str(project), "session_id": f"s{i}"}
                srv.call("squirrel/ingest", {**where, "events": session_events(i)})
                srv.call("squirrel/flush", {**where, "wait": True})

    def start(self, db: Path) -> Running:
        return serve(db, "squirrel/episodes/retry", {}, self.RULES)

    def snapshot(self, db: Path) -> Any:
        episodes = rows(db, "SELECT session_id, processed FROM episodes ORDER BY session_id")
        learned = rows(
            db,
            "SELECT e.session_id, m.text, m.status FROM evidence v"
            " JOIN episodes e ON e.id = v.episode_id JOIN memories m ON m.id = v.memory_id"
            " ORDER BY 1, 2",
        )
        orphans = rows(
            db,
            "SELECT count(*) FROM memories m WHERE NOT EXISTS"
            " (SELECT 1 FROM evidence v WHERE v.memory_id = m.id)",
        )
        return {"episodes": episodes, "learned": learned, "orphans": orphans[0][0]}

    def check(self, db: Path, before: Any, after: Any) -> str:
        now = self.snapshot(db)
        if now["orphans"]:
            raise TrialFailed(f"{now['orphans']} memories without evidence: a partial commit")
        done = {s for s, p in now["episodes"] if p}
        want = {s: [r[1] for r in after["learned"] if r[0] == s] for s, _ in after["episodes"]}
        for s, texts in want.items():
            have = [r[1] for r in now["learned"] if r[0] == s]
            if (s in done and have != texts) or (s not in done and have):
                raise TrialFailed(f"episode {s}: processed={s in done}, memories {have} vs {texts}")
        if not done:
            return "none"
        return "all" if len(done) == len(want) else "part"


class CrMemory(Scenario):
    """`squirrel/cr_memory/run` over many memories: every decision applied, or none."""

    name = "cr_memory"

    def build(self, base: Path) -> None:
        from reos_memory.store import Database

        call(base, "ping", {})
        n = self.units(20000)
        long_ago = "2020-01-01T00:00:00.000Z"
        soon = (datetime.now(UTC) + timedelta(days=20)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

        def fill(conn: apsw.Connection) -> None:
            for i in range(n):
                mid = f"mem-{i:06d}"
                conn.execute(
                    "INSERT INTO memories(id, project_id, scope, owner_type, owner_id, kind,"
                    " tier, text, status, confidence, expires_at, created_at, updated_at)"
                    " VALUES (?, 'crash-project', 'project', 'user', 'crash', ?,"
                    " 'short_term', ?, 'provisional', 0.7, ?, ?, ?)",
                    (
                        mid,
                        ("note", "pattern", "preference")[i % 3],
                        sentence(i),
                        long_ago if i % 4 == 0 else soon,
                        long_ago if i % 4 == 0 else soon[:10] + "T00:00:00.000Z",
                        long_ago,
                    ),
                )
                # a third often used (promoted), a third never (deprecated), a third unsure
                uses = (9, 0, 3)[(i // 3) % 3]
                conn.execute(
                    "INSERT INTO memory_metrics(memory_id, use_count, opportunities,"
                    " suspected_regret_hits) VALUES (?, ?, 10, ?)",
                    (mid, uses, 2 if uses else 0),
                )

        db = Database(str(base))
        try:
            db.write(fill)
        finally:
            db.close()

    def start(self, db: Path) -> Running:
        return serve(db, "squirrel/cr_memory/run", {}, NO_CATCH_UP)

    def snapshot(self, db: Path) -> Any:
        return rows(
            db,
            "SELECT m.id, m.status, m.tier, x.last_evaluated_at IS NULL FROM memories m"
            " JOIN memory_metrics x ON x.memory_id = m.id ORDER BY m.id",
        )


class TranscriptIngest(Scenario):
    """`sqrl ingest` of a long Claude Code log: resumes from its cursor, no line skipped or
    repeated."""

    name = "transcript_ingest"

    def build(self, base: Path) -> None:
        project = self.work / "app"
        (project / ".git").mkdir(parents=True, exist_ok=True)
        s = ClaudeSession(project, datetime.now(UTC) - timedelta(hours=3))
        for i in range(self.units(2500)):
            s.user(f"task {i}: make test_{i % 17} pass in module_{i % 23}.py")
            s.bash(
                f"pytest tests/test_{i % 17}.py",
                f"FAILED test_{i % 17} - KeyError 'k{i}'\n" * 20,
                exit_code=1,
            )
            s.edit(f"module_{i % 23}.py", f"d['k{i}']", f"d.get('k{i}')")
            s.bash(f"pytest tests/test_{i % 17}.py", "3 passed in 0.1s")
        self.log = s.write(self.work / "claude", age=timedelta(hours=2))
        call(base, "ping", {})

    def start(self, db: Path) -> Running:
        env = {**os.environ, "REOS_MEMORY_EMBEDDER": "hash", "REOS_MEMORY_WRITER": "rules"}
        proc = subprocess.Popen(
            [*SQRL, "ingest", str(self.log), "--db", str(db)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return Running(proc)

    def snapshot(self, db: Path) -> Any:
        return rows(
            db,
            "SELECT (SELECT coalesce(sum(json_array_length(events_json, '$.events')), 0)"
            " FROM episodes), (SELECT count(*) FROM squirrel_events)",
        )[0]

    def check(self, db: Path, before: Any, after: Any) -> str:
        now = self.snapshot(db)
        if sum(now) > sum(after):
            raise TrialFailed(f"{sum(now)} events stored, more than the {sum(after)} of the log")
        return "none" if now == before else "all" if now == after else "part"


HEAVY_SQL = """
CREATE TABLE crash_copy AS SELECT id, content, properties FROM blocks;
UPDATE blocks SET properties = json_set(properties, '$.migrated', 1);
CREATE INDEX idx_crash_copy_content ON crash_copy(content);
"""


def migrate_with_heavy_step(path: str) -> None:
    """Bring `path` up to date (the service's own `migrate`, its backup first) plus one long
    step that rewrites every block - run in a child process by the migration scenario."""
    from reos_memory.store import Database
    from reos_memory.store.migrations import Migration, load_migrations, migrate

    known = load_migrations()
    db = Database(path)
    try:
        migrate(db, [*known, Migration(len(known) + 1, "crash_trial_rewrite", HEAVY_SQL)])
    finally:
        db.close()


class UpgradeMigration(Scenario):
    """Upgrading a version-3 database that holds blocks: a backup, the real migrations and a
    long one of the trial's own. Each migration is whole or absent; blocks never change; every
    backup file is a complete database."""

    name = "migration"

    def build(self, base: Path) -> None:
        from reos_memory.store import Database
        from reos_memory.store.migrations import load_migrations, migrate

        db = Database(str(base))
        try:
            migrate(db, load_migrations()[:3])
        finally:
            db.close()
        conn = apsw.Connection(str(base))
        try:
            with conn:
                for i in range(self.units(20000)):
                    text = " ".join(sentence(i * 5 + k, 20) for k in range(5))
                    conn.execute(
                        "INSERT INTO blocks(id, type, act_id, content, content_hash, created_at,"
                        " updated_at) VALUES (?, 'paragraph', 'old', ?, ?, ?, ?)",
                        (
                            f"b{i:06d}",
                            text,
                            f"h{i}",
                            "2024-01-01T00:00:00Z",
                            "2024-01-01T00:00:00Z",
                        ),
                    )
        finally:
            conn.close()
        self._objects = self._objects_by_version()

    def _objects_by_version(self) -> dict[int, set[str]]:
        from reos_memory.store import Database
        from reos_memory.store.migrations import Migration, load_migrations, migrate

        known = load_migrations()
        steps = [*known, Migration(len(known) + 1, "crash_trial_rewrite", HEAVY_SQL)]
        scratch = self.work / "scratch.db"
        out: dict[int, set[str]] = {}
        db = Database(str(scratch))
        try:
            for v in range(3, len(steps) + 1):
                migrate(db, steps[:v], backup=False)
                out[v] = {str(r[0]) for r in db.read(lambda c: c.execute(_OBJECTS).fetchall())}
        finally:
            db.close()
        return out

    def start(self, db: Path) -> Running:
        code = f"from harness.crash import migrate_with_heavy_step as m; m({str(db)!r})"
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=subprocess.DEVNULL)
        return Running(proc)

    def snapshot(self, db: Path) -> Any:
        version = rows(db, "SELECT max(version) FROM schema_migrations")[0][0]
        blocks = rows(db, "SELECT count(*), sum(length(content)), max(id) FROM blocks")[0]
        return version, blocks

    def check(self, db: Path, before: Any, after: Any) -> str:
        version, blocks = self.snapshot(db)
        if blocks != before[1]:
            raise TrialFailed(f"blocks changed: {blocks} vs {before[1]}")
        objects = {r[0] for r in rows(db, _OBJECTS)}
        if objects != self._objects[version]:
            raise TrialFailed(
                f"at version {version}, objects differ: {objects ^ self._objects[version]}"
            )
        if version == after[0]:
            copied = rows(db, "SELECT count(*) FROM crash_copy")[0][0]
            marked = rows(db, "SELECT count(*) FROM blocks WHERE properties ->> 'migrated' = 1")
            if copied != blocks[0] or marked[0][0] != blocks[0]:
                raise TrialFailed(f"the last migration is half-done: {copied}, {marked}")
        for bak in db.parent.glob(f"{db.name}.pre-*.bak"):
            integrity(bak)
            if rows(bak, "SELECT count(*), sum(length(content)), max(id) FROM blocks")[0] != blocks:
                raise TrialFailed(f"{bak.name} does not hold every block")
        return "none" if version == before[0] else "all" if version == after[0] else "part"


_OBJECTS = (
    "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
)

SCENARIOS: dict[str, type[Scenario]] = {
    s.name: s
    for s in (
        IndexBatch,
        DocumentsInsert,
        SquirrelCommit,
        TranscriptIngest,
        CrMemory,
        UpgradeMigration,
    )
}


# -- trials ------------------------------------------------------------------------------------


@dataclass
class Baseline:
    base: Path
    seconds: float  # how long the operation takes uninterrupted
    before: Any
    after: Any


@dataclass
class Report:
    scenario: str
    seconds: float
    trials: list[dict[str, Any]] = field(default_factory=list)

    def count(self, key: str, value: Any) -> int:
        return sum(1 for t in self.trials if t[key] == value)


def baseline(scn: Scenario) -> Baseline:
    base = scn.work / "base.db"
    scn.build(base)
    before = scn.snapshot(base)
    clean = copy_db(base, scn.work / "clean.db")
    running = scn.start(clean)
    began = time.monotonic()
    running.wait()
    seconds = time.monotonic() - began
    running.close()
    after = scn.snapshot(clean)
    if after == before:
        raise TrialFailed(f"{scn.name}: the operation changed nothing")
    return Baseline(base, seconds, before, after)


def trial(scn: Scenario, bl: Baseline, n: int, rng: random.Random, span: float) -> dict[str, Any]:
    """One run killed at a random point of its first `span` seconds, checked and finished."""
    db = copy_db(bl.base, scn.work / f"trial-{n}.db")
    running = scn.start(db)
    delay = rng.uniform(0.0, span)
    time.sleep(delay)
    killed = running.kill()
    integrity(db)
    state = scn.check(db, bl.before, bl.after)
    scn.finish(db, state)
    integrity(db)
    end = scn.snapshot(db)
    if end != bl.after:
        raise TrialFailed(f"{scn.name}: finishing after the crash differs: {_diff(end, bl.after)}")
    for leftover in db.parent.glob(f"{db.name}*"):
        leftover.unlink()
    return {"trial": n, "delay_s": round(delay, 3), "killed": killed, "state": state}


def run(
    name: str,
    work: Path,
    trials: int,
    *,
    seed: int = 0,
    scale: float = 1.0,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> Report:
    """Build a scenario, time one uninterrupted run, then kill `trials` runs at random points."""
    work.mkdir(parents=True, exist_ok=True)
    scn = SCENARIOS[name](work, scale)
    bl = baseline(scn)
    report = Report(name, bl.seconds)
    rng = random.Random(seed)
    # A run that ended before its kill was faster than the timed one (a machine less loaded
    # than at the baseline, warm caches): the next kill is aimed at the first half of the span.
    span = bl.seconds
    for n in range(trials):
        result = trial(scn, bl, n, rng, span)
        if not result["killed"]:
            span /= 2
        report.trials.append(result)
        if progress:
            progress(result)
    return report


def as_json(report: Report) -> str:
    return json.dumps(report.__dict__)
