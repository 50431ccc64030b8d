"""`sqrl ingest` speed for every agent's log format: print figures, assert nothing.

    python tools/bench_formats.py [--mb 10] [--runs 3] [--agents a,b] [--embedder onnx]
                                  [--workdir DIR]

For each agent, sessions of about --mb MB are scripted once (the same mix of prompts, answers,
commands with their output and exit codes, and edits for every agent: `harness.agent_logs`) and
written as that agent writes them under a fake home. Two figures each:

* `sqrl ingest --end` of them as a whole process, from scratch (a new database each run, model
  load and the offline writer learning included): MB/s, the median of --runs runs;
* the adapter alone, in this process: its records read and parsed into events (no storing),
  MB/s.

The real samples in ../shared/formats are measured the same way (adapter alone) where they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import agent_logs  # noqa: E402
from harness.rpc_client import SQRL  # noqa: E402
from reos_memory.squirrel.ingest import AGENT_NAMES  # noqa: E402

FORMATS = ROOT.parent / "shared" / "formats"
REAL = {  # the real samples of each format (written by the tools themselves)
    "claude-code": ["claude-code/spotter", "claude-code/claude-code-viewer"],
    "codex": ["codex/codemie-code"],
    "aider": ["aider/aider/chat-history.md"],
    "cursor": ["cursor/cursor-history/state.vscdb"],
}
OUTPUTS = [
    ("pytest -q tests/test_api.py", "FAILED tests/test_api.py::test_page - KeyError\n1 failed", 1),
    ("pytest -q tests/test_api.py", "12 passed in 0.41s", 0),
    ("git status --short", " M src/api/orders.py\n?? notes.txt", 0),
    ("npm run build", "src/app.ts(12,5): error TS2322: Type 'string' is not assignable", 2),
    ("ls src", "api\nmodels\nviews\nutils", 0),
]
PROMPTS = [
    "Add pagination to the orders endpoint",
    "Fix the flaky checkout test",
    "Refactor the HTTP client to use retries",
    "Why does the build fail on CI?",
]


def script(s: agent_logs.Session, rng: random.Random, turns: int) -> None:
    """One session's worth of work: prompts, commands with output, edits, answers."""
    for t in range(turns):
        s.user(rng.choice(PROMPTS) + f" (part {t})")
        for _ in range(rng.randint(2, 6)):
            cmd, out, code = rng.choice(OUTPUTS)
            body = "\n".join([out] + [f"line {i}: {'x' * rng.randint(10, 80)}" for i in range(20)])
            s.run(cmd, body, code)
        s.edit("src/api/orders.py", "def page(n):", f"def page(n, size={rng.randint(5, 50)}):")
        s.say("Done: the endpoint pages now. " + "Details follow. " * rng.randint(5, 40))


def generate(agent: str, home: Path, megabytes: float, seed: int = 7) -> list[Path]:
    """Sessions of `agent` of about `megabytes` MB under the fake home; the files written."""
    rng = random.Random(seed)
    projects = []
    for i in range(4):
        p = home / "work" / f"proj{i}"
        (p / ".git").mkdir(parents=True, exist_ok=True)
        projects.append(p)
    start = datetime.now(UTC) - timedelta(days=2)
    files: list[Path] = []
    n = 0
    while _size(files) < megabytes * 1e6:
        n += 1
        s = agent_logs.session(agent, rng.choice(projects), start + timedelta(minutes=13 * n))
        script(s, rng, rng.randint(3, 8))
        path = s.write(home, timedelta(hours=2))
        if path not in files:
            files.append(path)
    return files


def _size(files: list[Path]) -> int:
    return sum(_bytes(f) for f in files)


