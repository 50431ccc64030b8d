"""Migrations: a blank database gets the exact schema; upgrades are safe."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import apsw
import pytest

from reos_memory.errors import SchemaError
from reos_memory.store import Database
from reos_memory.store.migrations import Migration, load_migrations, migrate


def columns(conn, table):
    return [(r[1], r[2], bool(r[3]), r[5]) for r in conn.execute(f"PRAGMA table_info({table})")]


def test_blank_database_gets_the_schema(tmp_path):
    db = Database(str(tmp_path / "m.db"))
    assert migrate(db) == [m.version for m in load_migrations()]
    conn = db.conn()
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"blocks", "block_relationships", "block_embeddings", "schema_migrations"} <= tables
    assert columns(conn, "block_relationships") == [
        ("id", "TEXT", False, 1),
        ("source_block_id", "TEXT", True, 0),
        ("target_block_id", "TEXT", True, 0),
        ("relationship_type", "TEXT", True, 0),
        ("confidence", "REAL", False, 0),
        ("weight", "REAL", False, 0),
        ("source", "TEXT", True, 0),
        ("created_at", "TEXT", True, 0),
    ]
    assert columns(conn, "block_embeddings") == [
        ("block_id", "TEXT", False, 1),
        ("embedding", "BLOB", True, 0),
        ("embedding_model", "TEXT", False, 0),
        ("content_hash", "TEXT", True, 0),
        ("created_at", "TEXT", True, 0),
    ]
    assert [c[0] for c in columns(conn, "blocks")] == [
        "id",
        "type",
        "act_id",
        "parent_id",
        "page_id",
        "position",
        "content",
        "content_hash",
        "rich_text",
        "properties",
        "version",
        "created_at",
        "updated_at",
    ]
    fks = {(r[2], r[3], r[6]) for r in conn.execute("PRAGMA foreign_key_list(block_relationships)")}
    assert fks == {
        ("blocks", "source_block_id", "CASCADE"),
        ("blocks", "target_block_id", "CASCADE"),
    }
    indexes = {
        r[1]: [c[2] for c in conn.execute(f"PRAGMA index_info({r[1]})")]
        for r in conn.execute("PRAGMA index_list(block_relationships)")
    }
    assert indexes["idx_rel_out"][0] == "source_block_id"
    assert indexes["idx_rel_in"][0] == "target_block_id"
    assert any(
        cols == ["source_block_id", "target_block_id", "relationship_type"]
        for cols in indexes.values()
    )
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchall()[0][0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchall()[0][0] > 0
    assert conn.execute("SELECT vec_version()").fetchall()[0][0].startswith("v")
    conn.execute("CREATE VIRTUAL TABLE temp.f USING fts5(x)")
    with pytest.raises(apsw.ConstraintError):
        conn.execute(
            "INSERT INTO blocks(id,type,act_id,content_hash,created_at,updated_at) VALUES ('a','p','x','h','t','t')"
        )
        conn.execute(
            "INSERT INTO block_relationships VALUES ('r','a','a','supports',1,1,'user','t')"
        )
    assert migrate(db) == []  # idempotent
    db.close()


def test_upgrade_backs_up_and_applies_in_one_transaction(tmp_path):
    path = tmp_path / "m.db"
    base = load_migrations()
    db = Database(str(path))
    migrate(db, base)
    db.conn().execute(
        "INSERT INTO blocks(id,type,act_id,content_hash,created_at,updated_at) VALUES ('keep','p','x','h','t','t')"
    )
    n = len(base) + 1
    broken = Migration(n, "broken", "CREATE TABLE extra(x); INSERT INTO nowhere VALUES (1);")
    with pytest.raises(SchemaError, match="failed and was rolled back"):
        migrate(db, [*base, broken])
    conn = db.conn()
    assert not conn.execute(
        "SELECT name FROM sqlite_master WHERE name='extra'"
    ).fetchall()  # rolled back whole
    assert conn.execute("SELECT count(*) FROM blocks").fetchall()[0][0] == 1
    good = Migration(n, "extra", "CREATE TABLE extra(x);")
    assert migrate(db, [*base, good]) == [n]
    assert Path(f"{path}.pre-{n:04d}.bak").stat().st_mode & 0o777 == 0o600  # as private as the db
    backup = apsw.Connection(f"{path}.pre-{n:04d}.bak")
    assert backup.execute("SELECT id FROM blocks").fetchall() == [("keep",)]
    # an applied migration that changed, or an unknown newer one, stops the service
    with pytest.raises(SchemaError):
        migrate(db, [*base, Migration(n, "extra", "CREATE TABLE extra(y);")])
    with pytest.raises(SchemaError):
        migrate(db, base)
    db.close()


def test_concurrent_first_start(tmp_path):
    path = tmp_path / "race.db"
    code = f"from reos_memory.store import Database; from reos_memory.store.migrations import migrate; print(migrate(Database({str(path)!r})))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    conn = apsw.Connection(str(path))
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == [
        m.version for m in load_migrations()
    ]


@pytest.mark.slow
def test_wheel_ships_migrations(tmp_path):
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    [wheel] = tmp_path.glob("reos_memory-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for m in load_migrations():
        assert f"reos_memory/migrations/{m.version:04d}_{m.name}.sql" in names
    # the team server's PostgreSQL migrations (store/team/migrations.py reads them from there)
    from reos_memory.store.team.migrations import load_team_migrations

    for m in load_team_migrations():
        assert f"reos_memory/migrations/team/{m.version:04d}_{m.name}.sql" in names


SEED_001 = {  # seed 001 section 1: (name, type, not null, primary key), in order
    "memories": [
        ("id", "TEXT", False, 1),
        ("project_id", "TEXT", False, 0),
        ("scope", "TEXT", True, 0),
        ("owner_type", "TEXT", True, 0),
        ("owner_id", "TEXT", True, 0),
        ("kind", "TEXT", True, 0),
        ("tier", "TEXT", True, 0),
        ("key", "TEXT", False, 0),
        ("text", "TEXT", True, 0),
        ("status", "TEXT", True, 0),
        ("confidence", "REAL", False, 0),
        ("expires_at", "TEXT", False, 0),
        ("embedding", "BLOB", False, 0),
        ("created_at", "TEXT", True, 0),
        ("updated_at", "TEXT", True, 0),
    ],
    "evidence": [
        ("id", "TEXT", False, 1),
        ("memory_id", "TEXT", True, 0),
        ("episode_id", "TEXT", True, 0),
        ("source", "TEXT", False, 0),
        ("frustration", "TEXT", False, 0),
        ("created_at", "TEXT", True, 0),
    ],
    "memory_metrics": [
        ("memory_id", "TEXT", False, 1),
        ("use_count", "INTEGER", False, 0),
        ("opportunities", "INTEGER", False, 0),
        ("suspected_regret_hits", "INTEGER", False, 0),
        ("estimated_regret_saved", "REAL", False, 0),
        ("last_used_at", "TEXT", False, 0),
        ("last_evaluated_at", "TEXT", False, 0),
    ],
    "episodes": [
        ("id", "TEXT", False, 1),
        ("project_id", "TEXT", True, 0),
        ("start_ts", "TEXT", True, 0),
        ("end_ts", "TEXT", True, 0),
        ("events_json", "TEXT", True, 0),
        ("processed", "INTEGER", False, 0),
    ],
}


def test_squirrel_tables_are_the_seeds(tmp_path):
    db = Database(str(tmp_path / "s.db"))
    migrate(db)
    conn = db.conn()
    for table, cols in SEED_001.items():
        have = columns(conn, table)
        assert have[: len(cols)] == cols, table  # the seed's columns first, exactly
    extra = [c[0] for c in columns(conn, "memories")][len(SEED_001["memories"]) :]
    assert extra == ["polarity", "path_prefix"]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"context_requests", "memory_injections", "memories_fts", "projects"} <= tables
    assert [c[0] for c in columns(conn, "context_requests")][:10] == [
        "context_id",
        "project_id",
        "owner_type",
        "owner_id",
        "session_id",
        "task",
        "path",
        "created_at",
        "budget_tokens",
        "tokens",
    ]
    fks = {(r[2], r[3]) for r in conn.execute("PRAGMA foreign_key_list(evidence)")}
    assert fks == {("memories", "memory_id")}
    db.close()


def test_squirrel_migration_leaves_blocks_untouched(tmp_path):
    """A database that already holds blocks, relationships and vectors migrates to Squirrel and
    every byte of the block graph reads back the same."""
    path = tmp_path / "old.db"
    every = load_migrations()
    before_squirrel = [m for m in every if m.version < 4]
    db = Database(str(path))
    migrate(db, before_squirrel)
    conn = db.conn()
    for i in range(50):
        conn.execute(
            "INSERT INTO blocks(id,type,act_id,content,content_hash,created_at,updated_at)"
            " VALUES (?, 'paragraph', 'act', ?, ?, 't', 't')",
            (f"b{i}", f"text {i}", f"h{i}"),
        )
        conn.execute(
            "INSERT INTO block_embeddings(block_id, embedding, content_hash, created_at)"
            " VALUES (?, ?, ?, 't')",
            (f"b{i}", bytes(range(16)) * 96, f"h{i}"),
        )
    for i in range(49):
        conn.execute(
            "INSERT INTO block_relationships VALUES (?, ?, ?, 'follows_from', 0.5, 1, 'cairn', 't')",
            (f"r{i}", f"b{i + 1}", f"b{i}"),
        )

    def dump(c):
        return {
            t: c.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
            for t in ("blocks", "block_relationships", "block_embeddings", "embedding_meta")
        }

    snapshot = dump(conn)
    fts = conn.execute("SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'text'").fetchall()
    assert migrate(db) == [m.version for m in every if m.version >= 4]
    conn = db.conn()
    assert dump(conn) == snapshot
    assert (
        conn.execute("SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'text'").fetchall() == fts
    )
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert (path.parent / f"{path.name}.pre-0004.bak").exists()
    db.close()


def test_every_statement_of_a_migration_runs_even_after_one_that_returns_rows(tmp_path):
    db = Database(str(tmp_path / "m.db"))
    script = (
        "CREATE TABLE a(x); SELECT 1 UNION SELECT 2; CREATE TABLE b(y); INSERT INTO b VALUES (7);"
    )
    assert migrate(db, [Migration(1, "rows_midway", script)]) == [1]
    assert db.conn().execute("SELECT y FROM b").fetchall() == [(7,)]


def test_a_migration_failing_half_way_leaves_the_previous_version_and_says_so(tmp_path):
    db = Database(str(tmp_path / "m.db"))
    good = Migration(1, "first", "CREATE TABLE a(x); INSERT INTO a VALUES (1);")
    bad = Migration(2, "second", "CREATE TABLE b(y); INSERT INTO nowhere VALUES (1);")
    assert migrate(db, [good]) == [1]
    with pytest.raises(SchemaError) as err:
        migrate(db, [good, bad], backup=False)
    assert "0002 (second) failed and was rolled back" in err.value.message
    assert "stays at version 1" in err.value.message and err.value.data["database_version"] == 1
    conn = db.conn()
    assert conn.execute("SELECT version FROM schema_migrations").fetchall() == [(1,)]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "b" not in tables and conn.execute("SELECT x FROM a").fetchall() == [(1,)]


def _upgrade(path: str, barrier, results) -> None:  # a process starting on the same file
    db = Database(path)
    barrier.wait()
    try:
        migrate(db)
        results.put("ok")
    except BaseException as exc:  # reported to the test
        results.put(repr(exc))
    finally:
        db.close()


def test_processes_upgrading_at_once_all_succeed_and_leave_a_whole_backup(tmp_path):
    import multiprocessing

    path = str(tmp_path / "busy.db")
    db = Database(path)
    migrate(db, load_migrations()[:-1], backup=False)
    db.write(
        lambda c: c.execute(
            "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < 1500)"
            " INSERT INTO blocks(id, type, act_id, position, content, content_hash, rich_text,"
            " created_at, updated_at) SELECT 'b' || v, 'paragraph', 'a', v,"
            " hex(randomblob(20000)), 'h', '[]', 't', 't' FROM n"
        )
    )
    db.close()
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_upgrade, args=(path, barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok"] * 4
    backups = [f for f in os.listdir(tmp_path) if f.endswith(".bak")]
    assert len(backups) == 1 and not [f for f in os.listdir(tmp_path) if f.endswith(".partial")]
    copy = apsw.Connection(str(tmp_path / backups[0]))
    assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert copy.execute("SELECT count(*) FROM blocks").fetchall() == [(1500,)]
    copy.close()


def test_usage_queued_before_receipts_is_owed_again_not_lost(tmp_path):
    """A usage report queued by a version without receipts would be refused by the server once
    upgraded: the upgrade makes its counts owed again (the next report carries them) and drops
    it; the cursor goes back to the start so the next pull brings every receipt."""
    every = load_migrations()
    db = Database(str(tmp_path / "cache.db"))
    migrate(db, [m for m in every if m.version < 13])
    conn = db.conn()
    conn.execute(
        "INSERT INTO memories(id, project_id, scope, owner_type, owner_id, kind, tier, text,"
        " status, created_at, updated_at) VALUES ('tm', 'p', 'project', 'team', 't', 'note',"
        " 'long_term', 'x', 'active', 't', 't')"
    )
    conn.execute(
        "INSERT INTO team_memories(memory_id, server, org_id, version, seq, pulled_at,"
        " reported_opportunities, reported_uses, reported_regret_hits, reported_regret_saved)"
        " VALUES ('tm', 'http://s', 'o', 1, 7, 't', 5, 3, 1, 1.5)"
    )
    conn.execute(
        "INSERT INTO team_sync(server, org_id, key_id, role, last_seq) VALUES"
        " ('http://s', 'o', 'k', 'reader', 7)"
    )
    params = (
        '{"idempotency_key": "usage:1", "items": [{"memory_id": "tm", "opportunities": 2,'
        ' "uses": 1, "regret_hits": 1, "regret_saved": 1.5}]}'
    )
    conn.execute(
        "INSERT INTO team_outbox(server, idempotency_key, method, params, created_at) VALUES"
        " ('http://s', 'usage:1', 'squirrel/usage/report', ?, 't')",
        (params,),
    )
    migrate(db)
    conn = db.conn()
    assert conn.execute(
        "SELECT reported_opportunities, reported_uses, reported_regret_hits,"
        " reported_regret_saved, receipt FROM team_memories"
    ).fetchall() == [(3, 2, 0, 0.0, None)]
    assert conn.execute("SELECT count(*) FROM team_outbox").fetchall() == [(0,)]
    assert conn.execute("SELECT last_seq FROM team_sync").fetchall() == [(0,)]
    db.close()
