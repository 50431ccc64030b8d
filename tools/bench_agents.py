"""Benchmarks of the agent connections: print figures, assert nothing.

    python tools/bench_agents.py [--mb 50] [--memories 10000] [--runs 20] [--rss-lines 20000]
                                 [--embedder onnx] [--workdir DIR]
                                 [--only ingest|hook|tools|watch] [--ingest-runs 3]
                                 [--hook-idle 10] [--hook-calls 1000]

* transcript ingestion: a generated set of Claude Code 2.1.x sessions (with their progress,
  snapshot and subagent records) and Codex rollouts of about --mb MB, ingested from scratch by
  `sqrl ingest` (a whole process, the real model for the memories it commits; the median of
  --ingest-runs runs): events/s, MB/s;
* the Claude Code hook as a whole process (`reos-memory hook claude-code`), SessionStart and
  UserPromptSubmit, with --memories memories in the project: wall time p50/p95 in-process (no
  warm service: model load included), the cold first call that starts the warm service, warm
  calls; then --hook-calls calls from 8 sessions at once, and the hook processes left after
  them and after the service's idle timeout (--hook-idle s);
* every agent's hook (`reos-memory hook <tool>`: claude-code, cursor, gemini, windsurf, copilot)
  as a whole process on the warm service, session start and prompt, each call with that tool's
  own stdin: p50/p95 over --runs calls, printed as a table too;
* `sqrl watch` RSS: a running watcher while --rss-lines lines (an hour of several busy agents)
  are appended to live session files in bursts; RSS at the start and the end, and its slope.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reos_memory.squirrel.api import EpisodeRun

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import processes  # noqa: E402
from harness.agent_homes import ClaudeSession, CodexSession  # noqa: E402
from harness.hook_payloads import EVENTS, cursor_tool_runs, payload  # noqa: E402
from harness.rpc_client import SQRL  # noqa: E402
from tools.bench import pct, proc_status_kb, slope  # noqa: E402

OUTPUTS = [
    "collected 48 items\n\n"
    + "".join(f"tests/test_mod{i}.py ........                [ {i * 12}%]\n" for i in range(8))
    + "\n48 passed in 3.21s",
    "src/app.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.\n" * 3,
    "On branch main\nChanges not staged for commit:\n  modified:   src/api/client.py\n",
    "".join(f"drwxr-xr-x  5 dev dev 4096 Nov 20 10:0{i} dir{i}\n" for i in range(10)),
]
PROMPTS = [
    "Add pagination to the orders endpoint",
    "Fix the flaky checkout test",
    "Refactor the HTTP client to use retries",
    "Update the README with the new deploy steps",
    "Why does the build fail on CI?",
]


def claude_session(rng: random.Random, cwd: Path, start: datetime, turns: int) -> ClaudeSession:
    s = ClaudeSession(cwd, start)
    for t in range(turns):
        s.user(rng.choice(PROMPTS) + f" (step {t})")
        for _ in range(rng.randint(3, 8)):
            kind = rng.random()
            if kind < 0.5:
                out = rng.choice(OUTPUTS) * rng.randint(1, 6)
                code = 1 if rng.random() < 0.15 else 0
                s.bash(
                    rng.choice(["pytest -q", "npm run build", "git status", "ls -la"]), out, code
                )
            elif kind < 0.8:
                s.tool(
                    "Read",
                    {"file_path": f"{cwd}/src/mod{rng.randint(0, 40)}.py"},
                    "\n".join(
                        f"{i:>5}\tdef f{i}(x): return x * {i}" for i in range(rng.randint(20, 200))
                    ),
                )
            else:
                path = f"{cwd}/src/mod{rng.randint(0, 40)}.py"
                source = "\n".join(
                    f"def f{i}(x):\n    return x" for i in range(rng.randint(40, 160))
                )
                # as 2.x writes it: the result carries the whole original file and the patch
                s.tool(
                    "Edit",
                    {"file_path": path, "old_string": "return x", "new_string": "return x + 1"},
                    f"The file {path} has been updated.",
                    result={
                        "filePath": path,
                        "oldString": "return x",
                        "newString": "return x + 1",
                        "originalFile": source,
                        "userModified": False,
                        "structuredPatch": [
                            {"oldStart": 2, "lines": ["-    return x", "+    return x + 1"]}
                        ],
                    },
                )
            out = rng.choice(OUTPUTS)
            for k in range(rng.randint(2, 6)):  # 2.1.x files: 70% of lines, 40% of bytes
                s.records.append(
                    s._env(
                        "progress",
                        toolUseID=f"bash-progress-{k}",
                        parentToolUseID="toolu_x",
                        data={
                            "type": "bash_progress",
                            "output": out[: 100 * (k + 1)],
                            "fullOutput": out[: 100 * (k + 1)],
                            "elapsedTimeSeconds": k + 1,
                            "totalLines": k * 3,
                        },
                    )
                )
        s.say("Done. " + "I changed the code and ran the tests. " * rng.randint(1, 8))
    return s


def codex_session(rng: random.Random, cwd: Path, start: datetime, turns: int) -> CodexSession:
    c = CodexSession(cwd, start)
    for t in range(turns):
        c.user(rng.choice(PROMPTS) + f" (step {t})")
        for _ in range(rng.randint(3, 8)):
            if rng.random() < 0.8:
                c.run(
                    rng.choice(["npm test", "cargo test", "rg TODO", "sed -n 1,80p src/lib.rs"]),
                    rng.choice(OUTPUTS) * rng.randint(1, 6),
                    1 if rng.random() < 0.15 else 0,
                )
            else:
                c.patch(f"src/mod{rng.randint(0, 40)}.rs", "-    x\n+    x + 1")
        c.say("Done.")
    return c


def generate(root: Path, megabytes: float, seed: int = 5) -> tuple[int, int]:
    """Session logs of about `megabytes` MB under root/.claude and root/.codex; (files, bytes)."""
    rng = random.Random(seed)
    claude, codex = root / ".claude", root / ".codex"
    projects = []
    for i in range(6):
        p = root / "work" / f"proj{i}"
        (p / ".git").mkdir(parents=True, exist_ok=True)
        projects.append(p)
    total = files = 0
    start = datetime.now(UTC) - timedelta(days=3)
    n = 0
    while total < megabytes * 1e6:
        n += 1
        when = start + timedelta(minutes=17 * n)
        cwd = rng.choice(projects)
        if n % 4 == 0:
            path = codex_session(rng, cwd, when, rng.randint(3, 10)).write(
                codex, timedelta(hours=2)
            )
            written = [path]
        else:
            s = claude_session(rng, cwd, when, rng.randint(3, 10))
            if n % 5 == 0:
                s.subagent(
                    "Look for all callers of the client",
                    [("Grep", {"pattern": "client", "path": str(cwd)}, "src/a.py\nsrc/b.py")],
                )
            main = s.write(claude, timedelta(hours=2))
            written = [main, *main.with_suffix("").rglob("*.jsonl")]
        for w in written:
            total += w.stat().st_size
            files += 1
    return files, total


def bench_ingest(work: Path, megabytes: float, embedder: str, runs: int = 3) -> dict:
    home = work / "ingest-home"
    shutil.rmtree(home, ignore_errors=True)
    files, size = generate(home, megabytes)
    db = work / "ingest.db"
    env = {**os.environ, "REOS_MEMORY_DB": str(db), "REOS_MEMORY_EMBEDDER": embedder}
    times = []
    for _ in range(runs):  # each from scratch: a new database
        for s in ("", "-wal", "-shm"):
            Path(str(db) + s).unlink(missing_ok=True)
        t0 = time.perf_counter()
        r = subprocess.run(
            [*SQRL, "ingest", "--json", str(home)],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
    reps = json.loads(r.stdout)
    split = _in_process(home, work / "ingest-inproc.db", embedder)
    events = sum(x["events"] for x in reps)
    lines = sum(x["lines"] for x in reps)
    episodes = sum(len(x["episodes"]) for x in reps)
    secs = statistics.median(times)
    from reos_memory.config import load_config
    from reos_memory.squirrel.writer.helper_process import wanted

    return {
        "files": files,
        "megabytes": round(size / 1e6, 1),
        "lines": lines,
        "events": events,
        "episodes": episodes,
        "memories_learned": sum(
            len(e.get("ops") or [])
            for x in reps
            for e in x["episodes"]
            if e.get("outcome") == "written"
        ),
        # `sqrl ingest DIR` from scratch, start-up and model load included: the median of runs
        "seconds_whole_process": round(secs, 2),
        "seconds_each_run": [round(t, 2) for t in times],
        "learned_in_a_helper_process": wanted(load_config(None, {"db": str(db)}), [str(home)]),
        "mb_per_s": round(size / 1e6 / secs, 1),
        "events_per_s": round(events / secs),
        "malformed": sum(x["malformed"] for x in reps),
        "in_process": {  # the same logs, the service's code path, no start-up, no helper
            "seconds": round(split["total"], 2),
            # reading, parsing, redacting, cutting and storing: the ingestion itself
            "reading_and_cutting_mb_per_s": round(size / 1e6 / split["cutting"], 1),
            "with_writer_mb_per_s": round(size / 1e6 / split["total"], 1),
        },
    }


def _pending(
    after_cut: Callable[[EpisodeRun, bool], EpisodeRun],
    ep: EpisodeRun,
    process: bool,
    wait: bool = False,
) -> EpisodeRun:
    return after_cut(ep, False)


def _in_process(home: Path, db: Path, embedder: str) -> dict[str, float]:
    """Ingest in this process (the writer on a thread, no helper process): how long reading,
    parsing, redacting, cutting and storing take alone (the episodes left pending), and how long
    with the offline writer learning from them (rules, commits, embeddings)."""
    import msgspec

    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging
    from reos_memory.squirrel.ingest.ingest import Options

    out = {}
    for name in ("cutting", "total"):
        for s in ("", "-wal", "-shm"):
            Path(str(db) + s).unlink(missing_ok=True)
        cfg = msgspec.structs.replace(
            load_config(None, {"db": str(db), "embedder": embedder}), catch_up_indexing=False
        )
        app = App(cfg, setup_logging("warning"))
        app.start()
        app.embeddings.wait_ready(120)
        try:
            sq = app.squirrel
            if name == "cutting":  # every cut episode left pending
                writer = sq.writer
                writer.after_cut = functools.partial(_pending, writer.after_cut)  # type: ignore[method-assign]
            t0 = time.perf_counter()
            sq.ingest_paths([str(home)], Options())
            out[name] = time.perf_counter() - t0
        finally:
            app.close()
    return out


def fill(db: Path, project: Path, n: int, embedder: str) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import bench_squirrel

    app = bench_squirrel.build_app(db, embedder)
    try:
        bench_squirrel.fill_memories(app, str(project), n, random.Random(11))
    finally:
        app.close()


def hook_processes(db: Path) -> dict[str, int]:
    """Live processes of the hook for this database, by kind: the warm service, queue workers,
    and hook calls still running."""
    out = {"service": 0, "worker": 0, "call": 0}
    me = str(db).encode()
    for _, args, proc in processes.live():
        if b"reos_memory" not in args or b"hook" not in args:
            continue
        try:
            mine = me in args or b"REOS_MEMORY_DB=" + me in (proc / "environ").read_bytes()
        except OSError:
            continue
        if mine:
            kind = "service" if b"--serve" in args else "worker" if b"--worker" in args else "call"
            out[kind] += 1
    return out


def _hook_call(env: dict, payload: dict, tool: str = "claude-code") -> tuple[float, bool]:
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "reos_memory", "hook", tool],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return time.perf_counter() - t0, bool(r.stdout.strip())


def _timed_calls(env: dict, tool: str, payloads: Iterable[dict]) -> dict:
    """p50/p95 of whole hook processes of `tool`, one per payload, and how many printed
    context."""
    times, hits = [], 0
    for p in payloads:
        t, hit = _hook_call(env, p, tool)
        times.append(t)
        hits += hit
    return {
        "p50_s": round(pct(times, 0.5), 3),
        "p95_s": round(pct(times, 0.95), 3),
        "runs": len(times),
        "answered_with_context": hits,
    }


def _wait_gone(db: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(hook_processes(db).values()):
        time.sleep(0.2)


def _hook_db(work: Path, memories: int, embedder: str, reuse: bool) -> tuple[Path, Path]:
    """The hook benches' database, `memories` memories in one project (kept with `reuse`)."""
    db = work / "hook.db"
    project = work / "hook-repo"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    if not (reuse and db.exists()):
        for s in ("", "-wal", "-shm"):
            Path(str(db) + s).unlink(missing_ok=True)
        fill(db, project, memories, embedder)
    return db, project