def _bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def parse_only(agent: str, paths: list[Path], named: bool = False) -> dict[str, Any]:
    """The adapter alone: records read and parsed, nothing stored. The logs under `paths`
    that are `agent`'s (all the files named, with `named`: a real sample under another name)."""
    from reos_memory.squirrel.ingest import ingest as tin
    from reos_memory.squirrel.ingest.base import ParseState

    adapter = tin.ADAPTERS[agent]
    files = [Path(f) for f in tin.find([str(p) for p in paths])]
    files = [f for f in files if (named and f in paths) or tin.detect(str(f)) == agent]
    size = sum(f.stat().st_size for f in files)
    events = records = malformed = 0
    t0 = time.perf_counter()
    for f in files:
        state = ParseState()
        adapter.begin(str(f), state)
        pos = 0
        while True:
            n = 0
            for rec in adapter.records(str(f), pos, 4 << 20):
                n += 1
                pos = rec.end
                if rec.data is None:
                    malformed += rec.malformed
                    continue
                events += len(adapter.parse(rec.data, state))
            records += n
            if n == 0:
                break
        events += len(adapter.finish(state))
    secs = time.perf_counter() - t0
    return {
        "files": len(files),
        "megabytes": round(size / 1e6, 2),
        "records": records,
        "events": events,
        "malformed": malformed,
        "mb_per_s": round(size / 1e6 / secs, 1) if secs else None,
    }


def whole(agent: str, files: list[Path], work: Path, embedder: str, runs: int) -> dict[str, Any]:
    """`sqrl ingest --end FILES` from scratch, as a whole process; the median of runs."""
    db = work / f"{agent}.db"
    env = {**os.environ, "REOS_MEMORY_DB": str(db), "REOS_MEMORY_EMBEDDER": embedder}
    times = []
    reps: list[dict[str, Any]] = []
    for _ in range(runs):
        for s in ("", "-wal", "-shm"):
            Path(str(db) + s).unlink(missing_ok=True)
        t0 = time.perf_counter()
        r = subprocess.run(
            [*SQRL, "ingest", "--json", "--end", "--agent", agent, *map(str, files)],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"{agent}: {r.stderr}")
        reps = json.loads(r.stdout)
    size = _size(files)
    secs = statistics.median(times)
    events = sum(x["events"] for x in reps)
    return {
        "megabytes": round(size / 1e6, 2),
        "files": len(files),
        "sessions": len({x["session_id"] for x in reps if x["session_id"]}),
        "events": events,
        "events_per_s": round(events / secs),
        "malformed": sum(x["malformed"] for x in reps),
        "episodes": sum(len(x["episodes"]) for x in reps),
        "seconds_each_run": [round(t, 2) for t in times],
        "mb_per_s": round(size / 1e6 / secs, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--agents", help="comma-separated (default: every agent)")
    ap.add_argument("--embedder", default="onnx")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    agents = args.agents.split(",") if args.agents else [a for a in AGENT_NAMES if a != "auto"]
    work = args.workdir or Path(os.environ.get("TMPDIR", "/tmp")) / "bench-formats"
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for agent in agents:
        home = work / f"home-{agent}"
        shutil.rmtree(home, ignore_errors=True)
        files = generate(agent, home, args.mb)
        row: dict[str, Any] = {
            "agent": agent,
            "generated_parse": parse_only(agent, files),
            "generated_sqrl_ingest": whole(agent, files, work, args.embedder, args.runs),
        }
        real = [FORMATS / p for p in REAL.get(agent, []) if (FORMATS / p).exists()]
        if real:
            row["real_sample_parse"] = parse_only(agent, real, named=True)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(
        "| agent | generated MB (files) | `sqrl ingest` MB/s | events/s | adapter alone MB/s"
        " | real sample, adapter alone |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        g, w = r["generated_parse"], r["generated_sqrl_ingest"]
        sample = r.get("real_sample_parse")
        real_text = f"{sample['megabytes']} MB at {sample['mb_per_s']} MB/s" if sample else "none"
        print(
            f"| {r['agent']} | {w['megabytes']} ({w['files']}) | {w['mb_per_s']}"
            f" | {w['events_per_s']} | {g['mb_per_s']} | {real_text} |"
        )


if __name__ == "__main__":
    main()
