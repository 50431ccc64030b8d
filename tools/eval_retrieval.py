"""Evaluate memory/search on any BEIR-layout folder, through the real stdio service.

    python tools/eval_retrieval.py DIR [--embedder onnx] [--modes vector keyword hybrid]
                                       [--db FILE] [--max-queries N] [--split test]

DIR holds corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and qrels/<split>.tsv.
Each document becomes one block (title + " " + text), indexed by memory/index/batch; each query
runs memory/search with include_graph=false. Prints Recall@10, Recall@100, MRR@10 and nDCG@10
per mode. With --db FILE the indexed database is kept and reused on the next run.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rpc_client import Server  # noqa: E402  (the same client the end-to-end tests use)

_SAFE = re.compile(r"[^A-Za-z0-9_.:\-]")


def block_id(doc_id: str) -> str:
    return "doc-" + _SAFE.sub("_", doc_id)


def load(folder: Path, split: str):
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))
    }
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[block_id(did)] = int(score)
    return corpus, {q: queries[q] for q in qrels if q in queries}, qrels


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def metrics(ranked: list[str], rel: dict[str, int]) -> dict[str, float]:
    mrr = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in rel), 0.0)
    return {
        "ndcg@10": ndcg_at(ranked, rel, 10),
        "mrr@10": mrr,
        "recall@10": len(set(ranked[:10]) & rel.keys()) / len(rel),
        "recall@100": len(set(ranked[:100]) & rel.keys()) / len(rel),
    }


def ingest(srv: Server, corpus: list[dict], batch: int = 500) -> None:
    have = srv.call("memory/stats")["total_blocks"]
    if have >= len(corpus):
        print(f"  reusing {have} blocks already in the database", file=sys.stderr)
    else:
        t0 = time.perf_counter()
        for start in range(0, len(corpus), batch):
            items = []
            for i, doc in enumerate(corpus[start : start + batch]):
                text = (doc.get("title", "") + " " + doc.get("text", "")).strip()
                items.append(
                    {
                        "jsonrpc": "2.0",
                        "id": start + i,
                        "method": "blocks/create",
                        "params": {
                            "type": "document_chunk",
                            "act_id": "eval",
                            "content": text,
                            "id": block_id(doc["_id"]),
                            "index": False,
                        },
                    }
                )
            for resp in srv.batch(items, timeout=300):
                if "error" in resp and resp["error"]["code"] != -32009:
                    raise RuntimeError(resp["error"])
        print(f"  stored {len(corpus)} blocks in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    t0 = time.perf_counter()
    report = srv.call("memory/index/batch", {}, timeout=7200)
    if report["total"]:
        dt = time.perf_counter() - t0
        print(
            f"  indexed {report['indexed']} blocks in {dt:.1f}s ({report['indexed'] / dt:.1f}/s)",
            file=sys.stderr,
        )


def evaluate(srv: Server, queries: dict[str, str], qrels: dict, mode: str) -> dict[str, float]:
    per_query = []
    latencies = []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        res = srv.call(
            "memory/search",
            {
                "query": text,
                "max_results": 100,
                "include_graph": False,
                "mode": mode,
                "min_similarity": -1.0,
                "candidates": 100,
            },
        )
        latencies.append(time.perf_counter() - t0)
        per_query.append(metrics([m["block_id"] for m in res["matches"]], qrels[qid]))
    out = {k: round(statistics.fmean(m[k] for m in per_query), 4) for k in per_query[0]}
    out["p50_ms"] = round(statistics.median(latencies) * 1000, 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", type=Path)
    ap.add_argument(
        "--embedder", default="onnx", choices=["onnx", "sentence-transformers", "hash", "none"]
    )
    ap.add_argument("--modes", nargs="+", default=["vector", "keyword", "hybrid"])
    ap.add_argument("--db", help="database file to build or reuse (default: a temporary one)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--max-queries", type=int)
    args = ap.parse_args()
    corpus, queries, qrels = load(args.folder, args.split)
    if args.max_queries:
        queries = dict(list(queries.items())[: args.max_queries])
    print(f"{args.folder.name}: {len(corpus)} documents, {len(queries)} queries", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "eval.db")
        with Server(db, embedder=args.embedder) as srv:
            ingest(srv, corpus)
            results = {mode: evaluate(srv, queries, qrels, mode) for mode in args.modes}
    print(
        json.dumps(
            {
                "dataset": str(args.folder),
                "embedder": args.embedder,
                "queries": len(queries),
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