def bench_hook(
    work: Path, memories: int, runs: int, embedder: str, reuse: bool, idle_s: float, calls: int
) -> dict:
    """The hook as Claude Code runs it: in-process (no warm service), the cold first call that
    starts the service, warm calls, then `calls` calls from 8 sessions at once and the
    processes left after them and after the idle timeout."""
    db, project = _hook_db(work, memories, embedder, reuse)
    base = {"REOS_MEMORY_DB": str(db), "REOS_MEMORY_OWNER_ID": "bench"}
    warm_env = {**os.environ, **base, "REOS_MEMORY_HOOK_SERVICE_IDLE_S": str(idle_s)}
    alone_env = {**os.environ, **base, "REOS_MEMORY_HOOK_SERVICE_IDLE_S": "0"}
    out: dict = {"memories": memories, "idle_s": idle_s}
    token = f"{os.getpid()}-{time.time_ns()}"

    def payload(event: str, session: str, i: int) -> dict:
        # a new session each run: a reused database must not know it (it would inject
        # nothing already injected in it)
        return {
            "hook_event_name": event,
            "session_id": f"bench-{event}-{token}-{session}",
            "cwd": str(project),
            "source": "startup",
            "transcript_path": str(work / "none.jsonl"),
            "prompt": f"fix the SSL error of requests in api/client.py ({i})",
        }

    def timed(name: str, env: dict, event: str) -> None:
        calls = (payload(event, f"{name}-{i}", i) for i in range(runs))
        out[f"{event} {name}"] = _timed_calls(env, "claude-code", calls)

    _wait_gone(db, idle_s + 30)  # no service left from an earlier run
    for event in ("SessionStart", "UserPromptSubmit"):
        timed("in-process", alone_env, event)
    t, hit = _hook_call(warm_env, payload("UserPromptSubmit", "cold", 0))
    out["UserPromptSubmit cold (starts the service)"] = {"s": round(t, 3), "answered": hit}
    for event in ("SessionStart", "UserPromptSubmit"):
        timed("warm", warm_env, event)

    def session(k: int) -> list[float]:
        per = calls // 8 + (k < calls % 8)
        return [
            _hook_call(warm_env, payload("UserPromptSubmit", f"many-{k}-{i}", i))[0]
            for i in range(per)
        ]

    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        many = [t for ts in pool.map(session, range(8)) for t in ts]
    out[f"{calls} calls, 8 sessions at once"] = {
        "seconds": round(time.perf_counter() - t0, 1),
        "p50_s": round(pct(many, 0.5), 3),
        "p95_s": round(pct(many, 0.95), 3),
        "processes_after": hook_processes(db),
    }
    time.sleep(idle_s + 2)
    out["processes_after_idle_timeout"] = hook_processes(db)
    return out


