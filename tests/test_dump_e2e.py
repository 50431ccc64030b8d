"""`reos-memory dump` and `load`: a database built through the real service is dumped and loaded
with the real command line, and a server on the copy gives the same answers as one on the
original. A refused, truncated or corrupt load stores nothing."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from harness.rpc_client import ROOT, Server
from reos_memory.store import dump as dump_sql
from tests.test_squirrel_e2e import HTTP_TASK, ev, first_session, make_repo

pytestmark = pytest.mark.e2e

ENV = {"REOS_MEMORY_WRITER": "rules", "REOS_MEMORY_OWNER_ID": "alice"}
NOTES = b"""# Office notes

Expense reports are due on the fifth working day of each month.

The wifi password of the guest network changes every Monday; ask the front desk.

Meeting rooms on the third floor are booked through the calendar; the large room seats twelve
people and has a projector, the small rooms have a screen and a camera for video calls.

The kitchen is cleaned on Wednesday and Friday evenings, so leave nothing in the fridge then.
"""
BLOCK_QUERIES = ["tea in the afternoon", "expense reports due", "deploy on friday", "garden"]
MEMORY_QUERIES = ["http client for requests", "pnpm package manager", "invoice archive"]


def cli(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None):
    cmd = [sys.executable, "-m", "reos_memory", *args]
    return subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=180,
        env={**os.environ, **ENV, **(env or {})},
    )


def dump(db: Path, target: str | Path) -> subprocess.CompletedProcess[bytes]:
    return cli("dump", "--db", str(db), str(target))


def load(db: Path, source: str | Path, *, embedder: str = "hash", **kw):
    return cli("load", "--db", str(db), "--embedder", embedder, str(source), **kw)


def block(srv: Server, content: str, **extra) -> dict:
    params = {"type": "paragraph", "act_id": "act-1", "content": content, **extra}
    return srv.call("blocks/create", params)["block"]


def build(db: Path, tmp_path: Path) -> dict:
    """A database with every kind of data, written through the service; what it holds."""
    shop = make_repo(tmp_path / "shop")
    with Server(db, env=ENV) as srv:
        assert srv.wait_ready(120) == "ready"
        tea = block(
            srv,
            "The user drinks green tea every afternoon",
            properties={"topic": "habits", "score": 0.5, "tags": ["tea"]},
            created_at="2023-05-08T10:00:00Z",
        )
        why = block(
            srv,
            "Caffeine late in the day keeps the user awake",
            parent_id=tea["id"],
            created_at="2023-05-09T08:30:00",
        )
        deploy = block(srv, "Never deploy on a Friday afternoon", act_id="act-2", type="rule")
        garden = block(srv, "The garden needs water twice a week in summer")
        srv.call(
            "blocks/update",
            {"block_id": garden["id"], "content": "The garden needs water every other day"},
        )  # version 2
        block(srv, "   ")  # blank: never gets a vector
        rels = [
            srv.call(
                "memory/relationships/create",
                {"source_id": why["id"], "target_id": tea["id"], "rel_type": "caused_by"},
            ),
            srv.call(
                "memory/relationships/create",
                {
                    "source_id": tea["id"],
                    "target_id": garden["id"],
                    "rel_type": "related_to",
                    "confidence": 0.4,
                    "weight": 2.0,
                    "source": "inferred",
                },
            ),
            srv.call(
                "memory/relationships/create",
                {"source_id": deploy["id"], "target_id": tea["id"], "rel_type": "references"},
            ),
        ]
        doc = srv.call(
            "documents/insert",
            {
                "act_id": "act-1",
                "data": base64.b64encode(NOTES).decode(),
                "filename": "notes.md",
                "chunk_tokens": 50,
                "overlap_tokens": 5,
            },
        )
        assert doc["chunks"] >= 2
        # Squirrel: an episode learnt by the rules writer, an explicit memory, a context and
        # its feedback, and a session still open with pending events
        r = srv.call(
            "squirrel/ingest",
            {"project_root": str(shop), "session_id": "s1", "events": first_session()},
        )
        assert r["episodes"] and r["pending_events"] == 1
        srv.call("squirrel/flush", {"project_root": str(shop), "session_id": "s1", "wait": True})
        note = srv.call(
            "squirrel/memories/add",
            {
                "project_root": str(shop),
                "kind": "note",
                "text": "Archived invoices come from the archive bucket, not the billing API.",
                "key": "project.invoice_archive",
            },
        )["memory"]
        short = srv.call(
            "squirrel/memories/add",
            {"scope": "global", "kind": "preference", "text": "Answer in short sentences."},
        )["memory"]
        srv.call("squirrel/memories/deprecate", {"memory_id": short["id"]})
        ctx = srv.call("squirrel/get_task_context", {"project_root": str(shop), "task": HTTP_TASK})
        assert ctx["memory_ids"]
        fb = srv.call(
            "squirrel/feedback",
            {"context_id": ctx["context_id"], "errors": 1, "retries": 0},
        )
        assert fb["counted"]
        srv.call(
            "squirrel/ingest",
            {
                "project_root": str(shop),
                "session_id": "s2",
                "events": [ev("user", "message", text="Add a retry to the invoice download")],
            },
        )
        memories = srv.call("squirrel/memories/list", {"project_root": str(shop)})["memories"]
        status = srv.call("squirrel/status")
        assert status["pending_events"] == 1 and status["open_sessions"] == 1
    ids = [m["id"] for m in memories] + [note["id"], short["id"]]
    return {"shop": shop, "memories": ids, "rels": rels}


def answers(srv: Server, shop: Path, memory_ids: list[str]) -> dict:
    """What a client reads back: every list, search and count that must survive a round trip."""
    assert srv.wait_ready(120) == "ready"
    blocks = srv.call("blocks/list", {"limit": 1000})
    out: dict = {"blocks": blocks}
    out["page"] = srv.call("blocks/list", {"limit": 2, "act_id": "act-1"})  # cursors are rowids
    out["relationships"] = {
        b["id"]: srv.call("memory/relationships/list", {"block_id": b["id"]})
        for b in blocks["blocks"]
    }
    out["related"] = srv.call("memory/related", {"block_id": blocks["blocks"][0]["id"]})
    out["documents"] = srv.call("documents/list")
    out["search"] = {
        q: [
            (m["block_id"], round(m["score"], 6))
            for m in srv.call("memory/search", {"query": q})["matches"]
        ]
        for q in BLOCK_QUERIES
    }
    out["squirrel_search"] = {
        q: [
            (m["id"], round(m["score"], 6))
            for m in srv.call("squirrel/search", {"query": q, "project_root": str(shop)})["matches"]
        ]
        for q in MEMORY_QUERIES
    }
    out["memories"] = {m: srv.call("squirrel/memories/get", {"memory_id": m}) for m in memory_ids}
    out["memory_list"] = srv.call(
        "squirrel/memories/list",
        {"project_root": str(shop), "statuses": ["provisional", "active", "deprecated"]},
    )
    episodes = srv.call("squirrel/episodes/list", {"project_root": str(shop)})
    out["episodes"] = episodes
    out["episode"] = {
        e["id"]: srv.call("squirrel/episodes/get", {"episode_id": e["id"]})
        for e in episodes["episodes"]
    }
    stats = srv.call("memory/stats")
    # (what this process holds or runs now, not what is stored: left out of the comparison)
    process = ("embedder", "database", "requests", "inflight_requests", "keyword_index")
    out["stats"] = {k: v for k, v in stats.items() if k not in process}
    status = srv.call("squirrel/status")
    out["status"] = {k: status[k] for k in ("memories", "episodes", "pending_events", "projects")}
    out["status"]["calls"] = status["writer_calls_by_day"]
    assert out["status"]["memories"]["by_status"]["deprecated"] == 1
    ctx = srv.call("squirrel/get_task_context", {"project_root": str(shop), "task": HTTP_TASK})
    out["context"] = (ctx["memory_ids"], ctx["context_prompt"].split("\n", 1)[1])
    return out


def test_a_round_trip_gives_the_same_answers(tmp_path):
    db, copy, target = tmp_path / "memory.db", tmp_path / "copy.db", tmp_path / "dump.jsonl"
    built = build(db, tmp_path)
    done = dump(db, target)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    lines = [json.loads(x) for x in target.read_bytes().splitlines()]
    header, end = lines[0], lines[-1]
    assert header["format"] == "reos-memory-dump" and header["format_version"] == 1
    assert header["embedding_model"] == "reos-hash-v1-384" and header["schema_version"] >= 6
    assert end["type"] == "end" and end["records"] == len(lines) - 2
    kinds = {x["type"] for x in lines[1:-1]}
    assert {"block", "relationship", "document", "memory", "evidence", "memory_metrics"} <= kinds
    assert {"episode", "context_request", "memory_injection", "session_event"} <= kinds
    assert header["counts"] == end["counts"]
    loaded = load(copy, target)
    assert loaded.returncode == 0, loaded.stderr
    assert b"indexed" in loaded.stderr and b"came from" not in loaded.stderr  # same model
    assert dump_rows(copy) == dump_rows(db)  # every row as it was
    with Server(db, env=ENV) as a, Server(copy, env=ENV) as b:
        before = answers(a, built["shop"], built["memories"])
        after = answers(b, built["shop"], built["memories"])
    assert after == before
    assert before["stats"]["total_embeddings"] >= 6 and any(before["search"].values())
    assert any(before["squirrel_search"].values())
    assert any(m["metrics"]["use_count"] for m in before["memories"].values())
    assert before["page"]["next_cursor"]
    assert before["status"]["pending_events"] == 1


def dump_rows(db: Path) -> dict:
    """Every dumped table's rows, read directly (ids, timestamps, versions, rowids included)."""
    conn = apsw.Connection(str(db))
    try:
        out = {}
        for t in dump_sql.TABLES:
            cols = [
                r[1] for r in conn.execute(f'PRAGMA table_info("{t.name}")') if r[1] not in t.skip
            ]
            select = ", ".join(f'"{c}"' for c in cols)
            if t.rowid:
                sql = f'SELECT rowid, {select} FROM "{t.name}" ORDER BY rowid'
            else:
                sql = f'SELECT {select} FROM "{t.name}"'
            out[t.name] = conn.execute(sql).fetchall()
        return out
    finally:
        conn.close()


