"""Four server processes and the `sqrl` command line writing to one file at once: blocks,
relationships, index runs, memories, episodes and feedback. Every acknowledged write is there,
the counts are exact, and no lock error ever reaches a client."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import apsw
import pytest

from harness.rpc_client import Server

pytestmark = pytest.mark.e2e

SERVERS = 4
BLOCKS = 40
MEMORIES = 8
CLI_MEMORIES = 6
WORDS = [f"{a}{b}" for a in ("zor", "kel", "vim", "pax", "dru", "mon") for b in "aeiouy"]


def unique_text(rng: random.Random, tag: str) -> str:
    return f"{tag}: " + " ".join(rng.sample(WORDS, 8))


def server_work(srv: Server, n: int, project: Path, out: dict, errors: list) -> None:
    rng = random.Random(n)
    try:
        created = [
            srv.request(
                "blocks/create",
                {"type": "paragraph", "act_id": f"act-{n}", "content": unique_text(rng, f"s{n}")},
            )
            for _ in range(BLOCKS)
        ]  # pipelined
        ids = []
        for rid in created:
            reply = srv.response(rid, timeout=120)
            if "error" in reply:
                errors.append(reply["error"])
            else:
                ids.append(reply["result"]["block"]["id"])
        out[f"blocks{n}"] = ids
        edges = [
            srv.request(
                "memory/relationships/create",
                {"source_id": a, "target_id": b, "rel_type": "follows_from"},
            )
            for a, b in itertools.pairwise(ids)
        ]
        out[f"edges{n}"] = [srv.response(r, timeout=120) for r in edges]
        out[f"index{n}"] = srv.call("memory/index/batch", {"block_ids": ids}, timeout=120)
        mems = [
            srv.request(
                "squirrel/memories/add",
                {"project_root": str(project), "kind": "note", "text": unique_text(rng, f"m{n}")},
            )
            for _ in range(MEMORIES)
        ]
        out[f"memories{n}"] = [srv.response(r, timeout=120) for r in mems]
        events = [
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
        session = {"project_root": str(project), "session_id": f"session-{n}"}
        out[f"ingest{n}"] = srv.call("squirrel/ingest", {**session, "events": events}, timeout=120)
        out[f"flush{n}"] = srv.call("squirrel/flush", session, timeout=120)
        ctx = srv.call(
            "squirrel/get_task_context", {"project_root": str(project), "task": f"module {n}"}
        )
        out[f"feedback{n}"] = srv.call(
            "squirrel/feedback", {"context_id": ctx["context_id"], "errors": 0, "retries": 0}
        )
    except Exception as exc:  # surfaced by the assertions
        errors.append(repr(exc))


def cli_work(db: Path, project: Path, out: dict, errors: list) -> None:
    rng = random.Random(99)
    env = {**os.environ, "REOS_MEMORY_EMBEDDER": "hash"}
    added = 0
    for _ in range(CLI_MEMORIES):
        cmd = [
            sys.executable,
            "-c",
            "from reos_memory.cli import sqrl_main; raise SystemExit(sqrl_main())",
            "add",
            unique_text(rng, "cli"),
            "--db",
            str(db),
            "--project-root",
            str(project),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if done.returncode != 0 or "locked" in done.stderr:
            errors.append(done.stderr)
        else:
            added += 1
    out["cli_added"] = added


def test_four_servers_and_the_cli_lose_nothing(tmp_path):
    db = tmp_path / "shared.db"
    project = tmp_path / "project"
    project.mkdir()
    with Server(db, embedder="hash"):
        pass  # the schema first: the race under test is the writes, not the migration
    out: dict = {}
    errors: list = []
    servers = [Server(db, embedder="hash") for _ in range(SERVERS)]
    try:
        for s in servers:
            s.__enter__()
        threads = [
            threading.Thread(target=server_work, args=(s, n, project, out, errors))
            for n, s in enumerate(servers)
        ] + [threading.Thread(target=cli_work, args=(db, project, out, errors))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        for s in servers:
            s.__exit__(None, None, None)
    assert errors == []
    replies = [r for n in range(SERVERS) for key in ("edges", "memories") for r in out[f"{key}{n}"]]
    assert all("result" in r for r in replies), [r for r in replies if "error" in r][:3]
    conn = apsw.Connection(str(db))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    count = lambda sql: conn.execute(sql).fetchall()[0][0]  # noqa: E731
    acked = [b for n in range(SERVERS) for b in out[f"blocks{n}"]]
    assert len(acked) == SERVERS * BLOCKS and count("SELECT count(*) FROM blocks") == len(acked)
    assert count("SELECT count(*) FROM block_relationships") == SERVERS * (BLOCKS - 1)
    assert count("SELECT count(*) FROM block_embeddings") == len(acked)
    assert all(out[f"index{n}"]["failed"] == 0 for n in range(SERVERS))
    memory_ids = {r["result"]["memory"]["id"] for n in range(SERVERS) for r in out[f"memories{n}"]}
    assert len(memory_ids) == SERVERS * MEMORIES and out["cli_added"] == CLI_MEMORIES
    texts = [r[0] for r in conn.execute("SELECT text FROM memories WHERE text LIKE 'cli:%'")]
    assert len(texts) == CLI_MEMORIES
    stored = {r[0] for r in conn.execute("SELECT id FROM memories")}
    assert memory_ids <= stored
    assert count("SELECT count(*) FROM episodes") >= SERVERS
    assert count("SELECT count(*) FROM context_requests") == SERVERS
    assert all(out[f"feedback{n}"]["counted"] for n in range(SERVERS))
    conn.close()