def bench_hook_tools(
    work: Path, memories: int, runs: int, embedder: str, reuse: bool, idle_s: float
) -> dict:
    """Every agent's hook on the warm service: session start and prompt, each a new session,
    p50/p95 of the whole process over `runs` calls (the first call, which starts the service,
    is not counted)."""
    db, project = _hook_db(work, memories, embedder, reuse)
    env = {
        **os.environ,
        "REOS_MEMORY_DB": str(db),
        "REOS_MEMORY_OWNER_ID": "bench",
        "REOS_MEMORY_HOOK_SERVICE_IDLE_S": str(idle_s),
    }
    token = f"{os.getpid()}-{time.time_ns()}"
    ask = "fix the SSL error of requests in api/client.py"
    _wait_gone(db, idle_s + 30)
    _hook_call(env, payload("claude-code", "prompt", f"cold-{token}", str(project), prompt=ask))
    out: dict = {"memories": memories}
    for tool, events in EVENTS.items():
        for kind in ("session_start", "prompt"):
            if events[kind] is None:
                continue
            calls = (
                payload(tool, kind, f"bench-{tool}-{kind}-{token}-{i}", str(project), prompt=ask)
                for i in range(runs)
            )
            out[f"{tool} {kind}"] = _timed_calls(env, tool, calls)
    out.update(_cursor_tool_results(env, str(project), runs, token))
    time.sleep(idle_s + 2)
    out["processes_after_idle_timeout"] = hook_processes(db)
    return out


