"""Web UI server time (issue 22): prints figures, asserts nothing.

    python tools/bench_ui.py [--memories 10000] [--runs 30] [--workdir DIR] [--reuse]

A database of N memories in one project (the commit layer, 10 per commit, the hash embedder:
the pages' time does not depend on the model), a few hundred of them given in contexts so the
metrics sorts have something to sort; then each page rendered in process through the UI's ASGI
app (guard included) `runs` times: p50 / p95 milliseconds from request to the last byte."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.bench import pct  # noqa: E402
from tools.bench_squirrel import TASKS, build_app, fill_memories  # noqa: E402

PAGES = [
    "/memories",
    "/memories?sort=uses",
    "/memories?sort=regret_saved",
    "/memories?q=docker",
    "/memories?kind=guard&tier=short_term",
    "/memories?status=all&sort=opportunities",
    "/episodes",
    "/activity",
    "/cr-memory",
]


async def measure(asgi: Any, base: str, cookie: dict[str, str], paths: list[str], runs: int):
    import httpx

    out: dict[str, Any] = {}
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url=base, cookies=cookie) as c:
        for path in paths:
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                r = await c.get(path)
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200, (path, r.status_code, r.text[:300])
            out[path] = {
                "p50_ms": round(pct(times, 0.5) * 1000, 1),
                "p95_ms": round(pct(times, 0.95) * 1000, 1),
                "bytes": len(r.content),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--workdir")
    ap.add_argument("--reuse", action="store_true", help="keep the database in --workdir")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-ui-"))
    work.mkdir(parents=True, exist_ok=True)
    repo = work / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    db = work / "ui.db"
    fresh = not (args.reuse and db.exists())
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    app = build_app(db, "hash")
    report: dict[str, Any] = {"memories": args.memories}
    try:
        from reos_memory.interfaces.web.app import build
        from reos_memory.interfaces.web.guard import COOKIE, Guard
        from reos_memory.squirrel import api

        if fresh:
            report["fill_s"] = round(
                fill_memories(app, str(repo), args.memories, random.Random(22)), 1
            )
            for i in range(300):  # contexts: uses and opportunities for the metric sorts
                task = TASKS[i % len(TASKS)] + f" #{i}"
                app.squirrel.get_task_context(api.ContextParams(project_root=str(repo), task=task))
        guard = Guard(8080)
        asgi = build(app.squirrel, guard)
        report["pages"] = asyncio.run(
            measure(asgi, "http://127.0.0.1:8080", {COOKIE: guard.token}, PAGES, args.runs)
        )
    finally:
        app.close()
    print(json.dumps(report, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
