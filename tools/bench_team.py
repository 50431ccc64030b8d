"""Team server benchmarks: print figures, assert nothing (issue 21).

    python tools/bench_team.py [--memories 100000] [--clients 1 16 64] [--requests 300]
                               [--embedder onnx] [--workdir DIR] [--reuse] [--no-local]

* start-up of the embedded PostgreSQL: a new data directory (initdb + migrations) and an
  existing one;
* `squirrel/get_task_context` over HTTP against N team memories (the real model's embeddings,
  loaded with COPY and indexed once): p50 / p95 and requests per second with 1, 16 and 64
  concurrent clients (each a keep-alive connection);
* the same call on the local service (stdio JSON-RPC, N memories in the project), in the same
  run, for the ratio;
* `squirrel/memories/add` per second (embedding included) and `squirrel/ingest_episode`
  accepted per second, with 1 and 8 clients;
* a new machine's first `squirrel/changes/pull` of every memory (pages of 500, each memory
  with its receipt), median seconds of 3;
* RSS of the server process, idle after start and after the load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.bench import pct, proc_status_kb  # noqa: E402
from tools.bench_squirrel import (  # noqa: E402
    TASKS,
    bench_context,
    build_app,
    fill_memories,
    memory_text,
)

PROJECT = "bench-project"
KINDS = ["pattern", "invariant", "preference", "note", "guard"]


class Client:
    """One keep-alive HTTP connection to the team server."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def call(self, method: str, params: dict[str, Any]) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self.conn.request("POST", "/rpc", body, self.headers)
        resp = self.conn.getresponse()
        reply = json.loads(resp.read())
        if resp.status != 200 or "error" in reply:
            raise RuntimeError(f"{method}: HTTP {resp.status} {reply}")
        return reply["result"]


def startup(work: Path) -> dict[str, float]:
    """Seconds to start the embedded PostgreSQL: a new data directory, then the same again."""
    from reos_memory.team.database import open_team_database

    data = work / "startup-db"
    shutil.rmtree(data, ignore_errors=True)
    t0 = time.perf_counter()
    db = open_team_database(None, data)
    fresh = time.perf_counter() - t0
    db.close()
    t0 = time.perf_counter()
    db = open_team_database(None, data)
    again = time.perf_counter() - t0
    db.close()
    shutil.rmtree(data, ignore_errors=True)
    return {"new_data_dir_s": round(fresh, 2), "existing_data_dir_s": round(again, 2)}