def user_rows(db: Path) -> int:
    conn = apsw.Connection(str(db))
    try:
        return sum(dump_sql.tables_with_rows(conn).values())
    finally:
        conn.close()


@pytest.fixture
def small(tmp_path) -> tuple[Path, Path]:
    """A small database and its dump."""
    db = tmp_path / "small.db"
    with Server(db) as srv:
        srv.wait_ready()
        first = block(srv, "Blue is the favourite colour", properties={"k": 1})
        second = block(srv, "The sky is blue", parent_id=first["id"])
        srv.call(
            "memory/relationships/create",
            {"source_id": second["id"], "target_id": first["id"], "rel_type": "supports"},
        )
        srv.call("squirrel/memories/add", {"project_id": "p1", "kind": "note", "text": "Use pnpm."})
    target = tmp_path / "small.jsonl"
    done = dump(db, target)
    assert done.returncode == 0, done.stderr
    return db, target


def test_load_refuses_a_database_that_holds_data(small, tmp_path):
    db, target = small
    before = dump_rows(db)
    size = os.path.getsize(db)
    refused = load(db, target)
    assert refused.returncode == 1
    assert b"holds data" in refused.stderr and b"nothing was stored" in refused.stderr
    assert dump_rows(db) == before and os.path.getsize(db) == size
    # an empty database (migrated, never written) is fine
    empty = tmp_path / "empty.db"
    with Server(empty) as srv:
        srv.wait_ready()
    assert load(empty, target).returncode == 0
    assert dump_rows(empty) == before


