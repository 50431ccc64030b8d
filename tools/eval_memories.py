"""What Squirrel learns from real sessions, against gold memories (the agent-sessions format).

    python tools/eval_memories.py DATASET [--embedder onnx] [--writer rules|claude-code|codex|...]
                                          [--part N] [--only ID[,ID...]] [--show all|junk|none]
                                          [--json FILE]
                                          [--env NAME=VALUE ...] [--workdir DIR]

DATASET is a folder with `gold.json` (see ../shared/datasets/agent-sessions/README.md: sessions
with their log paths, relative to the folder, and gold items with `match` regex alternatives).
For each session: a fresh database, a real `reos-memory serve` process, every log of the session
in through `squirrel/ingest_transcript` (the last one with `session_end: true`), then every
memory listed (`squirrel/memories/list`, provisional and active). Reported:

* gold recall: items matched by at least one memory, all and importance-weighted, with and
  without the project-command items (`cmd1`);
* memories per session, and per session whose gold is empty (or holds only `cmd1`);
* memories that match no gold item (an upper bound on junk; printed so a person can judge);
* secrets found in the memories and in the whole database file (a scan independent of the
  product's own redaction);
* writer calls, their tokens, and seconds.

A memory matches an item iff, for one of its alternatives, every regex is found in the memory's
text (case-insensitive), the dataset's reference rule.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rpc_client import Server  # noqa: E402  (the same client the end-to-end tests use)

# Secrets by their own shapes, independent of reos_memory's redaction rules.
SECRET_SHAPES = [
    re.compile(p)
    for p in (
        r"\bsk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_\-]{20,}",
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",
        r"\bgithub_pat_[A-Za-z0-9_]{30,}",
        r"\bAKIA[0-9A-Z]{16}\b",
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"\bAIza[0-9A-Za-z_\-]{35}\b",
        r"\bphc_[A-Za-z0-9]{30,}",
        r"\bnpm_[A-Za-z0-9]{30,}",
        r"\blin_api_[A-Za-z0-9]{30,}",
        r"\bhf_[A-Za-z]{30,}",
        # a named value with letters and digits (not `token = ReviewTokenStore`)
        r"(?i)\b(?:password|passwd|secret|api[_-]?key|token)\s*[:=]\s*['\"]?(?!\[REDACTED)"
        r"(?=[A-Za-z+/_\-]*[0-9])(?=[0-9+/_\-]*[A-Za-z])[A-Za-z0-9+/_\-]{16,}",
    )
]


def matches(text: str, item: dict[str, Any]) -> bool:
    return any(all(re.search(p, text, re.I) for p in alt) for alt in item["match"])


def secrets_in(text: str) -> list[str]:
    return [m.group(0)[:40] for p in SECRET_SHAPES for m in p.finditer(text)]


def run_session(
    base: Path, sess: dict[str, Any], workdir: Path, embedder: str, env: dict[str, str]
) -> dict[str, Any]:
    db = workdir / f"{sess['id']}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    paths = [sess["path"], *sess.get("subagent_paths", [])]
    t0 = time.perf_counter()
    project_id = None
    episodes = 0
    with Server(db, embedder=embedder, env=env) as srv:
        for i, rel in enumerate(paths):
            res = srv.call(
                "squirrel/ingest_transcript",
                {
                    "path": str((base / rel).resolve()),
                    "agent": sess.get("agent", "auto"),
                    "session_end": i == len(paths) - 1,
                },
            )
            project_id = project_id or res.get("project_id")
            episodes += len(res.get("episodes") or [])
        if project_id is not None:
            _wait_learned(srv, project_id)
        memories: list[dict[str, Any]] = []
        if project_id is not None:
            cursor = None
            while True:
                params: dict[str, Any] = {"project_id": project_id, "limit": 500}
                if cursor:
                    params["cursor"] = cursor
                page = srv.call("squirrel/memories/list", params)
                memories += page["memories"]
                cursor = page.get("next_cursor")
                if not cursor:
                    break
    seconds = time.perf_counter() - t0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        calls = con.execute(
            "SELECT count(*), coalesce(sum(input_tokens),0), coalesce(sum(output_tokens),0)"
            " FROM writer_calls"
        ).fetchone()
        rejected = con.execute(
            "SELECT count(*) FROM episodes WHERE ops_json LIKE '%\"rejected\"%'"
        ).fetchone()[0]
    finally:
        con.close()
    raw = db.read_bytes().decode("utf-8", "replace")
    return {
        "id": sess["id"],
        "episodes": episodes,
        "memories": memories,
        "writer_calls": calls[0],
        "input_tokens": calls[1],
        "output_tokens": calls[2],
        "episodes_with_rejections": rejected,
        "seconds": seconds,
        "secrets_in_memories": [s for m in memories for s in secrets_in(m["text"])],
        "secrets_in_db": secrets_in(raw),
    }


def _wait_learned(srv: Server, project_id: str, timeout: float = 600.0) -> None:
    """An LLM writer learns on background threads: wait until no episode is pending or running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [
            e
            for outcome in ("pending", "running")
            for e in srv.call(
                "squirrel/episodes/list", {"project_id": project_id, "outcome": outcome}
            )["episodes"]
        ]
        if not busy:
            return
        time.sleep(0.5)
    raise TimeoutError(f"episodes of {project_id} still being learned after {timeout:.0f} s")


