"""The memory vector index (faiss, float16 codes): exactness of the full scan, recall of the
inverted file against exact search (partition-filtered too), and coherence with writes made
through another connection, as another process makes them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from reos_memory.embeddings.base import to_blob
from reos_memory.store import Database
from reos_memory.store import vectors as vec_sql
from reos_memory.store.migrations import migrate
from reos_memory.store.vector_index import Shape, VectorSearch

DIMS = 64
MODEL = "test-model"
NOW = "2026-01-01T00:00:00.000Z"


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 40 centres, like embeddings of texts on a few dozen topics."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIMS))
    v = centres[rng.integers(0, 40, n)] + rng.normal(scale=0.6, size=(n, DIMS))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def act_of(i: int) -> str:
    return "small" if i % 50 == 0 else f"act-{i % 3}"  # three big acts and a 2% one


def put(db: Database, vecs: np.ndarray, start: int = 0) -> None:
    def tx(conn):
        vec_sql.set_meta(conn, model_id=MODEL, dimensions=DIMS)
        vec_sql.ensure_vector_table(conn, DIMS)
        for j, v in enumerate(vecs):
            i = start + j
            conn.execute(
                "INSERT OR IGNORE INTO blocks(id, type, act_id, position, content, content_hash,"
                " rich_text, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (f"b{i}", "paragraph", act_of(i), i, f"t{i}", f"h{i}", json.dumps([]), NOW, NOW),
            )
            vec_sql.upsert_embedding(conn, f"b{i}", to_blob(v), MODEL, f"h{i}", NOW)

    db.write(tx)


def exact(vecs: dict[str, np.ndarray], q: np.ndarray, k: int, keep=lambda b: True) -> list[str]:
    scored = sorted(((-float(v @ q), b) for b, v in vecs.items() if keep(b)))
    return [b for _s, b in scored[:k]]


def assert_exact_top(hits, vecs, q, k, keep=lambda b: True) -> None:
    """The k best up to float16 rounding: a swap is allowed only between near-ties."""
    best = exact(vecs, q, k, keep)
    kth = float(vecs[best[-1]] @ q)
    assert len(hits) == k and all(keep(b) for b, _ in hits)
    assert all(float(vecs[b] @ q) >= kth - 2e-4 for b, _ in hits)
    assert [s for _b, s in hits] == sorted((s for _b, s in hits), reverse=True)


def test_full_scan_is_exact_up_to_float16_rounding(db):
    vecs = clustered(600, 1)
    put(db, vecs)
    search = VectorSearch("memory", Shape(flat_max=10_000))
    stored = {f"b{i}": v for i, v in enumerate(vecs)}
    for q in clustered(20, 2):
        hits = search.knn(vec_sql.BLOCKS, q, 10, None, db.read, DIMS)
        assert_exact_top(hits, stored, q, 10)
        for b, s in hits:
            assert s == pytest.approx(float(stored[b] @ q), abs=2e-4)
        near = exact(stored, q, 30)[10:]
        sims = search.similarities(vec_sql.BLOCKS, q, [*near, "missing"], db.read, DIMS)
        assert set(sims) == set(near)
        for b, s in sims.items():
            assert s == pytest.approx(float(stored[b] @ q), abs=2e-4)
        hits = search.knn(vec_sql.BLOCKS, q, 10, ["small"], db.read, DIMS)
        assert_exact_top(hits, stored, q, 10, lambda b: act_of(int(b[1:])) == "small")
    assert search.status(vec_sql.BLOCKS) == {
        "kind": "flat",
        "vectors": 600,
        "loaded_from": "vectors",
    }


def test_inverted_file_recall_against_exact_search(db):
    vecs = clustered(6000, 3)
    put(db, vecs)
    search = VectorSearch("memory", Shape(flat_max=1000, lists=64, probe=8))
    stored = {f"b{i}": v for i, v in enumerate(vecs)}
    queries = clustered(60, 4)
    recall: dict[str, list[float]] = {"all": [], "act-1": [], "small": []}
    for q in queries:
        for part in recall:
            parts = None if part == "all" else [part]
            got = [b for b, _ in search.knn(vec_sql.BLOCKS, q, 10, parts, db.read, DIMS)]
            if parts:
                assert all(act_of(int(b[1:])) == part for b in got)
            want = exact(stored, q, 10, lambda b, p=part: p == "all" or act_of(int(b[1:])) == p)
            recall[part].append(len(set(got) & set(want)) / 10)
    assert search.status(vec_sql.BLOCKS) == {
        "kind": "ivf",
        "vectors": 6000,
        "lists": 64,
        "probe": 8,
        "loaded_from": "vectors",
    }
    for part, values in recall.items():
        assert np.mean(values) >= 0.95, (part, np.mean(values))


@pytest.mark.parametrize("flat_max", [10_000, 350])
def test_writes_of_another_connection_are_seen(tmp_path, flat_max):
    path = str(tmp_path / "v.db")
    mine, other = Database(path), Database(path)
    migrate(mine)
    vecs = clustered(400, 5)
    put(other, vecs[:300])
    search = VectorSearch("memory", Shape(flat_max=flat_max, lists=8, probe=8))
    q = vecs[350]
    assert "b350" not in [b for b, _ in search.knn(vec_sql.BLOCKS, q, 5, None, mine.read, DIMS)]
    put(other, vecs[300:], start=300)  # grows past flat_max=350 when that is the bound
    hits = search.knn(vec_sql.BLOCKS, q, 5, None, mine.read, DIMS)
    assert hits[0][0] == "b350" and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    other.write(lambda c: vec_sql.delete_embedding(c, "b350"))
    assert "b350" not in [b for b, _ in search.knn(vec_sql.BLOCKS, q, 5, None, mine.read, DIMS)]
    moved = vecs[7]  # b10 now holds b7's vector: both are the best match of that query
    other.write(lambda c: vec_sql.upsert_embedding(c, "b10", to_blob(moved), MODEL, "x", NOW))
    top = search.knn(vec_sql.BLOCKS, moved, 2, None, mine.read, DIMS)
    assert sorted(b for b, _ in top) == ["b10", "b7"]
    index = search.index(vec_sql.BLOCKS, mine.read, DIMS)
    assert index.kind == ("ivf" if flat_max == 350 else "flat")
    assert len(index) == 399 and index.reloads == (2 if flat_max == 350 else 1)
    # the deleted row is reused by the next new vector instead of growing the index
    put(other, clustered(1, 6), start=1000)
    search.knn(vec_sql.BLOCKS, q, 1, None, mine.read, DIMS)
    assert len(index) == 400 and len(index._ids) == 400
    mine.close()
    other.close()


def test_a_model_change_reloads_and_other_dimensions_are_never_mixed(db):
    put(db, clustered(50, 7))
    search = VectorSearch("memory", Shape())
    assert len(search.knn(vec_sql.BLOCKS, clustered(1, 8)[0], 5, None, db.read, DIMS)) == 5
    db.write(lambda c: vec_sql.set_meta(c, model_id="another"))
    index = search.index(vec_sql.BLOCKS, db.read, DIMS)
    assert index.model_id == "another" and index.reloads == 2
    wide = np.ones(DIMS * 2, dtype=np.float32) / np.sqrt(DIMS * 2)

    def widen(c):  # what a switch to a wider model does first: a vec0 table of its size
        vec_sql.ensure_vector_table(c, DIMS * 2)
        vec_sql.upsert_embedding(c, "b3", to_blob(wide), "another", "w", NOW)

    db.write(widen)
    assert len(search.index(vec_sql.BLOCKS, db.read, DIMS)) == 49


def test_an_unknown_partition_or_an_empty_index_finds_nothing(db):
    search = VectorSearch("memory", Shape())
    q = clustered(1, 9)[0]
    assert search.knn(vec_sql.BLOCKS, q, 5, None, db.read, DIMS) == []
    put(db, clustered(20, 10))
    assert search.knn(vec_sql.BLOCKS, q, 5, ["nowhere"], db.read, DIMS) == []
    assert search.knn(vec_sql.BLOCKS, q, 0, None, db.read, DIMS) == []
    assert len(search.knn(vec_sql.BLOCKS, q, 50, None, db.read, DIMS)) == 20


def test_a_cancelled_auto_link_computes_no_queued_chunk(db, monkeypatch):
    import threading
    import time
    from types import SimpleNamespace

    from reos_memory.errors import Cancelled
    from reos_memory.graph import autolink
    from reos_memory.graph.api import AutoLinkParams

    monkeypatch.setattr(autolink, "CHUNK_CELLS", 1)  # 64 rows per chunk: 20 chunks here
    put(db, clustered(1280, 11))
    indexer = SimpleNamespace(usable_model=lambda: (SimpleNamespace(dimensions=DIMS), None))
    state = {"stop": False, "computed": 0}

    nonzero = np.nonzero

    def counting_nonzero(a):  # each chunk's similarity matrix goes through np.nonzero once
        if threading.current_thread().name.startswith("auto-link") and np.ndim(a) == 2:
            state["computed"] += 1
            time.sleep(0.05)  # as long as a real chunk of a large store
        return nonzero(a)

    monkeypatch.setattr(np, "nonzero", counting_nonzero)

    def cancelled() -> bool:
        return state["stop"]

    def progress(done: int, total: int) -> None:
        state["stop"] = True  # cancel after the first chunk's result

    with pytest.raises(Cancelled):
        autolink.auto_link(db, indexer, AutoLinkParams(), progress=progress, cancelled=cancelled)
    assert state["computed"] <= 4  # the first, the ones in flight; never the 16 queued after


def test_the_change_logs_stay_bounded_whatever_writes_them(db):
    def log(conn):
        conn.executemany(
            "INSERT INTO embedding_changes(block_id) VALUES (?)",
            ((f"b{i}",) for i in range(102_500)),
        )
        conn.executemany(
            "INSERT INTO memory_embedding_changes(memory_id) VALUES (?)",
            ((f"m{i}",) for i in range(101_000)),
        )

    db.write(log)
    for table in ("embedding_changes", "memory_embedding_changes"):
        n, oldest, newest = db.read(
            lambda c, t=table: c.execute(f"SELECT count(*), min(seq), max(seq) FROM {t}").fetchall()
        )[0]
        assert n <= 101_000 and newest - oldest + 1 == n  # the newest ones, none missing
    search = VectorSearch("memory", Shape())
    put(db, clustered(30, 12))  # a fresh reader starts from the vectors themselves
    assert len(search.index(vec_sql.BLOCKS, db.read, DIMS)) == 30


SAVED = Shape(flat_max=1000, lists=32, probe=8, snapshot_min=500)


def saved_index(tmp_path: Path) -> tuple[str, np.ndarray, list]:
    """A database of 3,000 vectors whose inverted file was built and saved by a first search."""
    path = str(tmp_path / "v.db")
    db = Database(path)
    migrate(db)
    vecs = clustered(3000, 7)
    put(db, vecs)
    first = VectorSearch("memory", SAVED, path, db.write)
    hits = [first.knn(vec_sql.BLOCKS, q, 10, ["act-1"], db.read, DIMS) for q in vecs[:20]]
    assert first.status(vec_sql.BLOCKS)["loaded_from"] == "vectors"
    db.close()
    return path, vecs, hits


def test_a_saved_index_is_loaded_by_the_next_process_and_brought_up_to_date(tmp_path):
    path, vecs, hits = saved_index(tmp_path)
    snap = Path(f"{path}.vectors.block")
    assert snap.stat().st_mode & 0o777 == 0o600
    db = Database(path)
    second = VectorSearch("memory", SAVED, path)  # as the next process would
    assert [second.knn(vec_sql.BLOCKS, q, 10, ["act-1"], db.read, DIMS) for q in vecs[:20]] == hits
    assert second.status(vec_sql.BLOCKS)["loaded_from"] == "snapshot"
    # writes made after the save are applied on top of it
    new = clustered(30, 9)
    put(db, new, start=5000)
    db.write(lambda c: vec_sql.delete_embedding(c, "b3"))
    third = VectorSearch("memory", SAVED, path)
    assert third.knn(vec_sql.BLOCKS, new[4], 1, None, db.read, DIMS)[0][0] == "b5004"
    assert "b3" not in [b for b, _ in third.knn(vec_sql.BLOCKS, vecs[3], 5, None, db.read, DIMS)]
    assert third.status(vec_sql.BLOCKS) == {**second.status(vec_sql.BLOCKS), "vectors": 3029}
    assert third.status(vec_sql.BLOCKS)["loaded_from"] == "snapshot"
    db.close()


@pytest.mark.parametrize(
    "change", ["shape", "model", "database", "torn", "bad_length", "flipped", "log_pruned"]
)
def test_a_saved_index_that_does_not_match_is_never_used(tmp_path, change):
    path, vecs, hits = saved_index(tmp_path)
    snap = f"{path}.vectors.block"
    shape = SAVED
    if change == "shape":
        shape = Shape(flat_max=1000, lists=32, probe=9, snapshot_min=500)
    elif change == "database":  # another file at the same path (a restored copy, say)
        shutil.copyfile(path, f"{path}.copy")
        os.replace(f"{path}.copy", path)
    elif change == "torn":
        with open(snap, "r+b") as f:
            f.truncate(os.path.getsize(snap) // 2)
    elif change == "bad_length":  # a header claiming a huge payload must not break searches
        with open(snap, "r+b") as f:
            f.seek(len(b"REOSVIX1") + 8)
            f.write((2**62).to_bytes(8, "little"))
    elif change == "flipped":  # a damaged block of the stored vectors is noticed
        with open(snap, "r+b") as f:
            f.seek(os.path.getsize(snap) // 2)
            f.write(bytes(4096))
    db = Database(path)
    if change == "model":
        db.write(lambda c: vec_sql.set_meta(c, model_id="another-model", dimensions=DIMS))
    elif change == "log_pruned":  # the changes since the save are no longer all logged
        put(db, clustered(20, 10), start=6000)
        db.write(lambda c: vec_sql.prune_changes(c, keep=5))
    search = VectorSearch("memory", shape, path)
    got = [search.knn(vec_sql.BLOCKS, q, 10, ["act-1"], db.read, DIMS) for q in vecs[:20]]
    assert search.status(vec_sql.BLOCKS)["loaded_from"] == "vectors"
    if change in ("database", "torn", "bad_length", "flipped"):
        assert got == hits  # built again from the same vectors
    db.close()


def test_a_copy_from_before_the_save_or_a_new_database_never_uses_it(tmp_path):
    """Same file (inode), same change numbers, same ids: only the token tells them apart."""
    path = str(tmp_path / "v.db")
    db = Database(path)
    migrate(db)
    vecs = clustered(3000, 7)
    put(db, vecs)
    db.close()
    shutil.copyfile(path, f"{path}.before")  # a backup taken before the save
    db = Database(path)
    edited, other = clustered(2, 11)
    db.write(lambda c: vec_sql.upsert_embedding(c, "b5", to_blob(edited), MODEL, "e1", NOW))
    first = VectorSearch("memory", SAVED, path, db.write)
    assert first.knn(vec_sql.BLOCKS, edited, 1, None, db.read, DIMS)[0][0] == "b5"
    db.close()
    assert os.path.exists(f"{path}.vectors.block")
    # restored over the same file, then the same block edited otherwise: change 3001 is b5 again
    shutil.copyfile(f"{path}.before", path)
    db = Database(path)
    db.write(lambda c: vec_sql.upsert_embedding(c, "b5", to_blob(other), MODEL, "e2", NOW))
    second = VectorSearch("memory", SAVED, path, db.write)
    top = second.knn(vec_sql.BLOCKS, other, 1, None, db.read, DIMS)
    assert second.status(vec_sql.BLOCKS)["loaded_from"] == "vectors"
    assert top[0][0] == "b5" and top[0][1] == pytest.approx(1.0, abs=1e-3)
    db.close()
    # deleted and made again with the same writes in the same order
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
    db = Database(path)
    migrate(db)
    put(db, vecs)
    third = VectorSearch("memory", SAVED, path, db.write)
    third.knn(vec_sql.BLOCKS, vecs[0], 1, None, db.read, DIMS)
    assert third.status(vec_sql.BLOCKS)["loaded_from"] == "vectors"
    db.close()


def test_an_index_without_a_database_path_is_never_saved(db):
    vecs = clustered(700, 12)
    put(db, vecs)
    search = VectorSearch("memory", Shape(flat_max=300, lists=8, probe=8, snapshot_min=500))
    assert search.knn(vec_sql.BLOCKS, vecs[3], 1, None, db.read, DIMS)[0][0] == "b3"
    assert search.status(vec_sql.BLOCKS)["loaded_from"] == "vectors"
