"""Concurrency with a long budget: several server processes and `sqrl add` writing to one file
at once, round after round (harness/concurrency.py). Prints writes acknowledged, writes lost,
error replies (a lock error reaching a client counts) and integrity; exits non-zero on a loss.

    python tools/concurrency.py [--servers 4] [--rounds 10] [--blocks 100] [--memories 20]
                                [--cli-memories 20] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.concurrency import Load, run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=100)
    ap.add_argument("--memories", type=int, default=20)
    ap.add_argument("--cli-memories", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=None)
    a = ap.parse_args()
    load = Load(a.servers, a.blocks, a.memories, a.cli_memories, a.rounds)
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        t0 = time.monotonic()
        out = run(Path(tmp), load)
        took = time.monotonic() - t0
    acked = sum(len(v) for v in out.acked.values())
    print(f"{load.servers} servers + sqrl, {load.rounds} rounds, {took:.0f} s")
    print(f"writes acknowledged: {acked} (+ {out.stored['rows_episodes']} episodes, index runs)")
    for k, want in out.expected.items():
        print(f"  {k:<13} expected {want:>6}  stored {out.stored.get(k, 0):>6}")
    print(f"writes lost: {out.lost}")
    print(f"error replies or failed commands: {len(out.errors)} {out.errors[:3]}")
    print(f"feedback counted: {out.feedback_counted}; index failures: {out.index_failed}")
    print(f"integrity_check: {out.integrity}")
    return 0 if out.lost == 0 and not out.errors and out.integrity == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