def _cursor_tool_results(env: dict, project: str, runs: int, token: str) -> dict:
    """Cursor's post-tool hooks, which keep the tool results its transcripts lack (a redacted
    line per call in `<db>.hook-tools/`): one postToolUse of a shell command with 20 KB of
    output, its afterShellExecution, and an event the hook ignores (the process alone)."""
    output = "\n".join(f"line {i}: collecting tests ... ok" for i in range(600))
    run = {"name": "Shell", "input": {"command": "pytest -q"}, "output": output}
    post, shell = cursor_tool_runs(f"bench-{token}", project, [run])
    ignored = {**post, "hook_event_name": "beforeReadFile"}
    return {
        f"cursor {p['hook_event_name']}": _timed_calls(env, "cursor", [p] * runs)
        for p in (post, shell, ignored)
    }


def tools_table(figures: dict) -> str:
    """The per-tool figures as a Markdown table."""
    rows = ["| tool | call | p50 s | p95 s | with context |", "| --- | --- | --- | --- | --- |"]
    for name, f in figures.items():
        if isinstance(f, dict) and "p50_s" in f:
            tool, kind = name.split(" ", 1)
            rows.append(
                f"| {tool} | {kind} | {f['p50_s']:.3f} | {f['p95_s']:.3f} "
                f"| {f['answered_with_context']}/{f['runs']} |"
            )
    return "\n".join(rows)