def load(url: str, n: int, embedder: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """An org with a team and N team memories in one project (COPY, the HNSW index rebuilt
    once after); a writer key of the team."""
    from reos_memory.app import _embedder_factory
    from reos_memory.config import load_config
    from reos_memory.store.team import connection as pg
    from reos_memory.team import admin
    from reos_memory.team.memories import vector_text

    actor = admin.Actor("cli:bench", "bench")
    with pg.connect(url) as conn:
        org = admin.create_org(conn, actor, f"bench-{uuid.uuid4().hex[:6]}")
        team = admin.create_team(conn, actor, org.id, "backend")
        new, _ = admin.create_key(conn, actor, org=org.id, team="backend", role="writer")
    factory = _embedder_factory(load_config(None, {"embedder": embedder}))
    model = factory()
    t0 = time.perf_counter()
    texts = [memory_text(rng, i) for i in range(n)]
    vecs = []
    for start in range(0, n, 256):
        vecs.extend(model.embed(texts[start : start + 256]))
    embed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with pg.connect(url) as conn:
        conn.execute("DROP INDEX IF EXISTS memories_embedding")
        # a bulk load counts words once at the end, not row by row in the trigger (which made a
        # 100K COPY take over 25 minutes)
        conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_words")
        with conn.transaction():
            columns = (
                "org_id, team_id, id, project_id, scope, owner_type, kind, tier, text, status,"
                " embedding, seq, created_by, origin"
            )
            with conn.cursor().copy(f"COPY memories ({columns}) FROM STDIN") as cp:
                for i, (text, vec) in enumerate(zip(texts, vecs, strict=True)):
                    cp.write_row(
                        (
                            org.id, team.id, f"tmem-bench{i:08d}", PROJECT, "project", "team",
                            rng.choice(KINDS), "short_term", text,
                            "active" if i % 3 else "provisional", vector_text(vec), 0,
                            new.key_id, "rpc",
                        )
                    )  # fmt: skip
        conn.execute("ALTER TABLE memories ENABLE TRIGGER memories_words")
        conn.execute(
            "INSERT INTO memory_words (org_id, team_key, word, n) SELECT org_id,"
            " coalesce(team_id, ''), w, count(*) FROM memories, unnest(tsvector_to_array(tsv)) w"
            " WHERE org_id = %s AND status <> 'deprecated' GROUP BY 1, 2, 3",
            (org.id,),
        )
        copy_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(
            "CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_l2_ops)"
        )
        conn.execute("VACUUM ANALYZE memories")
        index_s = time.perf_counter() - t0
    return new.key, {
        "memories": n,
        "embed_s": round(embed_s, 1),
        "copy_s": round(copy_s, 1),
        "hnsw_build_s": round(index_s, 1),
    }


def start_server(data_dir: Path, embedder: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The team server on a free port, its log in `log` (a pipe nobody reads would fill and
    block it)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REOS_MEMORY_EMBEDDER": embedder}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reos_memory", "team-server", "--data-dir", str(data_dir),
         "--port", str(port), "--log-level", "warning",
         # capacity, not the per-key limit (50 a second by default), is what is measured
         "--rate-limit", "0"],
        env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(log.read_text(errors="replace")[-2000:])


def concurrent(port: int, key: str, clients: int, requests: int, make: Any) -> dict[str, Any]:
    """`requests` calls spread over `clients` threads, each on its own connection; latency
    percentiles and calls per second."""
    times: list[float] = []
    lock = threading.Lock()
    per = max(1, requests // clients)
    errors: list[str] = []

    def run(c: int) -> None:
        client = Client(port, key)
        mine = []
        for i in range(per):
            method, params = make(c * per + i)
            t0 = time.perf_counter()
            try:
                client.call(method, params)
            except Exception as exc:  # counted and shown, the run goes on
                errors.append(str(exc)[:200])
                continue
            mine.append(time.perf_counter() - t0)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    out: dict[str, Any] = {
        "clients": clients,
        "calls": len(times),
        "p50_ms": round(pct(times, 0.5) * 1000, 1) if times else None,
        "p95_ms": round(pct(times, 0.95) * 1000, 1) if times else None,
        "per_s": round(len(times) / wall, 1),
    }
    if errors:
        out["errors"] = len(errors)
        out["first_error"] = errors[0]
    return out


def context_call(i: int) -> tuple[str, dict[str, Any]]:
    task = TASKS[i % len(TASKS)] + f" #{i}"
    return "squirrel/get_task_context", {"project_id": PROJECT, "task": task}


SYLLABLES = ["ka", "lo", "mi", "ne", "tru", "vas", "pel", "dor", "qui", "zen", "bra", "fo"]


def add_call(rng: random.Random) -> Any:
    """New memories, each written (the templated texts of the load would mostly be folded into
    a near-duplicate already stored, which measures the check but not the write)."""

    def word() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))

    def make(i: int) -> tuple[str, dict[str, Any]]:
        text = f"The {word()} service keeps {word()} {word()} in {word()} for {word()} {i}"
        return "squirrel/memories/add", {"project_id": PROJECT, "kind": "note", "text": text}

    return make


