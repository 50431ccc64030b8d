"""Evaluate memory/search on conversational memory (the locomo-dev format), through the real
stdio service, with default search params.

    python tools/eval_conversations.py DIR_OR_FILE [--embedder onnx] [--db FILE]
                                                   [--compare-graph-off] [--max-queries N]

Protocol (issue 9): one act per conversation; one `paragraph` block per turn, content
"<speaker>: <text>" (the set's text already reads so), properties dia_id, session, speaker, and
the turn's session date-time as `created_at`; a `follows_from` edge (source `cairn`) from each
turn to the previous turn of the same session; then `memory/search {query, act_id,
max_results: 10}` for every question. Prints R@5, R@10 and MRR@10 (the definitions of
tools/eval_retrieval.py: recall = share of the relevant turns in the top k, MRR of the first
relevant one in the top 10) per category, for categories 1-4 together and for category 5
(adversarial) on its own. `--compare-graph-off` also runs every question with
include_graph=false.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rpc_client import Server  # noqa: E402  (the same client the end-to-end tests use)

_SAFE = re.compile(r"[^A-Za-z0-9_.:\-]")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def safe(text: str) -> str:
    return _SAFE.sub("_", text)


def block_id(act: str, turn: str) -> str:
    return f"{act}-{safe(turn)}"


def when(date: str | None) -> str | None:
    """The set's session date ("1:56 pm on 8 May, 2023") as ISO 8601, or None."""
    if not date:
        return None
    text = " ".join(date.split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(text).isoformat()
    except ValueError:
        return None


def load(path: Path) -> list[dict]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    corpora: list[dict] = []
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        corpora += data["corpora"] if isinstance(data, dict) else data
    return corpora


def ingest(srv: Server, corpora: list[dict]) -> dict[str, int]:
    have = srv.call("memory/stats")["total_blocks"]
    total = sum(len(c["blocks"]) for c in corpora)
    undated = 0
    if have >= total:
        print(f"  reusing {have} blocks already in the database", file=sys.stderr)
        return {"blocks": have, "undated": 0}
    t0 = time.perf_counter()
    for c in corpora:
        act = safe(c["name"])
        items: list[Any] = []
        edges: list[Any] = []
        prev: dict[Any, Any] = {}
        for n, b in enumerate(c["blocks"]):
            params = {
                "type": "paragraph",
                "act_id": act,
                "content": b["text"],
                "id": block_id(act, b["id"]),
                "index": False,
                "properties": {"dia_id": b["id"], "session": b["session"], "speaker": b["speaker"]},
            }
            created = when(b.get("date"))
            if created is None:
                undated += 1
            else:
                params["created_at"] = created
            items.append({"jsonrpc": "2.0", "id": n, "method": "blocks/create", "params": params})
            before = prev.get(b["session"])
            if before is not None:
                edges.append(
                    {
                        "jsonrpc": "2.0",
                        "id": n,
                        "method": "memory/relationships/create",
                        "params": {
                            "source_id": block_id(act, b["id"]),
                            "target_id": block_id(act, before),
                            "rel_type": "follows_from",
                            "source": "cairn",
                        },
                    }
                )
            prev[b["session"]] = b["id"]
        for batch in (items, edges):
            for resp in srv.batch(batch, timeout=600):
                if "error" in resp:
                    raise RuntimeError(resp["error"])
    report = srv.call("memory/index/batch", {}, timeout=7200)
    print(
        f"  stored {total} turns, indexed {report['indexed']} in {time.perf_counter() - t0:.1f}s"
        f" ({undated} without a readable date)",
        file=sys.stderr,
    )
    return {"blocks": total, "undated": undated}


def score(ranked: list[str], rel: set[str]) -> tuple[float, float, float]:
    mrr = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in rel), 0.0)
    return (
        len(set(ranked[:5]) & rel) / len(rel),
        len(set(ranked[:10]) & rel) / len(rel),
        mrr,
    )


def evaluate(srv: Server, corpora: list[dict], graph: bool, limit: int | None) -> dict:
    per: dict[str, list[tuple[float, float, float]]] = {}
    latencies = []
    for c in corpora:
        act = safe(c["name"])
        queries = c["queries"][:limit] if limit else c["queries"]
        for q in queries:
            if not q.get("relevant"):
                continue
            params: dict = {"query": q["text"], "act_id": act, "max_results": 10}
            if not graph:
                params["include_graph"] = False
            t0 = time.perf_counter()
            res = srv.call("memory/search", params)
            latencies.append(time.perf_counter() - t0)
            got = score(
                [m["block_id"] for m in res["matches"]], {block_id(act, r) for r in q["relevant"]}
            )
            cat = int(q["category"])
            if cat in (1, 2, 3, 4):
                per.setdefault("categories 1-4", []).append(got)
                per.setdefault(f"category {cat}", []).append(got)
            else:
                per.setdefault(
                    f"category {cat} (adversarial)" if cat == 5 else f"category {cat}", []
                ).append(got)
    out: dict[str, Any] = {}
    for name in sorted(per, key=lambda k: (k.startswith("category 5"), k != "categories 1-4", k)):
        rows = per[name]
        out[name] = {
            "questions": len(rows),
            "R@5": round(statistics.fmean(r[0] for r in rows), 4),
            "R@10": round(statistics.fmean(r[1] for r in rows), 4),
            "MRR@10": round(statistics.fmean(r[2] for r in rows), 4),
        }
    out["p50_ms"] = round(statistics.median(latencies) * 1000, 2) if latencies else None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("path", type=Path, help="a locomo-dev JSON file or a folder of them")
    ap.add_argument(
        "--embedder", default="onnx", choices=["onnx", "sentence-transformers", "hash", "none"]
    )
    ap.add_argument("--db", help="database file to build or reuse (default: a temporary one)")
    ap.add_argument("--compare-graph-off", action="store_true")
    ap.add_argument("--max-queries", type=int, help="per conversation")
    args = ap.parse_args()
    corpora = load(args.path)
    print(
        f"{args.path.name}: {len(corpora)} conversations,"
        f" {sum(len(c['blocks']) for c in corpora)} turns,"
        f" {sum(len(c['queries']) for c in corpora)} questions",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "conversations.db")
        with Server(db, embedder=args.embedder) as srv:
            srv.wait_ready(120)
            stored = ingest(srv, corpora)
            results = {"default": evaluate(srv, corpora, True, args.max_queries)}
            if args.compare_graph_off:
                results["include_graph=false"] = evaluate(srv, corpora, False, args.max_queries)
    print(
        json.dumps(
            {"dataset": str(args.path), "embedder": args.embedder, **stored, "results": results},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