def bench_watch(work: Path, total_lines: int, embedder: str) -> dict:
    home = work / "watch-home"
    shutil.rmtree(home, ignore_errors=True)
    generate(home, 2)  # something to catch up on first
    db = work / "watch.db"
    for s in ("", "-wal", "-shm"):
        Path(str(db) + s).unlink(missing_ok=True)
    from reos_memory.config import default_model_dir

    # HOME points at the generated agent homes; the model stays where it was prepared
    env = {
        **os.environ,
        "REOS_MEMORY_DB": str(db),
        "REOS_MEMORY_EMBEDDER": embedder,
        "HOME": str(home),
        "REOS_MEMORY_MODEL_DIR": os.environ.get("REOS_MEMORY_MODEL_DIR") or default_model_dir(),
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    proc = subprocess.Popen(
        [*SQRL, "watch", "--interval", "0.5"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    rng = random.Random(9)
    samples: list[tuple[float, int]] = []
    try:
        time.sleep(8)  # start-up and catch-up of the existing files
        t_start = time.monotonic()
        samples.append((0.0, proc_status_kb(proc.pid)))
        live = [
            claude_session(rng, home / "work" / "proj0", datetime.now(UTC), 1) for _ in range(4)
        ]
        paths = [s.write(home / ".claude") for s in live]
        written = 0
        while written < total_lines:
            for sess, p in zip(live, paths, strict=True):
                sess.records.clear()
                for _ in range(25):
                    sess.bash("pytest -q", rng.choice(OUTPUTS), 0)
                with open(p, "a", encoding="utf-8") as f:
                    for rec in sess.records:
                        f.write(json.dumps(rec) + "\n")
                written += len(sess.records)
            time.sleep(0.5)
            samples.append((time.monotonic() - t_start, proc_status_kb(proc.pid)))
        time.sleep(5)
        samples.append((time.monotonic() - t_start, proc_status_kb(proc.pid)))
    finally:
        proc.terminate()
        proc.wait(30)
    xs = [t for t, _ in samples]
    ys = [r / 1024 for _, r in samples]
    half = len(ys) // 2
    return {
        "lines_appended": written,
        "seconds": round(xs[-1], 1),
        "rss_mb_start": round(ys[0], 1),
        "rss_mb_end": round(ys[-1], 1),
        "rss_mb_max": round(max(ys), 1),
        "rss_mb_median_first_half": round(statistics.median(ys[:half]), 1),
        "rss_mb_median_second_half": round(statistics.median(ys[half:]), 1),
        "slope_mb_per_min_whole_run": round(slope(xs, ys) * 60, 2),
        # once the SQLite page cache and the vector index have warmed up
        "slope_mb_per_min_second_half": round(slope(xs[half:], ys[half:]) * 60, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--ingest-runs", type=int, default=3)
    ap.add_argument("--rss-lines", type=int, default=60_000)
    ap.add_argument("--embedder", default="onnx")
    ap.add_argument("--workdir")
    ap.add_argument("--reuse", action="store_true", help="keep the hook database of an earlier run")
    ap.add_argument("--only", choices=["ingest", "hook", "tools", "watch"], action="append")
    ap.add_argument("--hook-idle", type=float, default=10, help="the warm service's idle timeout")
    ap.add_argument("--hook-calls", type=int, default=1000, help="calls from 8 sessions at once")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-agents-"))
    work.mkdir(parents=True, exist_ok=True)
    only = set(args.only or ["ingest", "hook", "tools", "watch"])
    report: dict = {"embedder": args.embedder}
    if "ingest" in only:
        report["ingest"] = bench_ingest(work, args.mb, args.embedder, args.ingest_runs)
    if "hook" in only:
        report["hook"] = bench_hook(
            work,
            args.memories,
            args.runs,
            args.embedder,
            args.reuse,
            args.hook_idle,
            args.hook_calls,
        )
    if "tools" in only:
        reuse = args.reuse or "hook" in only  # the database the hook bench just filled
        report["hook_tools"] = bench_hook_tools(
            work, args.memories, args.runs, args.embedder, reuse, args.hook_idle
        )
        print(tools_table(report["hook_tools"]))
    if "watch" in only:
        report["watch_rss"] = bench_watch(work, args.rss_lines, args.embedder)
    print(json.dumps(report, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
