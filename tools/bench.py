"""Benchmarks of the real stdio process. Prints figures; asserts nothing.

    python tools/bench.py                     # everything below
    python tools/bench.py throughput          # pipelined trivial requests per second
    python tools/bench.py startup             # spawn -> first memory/stats reply
    python tools/bench.py graph               # memory/related depth 2 and memory/path p50/p95
        [--blocks 100000 --edges 500000 --queries 300 --workdir DIR]
    python tools/bench.py retrieval           # embedding, indexing, KNN, memory/search, RSS, chromadb
        [--sizes 10000 100000 --workdir DIR]
    python tools/bench.py learning            # memory/auto_link wall time per size, memory/learn p50
        [--sizes 10000 100000 --workdir DIR]
    python tools/bench.py documents           # documents/insert of a 100-page PDF, pages/s
    python tools/bench.py retrieval           # embedding, indexing, KNN, memory/search, RSS, chromadb
        [--sizes 10000 100000 --workdir DIR]
    python tools/bench.py learning            # memory/auto_link wall time per size, memory/learn p50
        [--sizes 10000 100000 --workdir DIR]
    python tools/bench.py documents           # documents/insert of a 100-page PDF, pages/s

Each figure is the median of several runs (timing on shared machines is noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVE = [sys.executable, "-m", "reos_memory", "serve"]


class Proc:
    """The server with the thinnest possible client: raw lines, no per-message threads."""

    def __init__(self, db: str, env: dict[str, str] | None = None) -> None:
        self.t_spawn = time.perf_counter()
        self.p = subprocess.Popen(
            [*SERVE, "--db", db],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(ROOT),
            env={**os.environ, **(env or {})},
        )
        assert self.p.stdin is not None and self.p.stdout is not None
        self.stdin, self.stdout = self.p.stdin, self.p.stdout
        self.n = 0

    def call(self, method: str, params: dict | None = None) -> dict:
        self.n += 1
        msg = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        self.stdin.write(json.dumps(msg).encode() + b"\n")
        self.stdin.flush()
        resp = json.loads(self.stdout.readline())
        if "error" in resp:
            raise RuntimeError(resp["error"])
        return resp["result"]

    def close(self) -> None:
        self.stdin.close()
        self.p.wait(60)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def proc_status_kb(pid: int, field: str = "VmRSS") -> int:
    """A field of /proc/<pid>/status in kB (VmRSS: resident memory now, VmHWM: its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of ys over xs (RSS growth per unit of time)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / max(
        1e-9, sum((x - mx) ** 2 for x in xs)
    )


# -- throughput -------------------------------------------------------------------------------


def bench_throughput(n: int = 50_000, runs: int = 5, method: str = "ping") -> dict:
    rates = []
    with tempfile.TemporaryDirectory() as tmp:
        proc = Proc(str(Path(tmp) / "t.db"))
        proc.call("ping")
        for _ in range(runs):
            payload = b"".join(
                b'{"jsonrpc":"2.0","id":%d,"method":"%s"}\n' % (i, method.encode())
                for i in range(n)
            )
            t0 = time.perf_counter()

            def send(payload: bytes = payload) -> None:
                for i in range(0, len(payload), 1 << 16):
                    proc.stdin.write(payload[i : i + (1 << 16)])
                proc.stdin.flush()

            sender = threading.Thread(target=send)
            sender.start()
            out = proc.stdout
            for _ in range(n):
                out.readline()
            elapsed = time.perf_counter() - t0
            sender.join()
            rates.append(n / elapsed)
        proc.close()
    return {
        "method": method,
        "requests": n,
        "runs": runs,
        "median_per_s": round(statistics.median(rates)),
        "all_per_s": [round(r) for r in rates],
    }


# -- startup ----------------------------------------------------------------------------------


def bench_startup(runs: int = 10) -> dict:
    fresh, existing = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            db = str(Path(tmp) / f"fresh{i}.db")
            p = Proc(db)
            p.call("memory/stats")
            fresh.append(time.perf_counter() - p.t_spawn)
            p.close()
        db = str(Path(tmp) / "fresh0.db")
        for _ in range(runs):
            p = Proc(db)
            p.call("memory/stats")
            existing.append(time.perf_counter() - p.t_spawn)
            p.close()
    return {
        "runs": runs,
        "existing_db_median_ms": round(statistics.median(existing) * 1000, 1),
        "new_db_median_ms": round(statistics.median(fresh) * 1000, 1),
    }


# -- graph ------------------------------------------------------------------------------------


def build_graph(path: Path, blocks: int, edges: int, seed: int = 7) -> None:
    """Write a random graph straight into a migrated database (fast bulk path, same schema)."""
    import apsw

    from reos_memory.models import REL_TYPES, content_hash
    from reos_memory.store import Database
    from reos_memory.store.migrations import migrate

    rng = random.Random(seed)
    db = Database(str(path), synchronous="OFF")
    migrate(db)
    conn: apsw.Connection = db.conn()
    now = "2026-01-01T00:00:00.000Z"

    def block_rows():
        for i in range(blocks):
            text = f"block {i} about topic {i % 97}"
            yield (
                f"b{i:07d}",
                "paragraph",
                f"act-{i % 10}",
                i,
                text,
                content_hash(text),
                f'[{{"content":"{text}"}}]',
                now,
                now,
            )

    def tx_blocks(c: apsw.Connection) -> None:
        c.executemany(
            "INSERT INTO blocks(id,type,act_id,position,content,content_hash,rich_text,created_at,updated_at)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            block_rows(),
        )

    def edge_rows():
        for j in range(edges):
            s = rng.randrange(blocks)
            t = rng.randrange(blocks - 1)
            t = t + 1 if t >= s else t
            yield (
                f"r{j:08d}",
                f"b{s:07d}",
                f"b{t:07d}",
                REL_TYPES[rng.randrange(14)],
                round(rng.uniform(0.1, 1.0), 3),
                "user",
                now,
            )

    def tx_edges(c: apsw.Connection) -> None:
        c.executemany(
            "INSERT OR IGNORE INTO block_relationships(id,source_block_id,target_block_id,relationship_type,confidence,source,created_at)"
            " VALUES (?,?,?,?,?,?,?)",
            edge_rows(),
        )

    db.write(tx_blocks)
    db.write(tx_edges)
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def bench_graph(blocks: int, edges: int, queries: int, workdir: str | None) -> dict:
    base = Path(workdir or tempfile.gettempdir()) / f"reos-bench-graph-{blocks}-{edges}.db"
    if not base.exists():
        t0 = time.perf_counter()
        tmp = base.with_suffix(".building")
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        build_graph(tmp, blocks, edges)
        tmp.rename(base)
        print(f"  built {base} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    rng = random.Random(11)
    # graph queries only: no embedder, so no background re-embedding of 100K blocks competes
    proc = Proc(str(base), env={"REOS_MEMORY_EMBEDDER": "none"})
    proc.call("memory/stats")
    ids = [f"b{rng.randrange(blocks):07d}" for _ in range(queries * 2)]
    for bid in ids[:20]:  # warm the page cache
        proc.call("memory/related", {"block_id": bid, "depth": 2})
    related, related_nodes = [], []
    for bid in ids[:queries]:
        t0 = time.perf_counter()
        r = proc.call("memory/related", {"block_id": bid, "depth": 2})
        related.append(time.perf_counter() - t0)
        related_nodes.append(len(r["visited_blocks"]))
    paths, lengths, found = [], [], 0
    for i in range(queries):
        a, b = ids[i], ids[queries + i]
        t0 = time.perf_counter()
        r = proc.call("memory/path", {"start_id": a, "end_id": b, "max_depth": 5})
        paths.append(time.perf_counter() - t0)
        if r["found"]:
            found += 1
            lengths.append(r["length"])
    weighted = []
    for i in range(min(queries, 50)):
        t0 = time.perf_counter()
        proc.call(
            "memory/path",
            {"start_id": ids[i], "end_id": ids[queries + i], "max_depth": 3, "weighted": True},
        )
        weighted.append(time.perf_counter() - t0)
    stats_t = []
    for _ in range(20):
        t0 = time.perf_counter()
        proc.call("memory/stats")
        stats_t.append(time.perf_counter() - t0)
    proc.close()
    ms = lambda v: round(v * 1000, 3)  # noqa: E731
    return {
        "blocks": blocks,
        "edges": edges,
        "queries": queries,
        "related_depth2_p50_ms": ms(pct(related, 0.5)),
        "related_depth2_p95_ms": ms(pct(related, 0.95)),
        "related_median_nodes": statistics.median(related_nodes),
        "path_p50_ms": ms(pct(paths, 0.5)),
        "path_p95_ms": ms(pct(paths, 0.95)),
        "path_found": f"{found}/{queries}",
        "path_median_length": statistics.median(lengths) if lengths else None,
        "weighted_path_max_depth3_p50_ms": ms(pct(weighted, 0.5)),
        "stats_p50_ms": ms(pct(stats_t, 0.5)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "what",
        nargs="?",
        default="all",
        choices=["all", "throughput", "startup", "graph", "retrieval", "learning", "documents"],
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--blocks", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=500_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--requests", type=int, default=50_000)
    ap.add_argument("--workdir", help="where the generated graph database is kept between runs")
    args = ap.parse_args()
    out: dict[str, object] = {}
    if args.what in ("all", "throughput"):
        out["throughput"] = bench_throughput(args.requests)
    if args.what in ("all", "startup"):
        out["startup"] = bench_startup()
    if args.what in ("all", "graph"):
        out["graph"] = bench_graph(args.blocks, args.edges, args.queries, args.workdir)
    if args.what in ("all", "retrieval"):
        from tools.bench_retrieval import bench_retrieval

        out["retrieval"] = bench_retrieval(args.sizes, args.workdir)
    if args.what in ("all", "learning"):
        from tools.bench_retrieval import bench_learning

        out["learning"] = bench_learning(args.sizes, args.workdir)
    if args.what in ("all", "documents"):
        from tools.bench_retrieval import bench_documents

        out["documents"] = bench_documents()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
