"""Several server processes and the `sqrl` command line writing to one database file at once:
blocks (pipelined), relationships, index runs, memories, episodes and feedback. `run` returns
what was acknowledged and what the file holds, so a caller can show that nothing was lost.

tests/test_concurrency_e2e.py runs it with a short budget; `tools/concurrency.py` with long ones.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from harness.rpc_client import SQRL, Server

WORDS = [f"{a}{b}" for a in ("zor", "kel", "vim", "pax", "dru", "mon") for b in "aeiouy"]


def unique_text(rng: random.Random, tag: str) -> str:
    return f"{tag}: " + " ".join(rng.sample(WORDS, 8))


@dataclass
class Load:
    servers: int = 4
    blocks: int = 40  # per server and round
    memories: int = 8  # per server and round
    cli_memories: int = 6  # `sqrl add` runs, in all
    rounds: int = 1


@dataclass
class Outcome:
    """What the clients were told and what the file holds."""

    acked: dict[str, set[str]] = field(default_factory=dict)  # kind -> ids acknowledged
    expected: dict[str, int] = field(default_factory=dict)  # kind -> rows the file must hold
    stored: dict[str, int] = field(default_factory=dict)  # kind -> rows it holds
    errors: list[Any] = field(default_factory=list)  # error replies and failed commands
    integrity: str = ""
    feedback_counted: int = 0
    index_failed: int = 0

    @property
    def lost(self) -> int:
        return sum(max(0, self.expected[k] - self.stored.get(k, 0)) for k in self.expected)


def _events(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "kind": "message", "text": f"run the tests of module {n}"},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "pytest"},
        {
            "role": "tool",
            "kind": "tool_result",
            "tool_name": "Bash",
            "is_error": True,
            "exit_code": 1,
            "text": "FAILED test_x.py::test_y - KeyError\n1 failed",
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "tool_name": "Bash",
            "exit_code": 0,
            "text": "3 passed",
        },
    ]


def _collect(srv: Server, rids: list[Any], kind: str, errors: list[Any]) -> list[str]:
    """The ids of the `kind` objects the pipelined requests created; error replies to `errors`."""
    ids = []
    for rid in rids:
        reply = srv.response(rid, timeout=300)
        if "error" in reply:
            errors.append(reply["error"])
        else:
            ids.append(reply["result"][kind]["id"])
    return ids


def _server_work(
    srv: Server, n: int, load: Load, project: Path, out: Outcome, lock: threading.Lock
) -> None:
    rng = random.Random(n)
    mine: dict[str, list[str]] = {"blocks": [], "edges": [], "memories": [], "contexts": []}
    errors: list[Any] = []
    feedback = failed = 0
    try:
        for r in range(load.rounds):
            created = [
                srv.request(
                    "blocks/create",
                    {
                        "type": "paragraph",
                        "act_id": f"act-{n}",
                        "content": unique_text(rng, f"s{n}"),
                    },
                )
                for _ in range(load.blocks)
            ]  # pipelined
            ids = _collect(srv, created, "block", errors)
            mine["blocks"] += ids
            edges = [
                srv.request(
                    "memory/relationships/create",
                    {"source_id": a, "target_id": b, "rel_type": "follows_from"},
                )
                for a, b in itertools.pairwise(ids)
            ]
            mine["edges"] += _collect(srv, edges, "relationship", errors)
            failed += srv.call("memory/index/batch", {"block_ids": ids}, timeout=300)["failed"]
            mems = [
                srv.request(
                    "squirrel/memories/add",
                    {
                        "project_root": str(project),
                        "kind": "note",
                        "text": unique_text(rng, f"m{n}"),
                    },
                )
                for _ in range(load.memories)
            ]
            mine["memories"] += _collect(srv, mems, "memory", errors)
            session = {"project_root": str(project), "session_id": f"session-{n}-{r}"}
            srv.call("squirrel/ingest", {**session, "events": _events(n)}, timeout=300)
            srv.call("squirrel/flush", session, timeout=300)
            ctx = srv.call(
                "squirrel/get_task_context", {"project_root": str(project), "task": f"module {n}"}
            )
            mine["contexts"].append(ctx["context_id"])
            fb = srv.call(
                "squirrel/feedback", {"context_id": ctx["context_id"], "errors": 0, "retries": 0}
            )
            feedback += bool(fb["counted"])
    except Exception as exc:  # surfaced through `errors`
        errors.append(repr(exc))
    with lock:
        for k, v in mine.items():
            out.acked.setdefault(k, set()).update(v)
        out.errors += errors
        out.feedback_counted += feedback
        out.index_failed += failed


def _cli_work(db: Path, load: Load, project: Path, out: Outcome, lock: threading.Lock) -> None:
    rng = random.Random(99)
    env = {**os.environ, "REOS_MEMORY_EMBEDDER": "hash"}
    added = 0
    for _ in range(load.cli_memories):
        cmd = [
            *SQRL,
            "add",
            unique_text(rng, "cli"),
            "--db",
            str(db),
            "--project-root",
            str(project),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        if done.returncode != 0 or "locked" in done.stderr:
            with lock:
                out.errors.append(done.stderr)
        else:
            added += 1
    with lock:
        out.acked["cli_memories"] = set(map(str, range(added)))


def run(work: Path, load: Load) -> Outcome:
    """All writers at once on `work/shared.db`; then count what the file holds."""
    db = work / "shared.db"
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    with Server(db, embedder="hash"):
        pass  # the schema first: the race under test is the writes, not the migration
    out = Outcome()
    lock = threading.Lock()
    servers = [Server(db, embedder="hash") for _ in range(load.servers)]
    try:
        threads = [
            threading.Thread(target=_server_work, args=(s, n, load, project, out, lock))
            for n, s in enumerate(servers)
        ] + [threading.Thread(target=_cli_work, args=(db, load, project, out, lock))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for s in servers:
            s.__exit__(None, None, None)
    conn = apsw.Connection(str(db))
    try:
        out.integrity = str(conn.execute("PRAGMA integrity_check").fetchall()[0][0])

        def present(sql: str, ids: set[str]) -> int:
            have = {r[0] for r in conn.execute(sql)}
            return len(ids & have)

        out.expected = {
            "blocks": load.servers * load.rounds * load.blocks,
            "edges": load.servers * load.rounds * (load.blocks - 1),
            "memories": load.servers * load.rounds * load.memories,
            "cli_memories": load.cli_memories,
            "contexts": load.servers * load.rounds,
        }
        out.stored = {
            "blocks": present("SELECT id FROM blocks", out.acked.get("blocks", set())),
            "edges": present("SELECT id FROM block_relationships", out.acked.get("edges", set())),
            "memories": present("SELECT id FROM memories", out.acked.get("memories", set())),
            "cli_memories": _count(conn, "SELECT count(*) FROM memories WHERE text LIKE 'cli:%'"),
            "contexts": present(
                "SELECT context_id FROM context_requests", out.acked.get("contexts", set())
            ),
        }
        totals = {
            "blocks": "SELECT count(*) FROM blocks",
            "edges": "SELECT count(*) FROM block_relationships",
            "embeddings": "SELECT count(*) FROM block_embeddings",
            "episodes": "SELECT count(*) FROM episodes",
        }
        for k, sql in totals.items():
            out.stored[f"rows_{k}"] = _count(conn, sql)
    finally:
        conn.close()
    return out


def _count(conn: apsw.Connection, sql: str) -> int:
    """The single integer a `SELECT count(*) ...` returns."""
    value = conn.execute(sql).fetchall()[0][0]
    assert isinstance(value, int), value
    return value