def reseal(lines: list[bytes]) -> bytes:
    """Lines with a new, matching end record (a dump edited by someone who knows the format)."""
    counts: dict[str, int] = {}
    for line in lines[1:]:
        kind = json.loads(line)["type"]
        counts[kind] = counts.get(kind, 0) + 1
    digest = hashlib.sha256(b"".join(lines)).hexdigest()
    end = {"type": "end", "records": len(lines) - 1, "counts": counts, "sha256": digest}
    return b"".join(lines) + json.dumps(end).encode() + b"\n"


def test_a_truncated_or_corrupt_dump_loads_nothing(small, tmp_path):
    _, target = small
    data = target.read_bytes()
    lines = data.splitlines(keepends=True)
    cases = {
        "mid_line": (
            data[: len(data) - len(lines[-1]) - 20],
            b"line %d: not valid JSON" % (len(lines) - 1),
        ),
        "no_end": (b"".join(lines[:-1]), b"without its end record: it is truncated"),
        "edited": (data.replace(b"The sky is blue", b"The sky is red!"), b"checksum"),
        "not_a_dump": (b'{"hello": 1}\n', b"line 1: not a reos-memory-dump header"),
        "empty": (b"", b"the dump is empty"),
        # well formed and sealed, but an evidence row whose memory is not in the dump
        "dangling": (reseal([x for x in lines[:-1] if b'"type":"memory"' not in x]), b"missing"),
        "unknown": (reseal([*lines[:-1], b'{"type":"secret","row":{"a":1}}\n']), b"unknown"),
    }
    for name, (text, message) in cases.items():
        bad = tmp_path / f"{name}.jsonl"
        bad.write_bytes(text)
        fresh = tmp_path / f"{name}.db"
        done = load(fresh, bad)
        assert done.returncode == 1, (name, done.stderr)
        assert message in done.stderr and b"nothing was stored" in done.stderr, (name, done.stderr)
        assert not fresh.exists()  # the database it would have created is gone
    # into an existing empty database: it stays empty; from stdin as well
    empty = tmp_path / "empty.db"
    with Server(empty) as srv:
        srv.wait_ready()
    done = load(empty, "-", stdin=b"".join(lines[:-1]))
    assert done.returncode == 1 and b"truncated" in done.stderr
    assert empty.exists() and user_rows(empty) == 0


