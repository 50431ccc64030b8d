"""The in-memory keyword index answers exactly as FTS5 does (same blocks, same BM25 scores), and
stays so while another connection - as another process - inserts, edits, moves and deletes
blocks; it hands a query it cannot answer exactly back to FTS5."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from reos_memory.store import Database
from reos_memory.store import keyword_index as kx
from reos_memory.store import keywords as kw_sql
from reos_memory.store.migrations import migrate

NOW = "2026-01-01T00:00:00.000Z"
VOCAB = [
    *[
        "release",
        "budget",
        "deploy",
        "staging",
        "cache",
        "redis",
        "postgres",
        "migration",
        "invoice",
        "customer",
    ],
    *[
        "travel",
        "holiday",
        "report",
        "meeting",
        "design",
        "review",
        "schedule",
        "scheduler",
        "scheduling",
        "queue",
    ],
    *[
        "kafka",
        "topic",
        "token",
        "cookie",
        "mobile",
        "backup",
        "nightly",
        "outage",
        "latency",
        "garden",
        "painting",
    ],
    *["adoption", "café", "resume"],
]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 14)))


def put(db: Database, rows: list[tuple[str, str, str]]) -> None:
    def tx(conn):
        for bid, act, content in rows:
            conn.execute(
                "INSERT INTO blocks(id, type, act_id, position, content, content_hash,"
                " rich_text, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (bid, "paragraph", act, 0, content, bid, json.dumps([]), NOW, NOW),
            )

    db.write(tx)


def same_answer(mine: Database, index: kx.KeywordIndex, rng: random.Random, n: int = 40) -> None:
    """`n` random queries (acts, budgets, word counts): the index's answer is FTS5's."""
    for _ in range(n):
        words = list(dict.fromkeys(rng.choice(VOCAB) for _ in range(rng.randint(1, 4))))
        act = rng.choice([None, "", "act-0", "act-1", "act-2", "missing"])
        budget = rng.choice([None, 30, 200])
        k = rng.choice([5, 10, 50])

        def both(conn, words=words, act=act, budget=budget, k=k):
            return (
                kw_sql.keyword_search(conn, words, k, act, budget),
                index.search(conn, words, k, act, budget),
            )

        want, got = mine.read(both)
        assert got is not None
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12, abs=1e-12)
        counts = Counter(s for _, s in want)
        last = want[-1][1] if want else None
        # equal scores at the cut may be any of the tied blocks (FTS5 promises no order)
        assert [b for b, s in got if counts[s] == 1 and s != last] == [
            b for b, s in want if counts[s] == 1 and s != last
        ]


def test_answers_are_fts5s_while_another_connection_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(kx, "MAX_DIRTY", 25)  # fold changes into the cached postings often
    path = str(tmp_path / "k.db")
    mine, other = Database(path), Database(path)
    migrate(mine)
    rng = random.Random(3)
    put(other, [(f"b{i}", f"act-{i % 3}", text(rng)) for i in range(400)])
    index = kx.KeywordIndex()
    same_answer(mine, index, rng)
    assert index.loads == 1 and index.status()["postings"] > 0

    for step in range(12):  # writes of every kind, by the other connection, between searches
        new = 400 + step * 10
        put(other, [(f"b{i}", f"act-{i % 3}", text(rng)) for i in range(new, new + 10)])

        def edit(conn, step=step):
            for i in range(step * 7, step * 7 + 5):
                conn.execute("UPDATE blocks SET content = ? WHERE id = ?", (text(rng), f"b{i}"))
            conn.execute("UPDATE blocks SET act_id = 'act-2' WHERE id = ?", (f"b{step + 200}",))
            conn.execute("DELETE FROM blocks WHERE id = ?", (f"b{step * 13 + 1}",))

        other.write(edit)
        same_answer(mine, index, rng, 15)
    assert index.loads == 1  # changes were patched in, never a reload
    mine.close()
    other.close()


def test_a_reader_behind_the_pruned_log_starts_afresh(db):
    rng = random.Random(4)
    put(db, [(f"b{i}", "act-0", text(rng)) for i in range(50)])
    index = kx.KeywordIndex()
    same_answer(db, index, rng, 5)
    put(db, [(f"b{i}", "act-1", text(rng)) for i in range(50, 60)])
    db.write(lambda c: c.execute("DELETE FROM keyword_changes"))  # as the prune trigger does
    put(db, [(f"b{i}", "act-2", text(rng)) for i in range(60, 70)])
    same_answer(db, index, rng, 10)
    assert index.loads == 2


def test_what_it_cannot_answer_exactly_goes_to_fts5(db):
    from reos_memory.embeddings.runtime import EmbeddingService
    from reos_memory.index.vectors import Indexer

    put(db, [("b1", "act-0", "snake_case names and snake case"), ("b2", "act-0", "case study")])
    index = kx.KeywordIndex()
    # `snake_case` is a phrase of two terms for FTS5: the index hands it back
    assert db.read(lambda c: index.search(c, ["snake_case"], 5, None)) is None
    indexer = Indexer(db, EmbeddingService("none", None))
    assert indexer.keywords is not None
    hits = db.read(lambda c: indexer.keyword_search(c, ["snake_case"], 5, None))
    assert [b for b, _ in hits] == ["b1"]  # FTS5 answered: only b1 has the phrase

    # a read transaction older than what the index already holds is answered by FTS5
    assert [b for b, _ in db.read(lambda c: index.search(c, ["case"], 5, None))] == ["b2", "b1"]
    reader = db.connect()
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM blocks").fetchall() == [(2,)]  # its snapshot
    put(db, [("b3", "act-0", "case")])
    assert db.read(lambda c: index.search(c, ["case"], 5, None))[0][0] == "b3"
    assert index.search(reader, ["case"], 5, None) is None
    assert len(kw_sql.keyword_search(reader, ["case"], 5, None)) == 2
    reader.execute("COMMIT")
    reader.close()

    # limits SQL reads its own way, and rowids too far apart for arrays, go to FTS5 as well
    assert db.read(lambda c: index.search(c, ["case"], 0, None)) is None
    assert db.read(lambda c: index.search(c, ["case"], 5, None, 0)) is None

    def far(conn):
        conn.execute(
            "INSERT INTO blocks(rowid, id, type, act_id, position, content, content_hash,"
            " rich_text, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (10**12, "far", "paragraph", "act-0", 0, "case far away", "far", "[]", NOW, NOW),
        )

    db.write(far)
    assert db.read(lambda c: index.search(c, ["case"], 5, None)) is None
    far_hits = db.read(lambda c: indexer.keyword_search(c, ["far"], 5, None))
    assert [b for b, _ in far_hits] == ["far"]


def test_a_large_store_loads_on_a_thread_while_fts5_answers(db, monkeypatch):
    import time

    monkeypatch.setattr(kx, "LOAD_INLINE_MAX", 20)  # "large": more than 20 blocks
    rng = random.Random(6)
    put(db, [(f"b{i}", f"act-{i % 3}", text(rng)) for i in range(60)])
    index = kx.KeywordIndex(db.read)
    assert db.read(lambda c: index.search(c, ["release"], 5, None)) is None  # loading
    deadline = time.monotonic() + 10
    while (index._loading or index.loads == 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert index.loads == 1 and not index._loading
    same_answer(db, index, rng, 10)
