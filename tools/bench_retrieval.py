"""Retrieval benchmarks (called by `tools/bench.py retrieval`); prints figures, asserts nothing.

Corpora are generated short memory-like sentences, embedded once with the real ONNX model and
cached in --workdir (beyond 100K, vectors are derived from the 100K real ones), then written
straight into a database through the store's own functions. Timed through the real stdio
process: first reply, embedder ready and first search after spawn, batch indexing via RPC,
blocks/create with indexing, full memory/search (all acts and one act), server RSS. Timed
in-process: one query embedding, KNN top-10 of the memory index with its recall@10 against exact
float32 search (all acts and one act) and vec0, and the same ingest and queries in chromadb.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.bench import Proc, pct, proc_status_kb  # noqa: E402

SUBJECTS = (
    "the user",
    "the team",
    "our API",
    "the billing service",
    "the mobile app",
    "the CI pipeline",
    "the database",
    "the auth flow",
    "the search index",
    "the deploy script",
    "the designer",
    "the customer",
    "the scheduler",
    "the cache layer",
    "the frontend",
    "the data team",
)
VERBS = (
    "prefers",
    "requires",
    "avoids",
    "depends on",
    "was migrated to",
    "keeps failing with",
    "should use",
    "documents",
    "replaced",
    "is slow because of",
    "must never skip",
    "logs",
    "retries",
    "validates",
    "exports",
    "monitors",
)
OBJECTS = (
    "httpx instead of requests",
    "Postgres 15",
    "short answers",
    "JWT tokens in cookies",
    "nightly backups",
    "feature flags",
    "UTC timestamps",
    "SSL certificate checks",
    "the staging cluster",
    "rate limits of 100 per minute",
    "Kafka topics",
    "dark mode",
    "type hints everywhere",
    "integration tests",
    "S3 buckets",
    "weekly releases",
    "the old invoice format",
    "Redis as a queue",
    "OAuth scopes",
    "markdown docs",
)
TAILS = (
    "since March",
    "after the outage",
    "for new projects",
    "in the EU region",
    "when on call",
    "per the security review",
    "for large files",
    "during peak hours",
    "as agreed with product",
    "until the refactor lands",
    "",
    "",
    "",
)


def sentences(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}".strip()
        out.append(f"{t} (note {i}).")
    return out


def onnx_embedder():
    from reos_memory.config import load_config
    from reos_memory.embeddings.onnx import OnnxEmbedder

    return OnnxEmbedder(Path(load_config().model_dir))


REAL_MAX = 100_000  # beyond this many sentences, vectors are derived from the real ones


def corpus(n: int, workdir: Path) -> tuple[list[str], np.ndarray]:
    """n sentences and their vectors: real embeddings up to REAL_MAX, derived ones beyond
    (each a mix of two real vectors plus noise, so the set keeps the real one's topics)."""
    texts = sentences(n)
    cache = workdir / f"emb-{n}.npy"
    if cache.exists():
        return texts, np.load(cache)
    if n > REAL_MAX:
        _, real = corpus(REAL_MAX, workdir)
        rng = np.random.default_rng(n)
        vecs = np.empty((n, real.shape[1]), dtype=np.float32)
        vecs[:REAL_MAX] = real
        for s in range(REAL_MAX, n, 100_000):
            m = min(100_000, n - s)
            a = real[rng.integers(0, REAL_MAX, m)]
            b = real[rng.integers(0, REAL_MAX, m)]
            v = a + rng.uniform(0.2, 0.9, (m, 1)).astype(np.float32) * b
            v += rng.normal(0, 0.05, v.shape).astype(np.float32)
            vecs[s : s + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
        np.save(cache, vecs)
        return texts, vecs
    t0 = time.perf_counter()
    vecs = onnx_embedder().embed(texts)
    np.save(cache, vecs)
    print(f"  embedded {n} sentences in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return texts, vecs


def build_db(path: Path, texts: list[str], vecs: np.ndarray) -> None:
    import apsw

    from reos_memory.embeddings.base import MINILM_ID, to_blob
    from reos_memory.models import content_hash
    from reos_memory.store import Database
    from reos_memory.store import vectors as vec_sql
    from reos_memory.store.migrations import migrate

    db = Database(str(path), synchronous="OFF")
    migrate(db)
    now = "2026-01-01T00:00:00.000Z"

    def tx(conn: apsw.Connection) -> None:
        vec_sql.set_meta(conn, model_id=MINILM_ID, dimensions=vecs.shape[1])
        vec_sql.ensure_vector_table(conn, vecs.shape[1])
        conn.executemany(
            "INSERT INTO blocks(id,type,act_id,position,content,content_hash,rich_text,created_at,updated_at)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (
                (
                    f"m{i:07d}",
                    "knowledge_fact",
                    f"act-{i % 5}",
                    i,
                    t,
                    content_hash(t),
                    json.dumps([{"content": t}]),
                    now,
                    now,
                )
                for i, t in enumerate(texts)
            ),
        )
        conn.executemany(
            "INSERT INTO block_embeddings(block_id, embedding, embedding_model, content_hash, created_at) VALUES (?,?,?,?,?)",
            (
                (f"m{i:07d}", to_blob(v), MINILM_ID, content_hash(t), now)
                for i, (t, v) in enumerate(zip(texts, vecs, strict=True))
            ),
        )
        rng = random.Random(5)  # a sparse graph so stage 2 has work to do
        conn.executemany(
            "INSERT OR IGNORE INTO block_relationships(id,source_block_id,target_block_id,relationship_type,confidence,source,created_at)"
            " VALUES (?,?,?,?,?,?,?)",
            (
                (
                    f"r{j}",
                    f"m{rng.randrange(len(texts)):07d}",
                    f"m{rng.randrange(len(texts)):07d}",
                    "references",
                    0.8,
                    "user",
                    now,
                )
                for j in range(len(texts))
            ),
        )

    db.write(tx)
    db.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def rss_mb(pid: int) -> tuple[float, float]:
    """Resident memory now and at its peak, MB."""
    return proc_status_kb(pid) / 1024, proc_status_kb(pid, "VmHWM") / 1024


def wait_ready(proc: Proc) -> float:
    while True:  # service/info answers inline, so polling it adds no database time
        if proc.call("service/info")["embedder_status"] == "ready":
            return time.perf_counter() - proc.t_spawn
        time.sleep(0.005)


def exact_top(vecs: np.ndarray, q: np.ndarray, k: int, rows: np.ndarray | None) -> set[str]:
    scores = vecs @ q if rows is None else vecs[rows] @ q
    top = np.argpartition(-scores, k)[:k]
    return {f"m{(i if rows is None else rows[i]):07d}" for i in top}


def knn_figures(path: Path, vecs: np.ndarray, qvecs: np.ndarray) -> dict[str, Any]:
    """KNN top-10 in process: the memory index (p50, recall@10 against exact float32 search,
    unfiltered and act-filtered, with exact rescoring as memory/search does it) and vec0."""
    from reos_memory.store import Database
    from reos_memory.store import vectors as vec_sql
    from reos_memory.store.vector_index import VectorSearch

    out: dict[str, Any] = {}
    db = Database(str(path))
    search = VectorSearch("memory")
    t0 = time.perf_counter()
    search.index(vec_sql.BLOCKS, db.read, vecs.shape[1])
    out["memory_index_load_s"] = round(time.perf_counter() - t0, 2)
    out["memory_index"] = search.status(vec_sql.BLOCKS)
    act2 = np.flatnonzero(np.arange(len(vecs)) % 5 == 2)  # build_db puts block i in act-(i % 5)
    for label, parts, rows in (("", None, None), ("_act_filtered", ["act-2"], act2)):
        # the exact answers first: BLAS threads still spinning after a product would slow the
        # timed search that follows it
        truth = [exact_top(vecs, q, 10, rows) for q in qvecs]
        times, found = [], []
        for q in qvecs:
            t = time.perf_counter()
            hits = search.knn(vec_sql.BLOCKS, q, 10, parts, db.read, vecs.shape[1])
            times.append(time.perf_counter() - t)
            found.append({b for b, _ in hits})
        recall = [len(f & t) / 10 for f, t in zip(found, truth, strict=True)]
        out[f"knn_top10{label}_memory_p50_ms"] = round(pct(times, 0.5) * 1000, 3)
        out[f"knn_top10{label}_recall_at_10"] = round(float(np.mean(recall)), 4)
    t = time.perf_counter()
    for q in qvecs[:20]:
        vecs @ q
    out["exact_float32_numpy_p50_ms"] = round((time.perf_counter() - t) / 20 * 1000, 2)
    vec_t = []
    for q in qvecs[: 50 if len(vecs) <= 100_000 else 5]:
        b = np.ascontiguousarray(q, dtype="<f4").tobytes()
        t = time.perf_counter()
        db.read(lambda c, b=b: vec_sql.knn_sqlite(c, b, 10, None))  # type: ignore[misc]
        vec_t.append(time.perf_counter() - t)
    db.close()
    out["knn_top10_vec0_p50_ms"] = round(pct(vec_t, 0.5) * 1000, 3)
    return out


def measure_corpus(n: int, workdir: Path, queries: list[str], qvecs: np.ndarray) -> dict[str, Any]:
    texts, vecs = corpus(n, workdir)
    path = workdir / f"retrieval-{n}.db"
    if not path.exists():
        tmp = path.with_suffix(".building")
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        build_db(tmp, texts, vecs)
        tmp.rename(path)
    out: dict[str, Any] = {
        "blocks": n,
        "vectors": "real" if n <= REAL_MAX else f"{REAL_MAX} real, the rest derived",
    }
    out.update(knn_figures(path, vecs, qvecs))
    # through the real process
    first, first_stats, ready, first_search, search_t, filtered_t = [], [], [], [], [], []
    for saved in path.parent.glob(f"{path.name}.vectors.*"):
        saved.unlink()  # the first process builds the index (and saves it); the next ones load it
    for _ in range(3):
        proc = Proc(str(path))
        proc.call("ping")
        first.append(time.perf_counter() - proc.t_spawn)
        proc.call("memory/stats")  # counts every block: grows with the database
        first_stats.append(time.perf_counter() - proc.t_spawn)
        ready.append(wait_ready(proc))
        proc.call("memory/search", {"query": queries[0]})
        first_search.append(time.perf_counter() - proc.t_spawn)
        proc.close()
    proc = Proc(str(path))
    wait_ready(proc)
    for q in queries[:10]:
        proc.call("memory/search", {"query": q})
    for q in queries:
        t = time.perf_counter()
        proc.call("memory/search", {"query": q})
        search_t.append(time.perf_counter() - t)
    for q in queries[:100]:
        t = time.perf_counter()
        proc.call("memory/search", {"query": q, "act_id": "act-2", "max_results": 10})
        filtered_t.append(time.perf_counter() - t)
    out["first_reply_after_spawn_ms"] = round(statistics.median(first) * 1000, 1)
    out["first_stats_reply_after_spawn_ms"] = round(statistics.median(first_stats) * 1000, 1)
    out["embedder_ready_after_spawn_s"] = round(statistics.median(ready), 3)
    out["first_search_after_spawn_s"] = {
        "building_the_index": round(first_search[0], 2),
        "from_the_saved_index": round(statistics.median(first_search[1:]), 2),
    }
    out["search_p50_ms"] = round(pct(search_t, 0.5) * 1000, 2)
    out["search_p95_ms"] = round(pct(search_t, 0.95) * 1000, 2)
    out["search_act_filter_p50_ms"] = round(pct(filtered_t, 0.5) * 1000, 2)
    rss, hwm = rss_mb(proc.p.pid)
    out["server_rss_mb"] = round(rss, 1)
    out["server_peak_rss_mb"] = round(hwm, 1)
    proc.close()
    out["ratios"] = {}
    if n > REAL_MAX:
        return out  # chromadb is compared up to 100K (its ingest of 1M takes hours here)
    out["chromadb"] = chroma(texts, vecs, qvecs, workdir)
    if "query_top10_p50_ms" in out["chromadb"]:  # skipped when chromadb is not installed
        for label in ("", "_act_filtered"):
            out["ratios"][f"chroma_query{label}_p50 / ours_memory_knn{label}_p50"] = round(
                out["chromadb"][f"query_top10{label}_p50_ms"]
                / out[f"knn_top10{label}_memory_p50_ms"],
                2,
            )
    return out


def chroma(texts: list[str], vecs: np.ndarray, qvecs: np.ndarray, workdir: Path) -> dict[str, Any]:
    try:
        import chromadb
    except ImportError:
        return {"skipped": "pip install chromadb (./dev bench installs it)"}
    folder = Path(tempfile.mkdtemp(dir=workdir, prefix="chroma-"))
    try:
        client = chromadb.PersistentClient(path=str(folder))
        col = client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        t0 = time.perf_counter()
        for s in range(0, len(texts), 5000):
            col.add(
                ids=[f"m{i:07d}" for i in range(s, min(s + 5000, len(texts)))],
                embeddings=vecs[s : s + 5000].tolist(),
                documents=texts[s : s + 5000],
                metadatas=[{"act_id": f"act-{i % 5}"} for i in range(s, min(s + 5000, len(texts)))],
            )
        ingest = time.perf_counter() - t0
        out: dict[str, Any] = {
            "ingest_s": round(ingest, 2),
            "ingest_per_s": round(len(texts) / ingest),
            "index": "HNSW (approximate)",
        }
        act2 = np.flatnonzero(np.arange(len(vecs)) % 5 == 2)
        for label, where, rows in (("", None, None), ("_act_filtered", {"act_id": "act-2"}, act2)):
            truth = [exact_top(vecs, q, 10, rows) for q in qvecs]  # before timing, as for ours
            times, recall = [], []
            for q, want in zip(qvecs, truth, strict=True):
                t = time.perf_counter()
                res = col.query(query_embeddings=[q.tolist()], n_results=10, where=where)
                times.append(time.perf_counter() - t)
                recall.append(len(set(res["ids"][0]) & want) / 10)
            out[f"query_top10{label}_p50_ms"] = round(pct(times, 0.5) * 1000, 3)
            out[f"query_top10{label}_recall_at_10"] = round(float(np.mean(recall)), 4)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def ours_ingest(texts: list[str], vecs: np.ndarray, workdir: Path) -> float:
    """The same precomputed-embedding ingest through our store (blocks + embeddings, one transaction)."""
    folder = Path(tempfile.mkdtemp(dir=workdir, prefix="ours-"))
    try:
        t0 = time.perf_counter()
        build_db(folder / "m.db", texts, vecs)
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def rpc_ingest(workdir: Path, n: int = 3000) -> dict[str, Any]:
    """Short blocks through the real process: batch indexing rate and single add latency."""
    texts = sentences(n, seed=11)
    folder = Path(tempfile.mkdtemp(dir=workdir, prefix="rpc-"))
    try:
        proc = Proc(str(folder / "m.db"))
        wait_ready(proc)
        ids = []
        for t in texts:
            ids.append(
                proc.call(
                    "blocks/create",
                    {"type": "paragraph", "act_id": "a", "content": t, "index": False},
                )["block"]["id"]
            )
        t0 = time.perf_counter()
        rep = proc.call("memory/index/batch", {"block_ids": ids})
        batch_rate = rep["indexed"] / (time.perf_counter() - t0)
        adds = []
        for t in sentences(200, seed=12):
            s = time.perf_counter()
            proc.call("blocks/create", {"type": "paragraph", "act_id": "a", "content": t})
            adds.append(time.perf_counter() - s)
        proc.close()
        return {
            "blocks": n,
            "batch_index_per_s": round(batch_rate),
            "create_with_index_p50_ms": round(pct(adds, 0.5) * 1000, 2),
            "create_with_index_p95_ms": round(pct(adds, 0.95) * 1000, 2),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_retrieval(sizes: list[int], workdir: str | None, nqueries: int = 200) -> dict[str, Any]:
    work = Path(workdir or tempfile.gettempdir()) / "reos-bench-retrieval"
    work.mkdir(parents=True, exist_ok=True)
    queries = [s.rsplit(" (note", 1)[0] for s in sentences(nqueries, seed=99)]
    emb = onnx_embedder()
    emb.embed(queries[:5])
    times = []
    for q in queries:
        t = time.perf_counter()
        emb.embed([q])
        times.append(time.perf_counter() - t)
    qvecs = emb.embed(queries)
    del emb
    out: dict[str, Any] = {"query_embedding_p50_ms": round(pct(times, 0.5) * 1000, 2)}
    out["rpc_ingest"] = rpc_ingest(work)
    for n in sizes:
        res = measure_corpus(n, work, queries, qvecs)
        out[f"corpus_{n}"] = res
        # printed as it comes: kept if a later size fails
        print(json.dumps({f"corpus_{n}": res}), file=sys.stderr, flush=True)
        if n > REAL_MAX:
            continue  # the ingest comparison is made where chromadb is measured too
        texts, vecs = corpus(n, work)
        ours = ours_ingest(texts, vecs, work)
        res["ours_ingest_precomputed_per_s"] = round(n / ours)
        if "ingest_per_s" in res.get("chromadb", {}):
            res["ratios"]["ours_ingest_rate / chroma_ingest_rate"] = round(
                res["ours_ingest_precomputed_per_s"] / res["chromadb"]["ingest_per_s"], 2
            )
    return out


def bench_learning(sizes: list[int], workdir: str | None) -> dict[str, Any]:
    """memory/auto_link wall time on the retrieval corpora (copies), and memory/learn p50."""
    work = Path(workdir or tempfile.gettempdir()) / "reos-bench-retrieval"
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    for n in sizes:
        texts, vecs = corpus(n, work)
        folder = Path(tempfile.mkdtemp(dir=work, prefix="autolink-"))
        try:
            db = folder / "m.db"
            build_db(db, texts, vecs)
            proc = Proc(str(db))
            wait_ready(proc)
            t0 = time.perf_counter()
            res = proc.call("memory/auto_link", {"threshold": 0.8, "max_links": 3})
            wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = proc.call("memory/auto_link", {"threshold": 0.8, "max_links": 3})
            wall2 = time.perf_counter() - t0
            _rss, hwm = rss_mb(proc.p.pid)
            proc.close()
            out[f"auto_link_{n}"] = {
                "wall_s": round(wall, 2),
                "created": res["relationships_created"],
                "candidate_pairs": res["candidate_pairs"],
                "second_run_wall_s": round(wall2, 2),
                "second_run_created": again["relationships_created"],
                "server_peak_rss_mb": round(hwm, 1),
            }
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(dir=work, prefix="learn-"))
    try:
        proc = Proc(str(folder / "m.db"))
        wait_ready(proc)
        chains = []
        for c in range(20):
            chain = proc.call(
                "blocks/create", {"type": "reasoning_chain", "act_id": "a", "content": f"chain {c}"}
            )["block"]["id"]
            for k in range(5):
                tgt = proc.call(
                    "blocks/create",
                    {"type": "paragraph", "act_id": "a", "content": f"step {c}.{k}"},
                )["block"]["id"]
                proc.call(
                    "memory/relationships/create",
                    {
                        "source_id": chain,
                        "target_id": tgt,
                        "rel_type": "follows_from",
                        "confidence": 0.5,
                    },
                )
            chains.append(chain)
        times = []
        for i in range(400):
            t = time.perf_counter()
            proc.call(
                "memory/learn",
                {"chain_block_id": chains[i % 20], "rating": 5 if (i // 20) % 2 else 1},
            )
            times.append(time.perf_counter() - t)
        proc.close()
        out["learn_p50_ms"] = round(pct(times, 0.5) * 1000, 3)
        out["learn_p95_ms"] = round(pct(times, 0.95) * 1000, 3)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def bench_documents(runs: int = 3, pages: int = 100) -> dict[str, Any]:
    """documents/insert of a generated 100-page PDF (about 250 words a page), through the process."""
    from harness.documents_fixtures import make_pdf

    words = sentences(4000, seed=21)
    page_texts = [" ".join(words[p * 20 : p * 20 + 20]) * 2 for p in range(pages)]
    rates, chunks = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        pdf = make_pdf(Path(tmp) / "report.pdf", page_texts)
        for r in range(runs):
            proc = Proc(str(Path(tmp) / f"d{r}.db"))
            wait_ready(proc)
            t0 = time.perf_counter()
            res = proc.call("documents/insert", {"path": str(pdf), "act_id": "a"})
            rates.append(pages / (time.perf_counter() - t0))
            chunks = res["chunks"]
            proc.close()
    return {
        "pages": pages,
        "chunks": chunks,
        "runs": runs,
        "median_pages_per_s": round(statistics.median(rates), 1),
        "all_pages_per_s": [round(x, 1) for x in rates],
    }
