"""Soak: a mixed workload against one real server for N minutes, printing throughput, latency
and RSS over time. Prints figures; asserts nothing.

    python tools/soak.py --minutes 10 [--embedder hash|onnx] [--workdir DIR]

Each round, through stdio: blocks/create (indexed), a relationship to the previous block,
blocks/update, memory/search, memory/related, squirrel/ingest of a small coding session with an
error and a fix, squirrel/flush (the offline writer learns from it), squirrel/get_task_context,
squirrel/feedback, and blocks/delete of the oldest block once `--keep` blocks exist (a steady
state: the store stops growing, so a growing RSS would be a leak, not data). Every 30 s it prints
the rounds per second and the server's RSS; at the end p50/p99 latency per method, the RSS
slope over the second half of the run (the first half includes caches filling) and the row
counts of the logs, to show which stay bounded.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict, deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rpc_client import Server  # noqa: E402
from tools.bench import pct, proc_status_kb, slope  # noqa: E402

TOPICS = ("billing", "auth", "search", "deploys", "the cache", "invoices", "the scheduler")


def session(i: int) -> list[dict]:
    ts = f"2026-06-01T10:{i % 60:02d}:00Z"
    ask = f"Fix the failing test in module_{i % 13}.py about {TOPICS[i % len(TOPICS)]}"
    return [
        {"ts": ts, "role": "user", "kind": "message", "text": ask},
        {
            "ts": ts,
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Bash",
            "command": f"pytest tests/test_module_{i % 13}.py",
        },
        {
            "ts": ts,
            "role": "tool",
            "kind": "tool_result",
            "tool_name": "Bash",
            "is_error": True,
            "exit_code": 1,
            "text": f"FAILED tests/test_module_{i % 13}.py::test_total - KeyError: 'rate'\n1 failed",
        },
        {
            "ts": ts,
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": "Edit",
            "file": f"module_{i % 13}.py",
            "summary": "use .get('rate', 0)",
        },
        {
            "ts": ts,
            "role": "tool",
            "kind": "tool_result",
            "tool_name": "Bash",
            "exit_code": 0,
            "text": "5 passed in 0.1s",
        },
    ]


def table_counts(db: Path) -> dict[str, int]:
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            t: int(str(conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]))
            for t in (
                "blocks",
                "embedding_changes",
                "memory_embedding_changes",
                "memories",
                "episodes",
                "context_requests",
            )
        }
    finally:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--embedder", default="hash", choices=["hash", "onnx"])
    ap.add_argument("--workdir")
    ap.add_argument("--keep", type=int, default=2000, help="blocks kept (oldest deleted beyond)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="reos-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "soak.db"
    times: dict[str, list[float]] = defaultdict(list)
    samples: list[tuple[float, float]] = []
    project = str(work / "project")
    Path(project).mkdir(exist_ok=True)
    with Server(db, embedder=args.embedder) as srv:
        srv.wait_ready()
        t0 = last_print = time.monotonic()
        end = t0 + args.minutes * 60
        rounds = 0
        prev: str | None = None
        alive: deque[str] = deque()

        def timed(method: str, params: dict) -> dict:
            t = time.perf_counter()
            out = srv.call(method, params, timeout=120)
            times[method].append(time.perf_counter() - t)
            return out

        while time.monotonic() < end:
            i = rounds
            topic = TOPICS[i % len(TOPICS)]
            block = timed(
                "blocks/create",
                {
                    "type": "paragraph",
                    "act_id": f"act-{i % 4}",
                    "content": f"Note {i}: {topic} changed; see ticket {i * 7}",
                },
            )["block"]["id"]
            if prev is not None:
                timed(
                    "memory/relationships/create",
                    {"source_id": block, "target_id": prev, "rel_type": "follows_from"},
                )
            timed("blocks/update", {"block_id": block, "content": f"Note {i}: {topic} fixed"})
            timed("memory/search", {"query": f"what changed in {topic}", "max_results": 10})
            timed("memory/related", {"block_id": block, "depth": 2})
            sid = f"s{i}"
            timed(
                "squirrel/ingest",
                {"project_root": project, "session_id": sid, "events": session(i)},
            )
            timed("squirrel/flush", {"project_root": project, "session_id": sid})
            ctx = timed(
                "squirrel/get_task_context",
                {
                    "project_root": project,
                    "task": f"tests failing about {topic}",
                    "session_id": sid,
                },
            )
            timed("squirrel/feedback", {"context_id": ctx["context_id"], "errors": 0, "retries": 0})
            prev = block
            alive.append(block)
            if len(alive) > args.keep:
                timed("blocks/delete", {"block_id": alive.popleft()})
            rounds += 1
            now = time.monotonic()
            if now - last_print >= 30 or now >= end:
                samples.append((now - t0, proc_status_kb(srv.proc.pid) / 1024))
                last_print = now
                print(
                    json.dumps(
                        {
                            "t_s": round(now - t0),
                            "rounds": rounds,
                            "rounds_per_s": round(rounds / (now - t0), 1),
                            "rss_mb": round(samples[-1][1], 1),
                        }
                    ),
                    flush=True,
                )
    half = [s for s in samples if s[0] >= samples[-1][0] / 2]
    rss_slope = 0.0
    if len(half) >= 2:
        rss_slope = slope([s[0] / 60 for s in half], [s[1] for s in half])

    print(
        json.dumps(
            {
                "minutes": args.minutes,
                "embedder": args.embedder,
                "rounds": rounds,
                "requests": sum(len(v) for v in times.values()),
                "rss_mb_first_last": [round(samples[0][1], 1), round(samples[-1][1], 1)]
                if samples
                else [],
                "rss_slope_mb_per_min_second_half": round(rss_slope, 3),
                "latency_ms": {
                    m: {"p50": round(pct(v, 0.5) * 1000, 2), "p99": round(pct(v, 0.99) * 1000, 2)}
                    for m, v in sorted(times.items())
                },
                "rows_at_end": table_counts(db),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