def test_the_dump_is_private_has_no_vectors_and_never_overwrites(small, tmp_path):
    db, target = small
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    text = target.read_bytes()
    records = [json.loads(x) for x in text.splitlines()]
    assert {r["type"] for r in records} == {
        "header",
        "block",
        "relationship",
        "project",
        "memory",
        "evidence",
        "memory_metrics",
        "end",
    }
    assert all("embedding" not in r.get("row", {}) for r in records)
    assert b"$base64" not in text and b"embedding_model" in text
    assert len(text) < 8000  # 2 blocks and a memory: 384 floats each would not fit
    again = dump(db, target)
    assert again.returncode == 1 and b"never overwrites" in again.stderr
    assert target.read_bytes() == text
    # to stdout, then loaded from stdin: the same rows
    out = dump(db, "-")
    assert out.returncode == 0 and out.stdout.splitlines()[1:-1] == text.splitlines()[1:-1]
    piped = tmp_path / "piped.db"
    assert load(piped, "-", stdin=out.stdout).returncode == 0
    assert dump_rows(piped) == dump_rows(db)


def test_another_embedder_is_said_and_used(small, tmp_path):
    _, target = small
    copy = tmp_path / "copy.db"
    done = load(copy, target, env={"REOS_MEMORY_HASH_DIMENSIONS": "256"})
    assert done.returncode == 0, done.stderr
    assert b"came from reos-hash-v1-384" in done.stderr and b"reos-hash-v1-256" in done.stderr
    conn = apsw.Connection(str(copy))
    try:
        model = conn.execute("SELECT value FROM embedding_meta WHERE key = 'model_id'").fetchall()
        assert model == [("reos-hash-v1-256",)]
        assert conn.execute("SELECT count(*) FROM block_embeddings").fetchall() == [(2,)]
        vec = conn.execute("SELECT length(embedding) FROM memories").fetchall()
        assert vec == [(4 * 256,)]
    finally:
        conn.close()
    none = load(tmp_path / "none.db", target, embedder="none")
    assert none.returncode == 0 and b"no vectors computed" in none.stderr


def test_every_table_is_dumped_or_derived(db):
    """A new table must be put on one list or the other (store/dump.py)."""
    assert db.read(dump_sql.undumped_tables) == []