def score(gold: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = {"all": [0, 0, 0.0, 0.0], "lessons": [0, 0, 0.0, 0.0]}  # hits, n, w-hits, w
    misses = []
    junk = []
    per_session = []
    n_mem = 0
    for sess in gold:
        res = results.get(sess["id"])
        if res is None:
            continue
        texts = [m["text"] for m in res["memories"]]
        n_mem += len(texts)
        hits = 0
        for item in sess["gold"]:
            hit = any(matches(t, item) for t in texts)
            hits += hit
            for part in ("all", "lessons") if item["id"] != "cmd1" else ("all",):
                f = found[part]
                f[0] += hit
                f[1] += 1
                f[2] += item["importance"] * hit
                f[3] += item["importance"]
            if not hit:
                misses.append((sess["id"], item))
        for m in res["memories"]:
            if not any(matches(m["text"], item) for item in sess["gold"]):
                junk.append((sess["id"], m))
        per_session.append((sess["id"], len(sess["gold"]), hits, len(texts)))
    empty = [s for s in gold if s["id"] in results and not s["gold"]]
    cmd_only = [
        s
        for s in gold
        if s["id"] in results and s["gold"] and all(i["id"] == "cmd1" for i in s["gold"])
    ]
    return {
        "recall": {
            k: {
                "items": f"{v[0]}/{v[1]}",
                "recall": v[0] / v[1] if v[1] else 0.0,
                "weighted": v[2] / v[3] if v[3] else 0.0,
            }
            for k, v in found.items()
        },
        "memories": n_mem,
        "memories_per_session": n_mem / max(1, len(results)),
        "memories_per_empty_session": (
            sum(len(results[s["id"]]["memories"]) for s in empty) / len(empty) if empty else None
        ),
        "memories_per_cmd_only_session": (
            sum(len(results[s["id"]]["memories"]) for s in cmd_only) / len(cmd_only)
            if cmd_only
            else None
        ),
        "unmatched_share": len(junk) / n_mem if n_mem else 0.0,
        "unmatched": junk,
        "misses": misses,
        "per_session": per_session,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--embedder", default="onnx")
    ap.add_argument(
        "--writer", default="rules", help="the `writer` setting (rules, claude-code, ...)"
    )
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    ap.add_argument("--only", default="", help="session ids, comma-separated")
    ap.add_argument(
        "--part",
        type=int,
        help="only the sessions of this `part` of gold.json (1: where failure modes are looked"
        " for; 2: a check whose sessions and gold are not read, so --show none)",
    )
    ap.add_argument("--show", choices=["all", "junk", "none"], default="all")
    ap.add_argument("--json", type=Path, help="write the whole result here")
    ap.add_argument("--workdir", type=Path, help="keep the databases here")
    args = ap.parse_args(argv)

    spec = json.loads((args.dataset / "gold.json").read_text())
    sessions = spec["sessions"]
    if args.part is not None:
        sessions = [s for s in sessions if s.get("part") == args.part]
    if args.only:
        wanted = set(args.only.split(","))
        sessions = [s for s in sessions if s["id"] in wanted]
    env = {"REOS_MEMORY_WRITER": args.writer}
    env.update(dict(kv.split("=", 1) for kv in args.env))
    # a user's own policy or config must not change what is measured
    # the databases and home are removed after the run unless --workdir asks to keep them
    # (hundreds of runs each left theirs in /tmp: 14 GB)
    with contextlib.ExitStack() as stack:
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="eval-memories-home-"))
        env.setdefault("REOS_MEMORY_HOME", home)
        if args.workdir:
            workdir = args.workdir
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="eval-memories-"))
            )
        return _run(args, sessions, workdir, env)