def episode_call(i: int) -> tuple[str, dict[str, Any]]:
    tool = ["pnpm", "poetry", "uv", "docker"][i % 4]
    events = [
        {"role": "user", "kind": "message", "text": f"run the tests for module {i}"},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Bash",
         "command": f"npm test -- m{i}", "call_id": "a"},
        {"role": "tool", "kind": "tool_result", "call_id": "a", "is_error": True,
         "exit_code": 1, "text": f"error: this repo uses {tool}"},
        {"role": "user", "kind": "message",
         "text": f"No, never use npm here. Always use {tool} for module {i}."},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Bash",
         "command": f"{tool} test m{i}", "call_id": "b"},
        {"role": "tool", "kind": "tool_result", "call_id": "b", "exit_code": 0,
         "text": "ok"},
    ]  # fmt: skip
    return "squirrel/ingest_episode", {
        "project_id": PROJECT, "episode_id": f"ep-{uuid.uuid4().hex}", "events": events,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--requests", type=int, default=320)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--embedder", default="onnx")
    ap.add_argument("--workdir")
    ap.add_argument("--reuse", action="store_true", help="keep the loaded databases in --workdir")
    ap.add_argument("--no-local", action="store_true", help="skip the local service's figure")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-team-"))
    work.mkdir(parents=True, exist_ok=True)
    # (run as root, PostgreSQL's own OS user must traverse it for its cluster to live inside)
    work.chmod(work.stat().st_mode | 0o011)
    rng = random.Random(21)
    report: dict[str, Any] = {"embedder": args.embedder, "startup": startup(work)}

    from reos_memory.team.database import open_team_database

    data = work / "team-db"
    key_file = work / "bench-key"
    db = open_team_database(None, data)
    try:
        if not (args.reuse and key_file.exists()):
            key, report["load"] = load(db.url, args.memories, args.embedder, rng)
            key_file.write_text(key)
        key = key_file.read_text()
        proc, port = start_server(data, args.embedder, work / "team-server.log")
        try:
            time.sleep(1.0)
            report["rss_mb_idle"] = round(proc_status_kb(proc.pid) / 1024, 1)
            warm = Client(port, key)
            for i in range(20):
                warm.call(*context_call(i))
            report["get_task_context_http"] = [
                concurrent(port, key, c, max(args.requests, c * 4), context_call)
                for c in args.clients
            ]
            report["memories_add"] = [
                concurrent(port, key, c, args.writes, add_call(rng)) for c in (1, 8)
            ]
            report["ingest_episode"] = [
                concurrent(port, key, c, args.writes, episode_call) for c in (1, 8)
            ]
            report["changes_pull_full"] = full_pull(port, key)
            report["rss_mb_after"] = round(proc_status_kb(proc.pid) / 1024, 1)
            report["rss_mb_peak"] = round(proc_status_kb(proc.pid, "VmHWM") / 1024, 1)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                report["server_stop"] = "no exit 30 s after SIGTERM: killed"
                proc.kill()
                proc.wait()
    finally:
        db.close()
    if not args.no_local:
        report["get_task_context_local"] = local_context(work, args, rng)
        one = report["get_task_context_http"][0]
        if one.get("p50_ms") and report["get_task_context_local"].get("p50_ms"):
            report["http_over_local_p50"] = round(
                one["p50_ms"] / report["get_task_context_local"]["p50_ms"], 2
            )
    print(json.dumps(report, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


def full_pull(port: int, key: str, runs: int = 3) -> dict[str, Any]:
    """A new machine's first pull: every change from seq 0, in pages of 500 (each page that
    memory comes with its receipt), median seconds of `runs`."""
    client = Client(port, key)
    times: list[float] = []
    pages = changes = 0
    for _ in range(runs):
        after, pages, changes = 0, 0, 0
        t0 = time.perf_counter()
        while True:
            page = client.call("squirrel/changes/pull", {"after_seq": after, "limit": 500})
            pages += 1
            changes += len(page["changes"])
            after = page["next_seq"]
            if not page["more"]:
                break
        times.append(time.perf_counter() - t0)
    return {"runs": runs, "pages": pages, "changes": changes, "median_s": round(median(times), 3)}


def local_context(work: Path, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    """The same call on the local service with as many memories in the project."""
    repo = work / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    db = work / "local.db"
    if not (args.reuse and db.exists()):
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        app = build_app(db, args.embedder)
        fill_memories(app, str(repo), args.memories, rng)
        app.close()
    out = bench_context(db, str(repo), args.embedder, args.requests)
    return {"memories": args.memories, **out}


if __name__ == "__main__":
    main()