def _run(args: argparse.Namespace, sessions: list[dict], workdir: Path, env: dict) -> int:
    t0 = time.perf_counter()
    results = {}
    for s in sessions:
        results[s["id"]] = run_session(args.dataset, s, workdir, args.embedder, env)
        r = results[s["id"]]
        sys.stderr.write(
            f"{s['id']}: {len(r['memories'])} memories, {r['writer_calls']} writer calls,"
            f" {r['seconds']:.1f} s\n"
        )
    total = time.perf_counter() - t0
    sc = score(sessions, results)

    out = sys.stdout
    if args.show != "none":
        for sid, gold_n, hits, n in sc["per_session"]:
            out.write(f"\n== {sid}: gold {hits}/{gold_n}, {n} memories\n")
            sess = next(s for s in sessions if s["id"] == sid)
            for m in results[sid]["memories"]:
                hit = [i["id"] for i in sess["gold"] if matches(m["text"], i)]
                if args.show == "junk" and hit:
                    continue
                tag = ",".join(hit) if hit else "-"
                out.write(f"  [{tag}] ({m['kind']}/{m['tier']}) {m['text']}\n")
            if args.show == "all":
                for item in sess["gold"]:
                    if not any(matches(m["text"], item) for m in results[sid]["memories"]):
                        out.write(
                            f"  MISSED {item['id']} ({item['importance']}): {item['text'][:150]}\n"
                        )
    rec = sc["recall"]
    calls = sum(r["writer_calls"] for r in results.values())
    tokens_in = sum(r["input_tokens"] for r in results.values())
    tokens_out = sum(r["output_tokens"] for r in results.values())
    secrets_mem = sum(len(r["secrets_in_memories"]) for r in results.values())
    secrets_db = sum(len(r["secrets_in_db"]) for r in results.values())
    out.write(
        f"\nsessions {len(results)}, writer `{args.writer}`\n"
        f"gold recall, all items:    {rec['all']['items']} = {rec['all']['recall']:.3f},"
        f" importance-weighted {rec['all']['weighted']:.3f}\n"
        f"gold recall, lessons only: {rec['lessons']['items']} = {rec['lessons']['recall']:.3f},"
        f" importance-weighted {rec['lessons']['weighted']:.3f}\n"
        f"memories: {sc['memories']} ({sc['memories_per_session']:.2f} per session);"
        f" per empty-gold session {_f(sc['memories_per_empty_session'])},"
        f" per commands-only session {_f(sc['memories_per_cmd_only_session'])}\n"
        f"memories matching no gold item: {len(sc['unmatched'])} = {sc['unmatched_share']:.1%}\n"
        f"secrets: {secrets_mem} in memories, {secrets_db} in the database files\n"
        f"writer calls {calls}, tokens in {tokens_in} / out {tokens_out}; {total:.1f} s\n"
    )
    if args.json:
        args.json.write_text(json.dumps({"score": sc, "results": results}, default=str, indent=1))
    return 0


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
