"""Crash trials with a long budget: SIGKILL each operation at random points, many times, and
print what the database held after each kill. Prints figures; exits non-zero on a failed trial.

    python tools/crash.py [--trials 20] [--scale 1.0] [--seed 0] [--only NAME ...] [--workdir DIR]

Scenarios (harness/crash.py): memory/index/batch, documents/insert, the Memory Writer's commits
(squirrel/episodes/retry), `sqrl ingest` with its cursor, squirrel/cr_memory/run, and a
migration (backup, the real migrations, one long rewrite). After every kill the file passes
integrity_check, the operation is all-or-nothing (whole units for work made of many), and
finishing it afterwards gives exactly the state of a run never killed. `state` counts where
the kills landed: none (before anything was committed), part (some whole units), all (after
the commit, before the process ended).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import crash  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20, help="kills per scenario")
    ap.add_argument("--scale", type=float, default=1.0, help="size of each operation")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", choices=sorted(crash.SCENARIOS), default=None)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    names = args.only or list(crash.SCENARIOS)
    failed = 0
    total = {"trials": 0, "killed": 0}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        print(f"{'scenario':<18} {'op s':>6} {'trials':>6} {'killed':>6}  none  part   all  result")
        for name in names:
            t0 = time.monotonic()
            try:
                rep = crash.run(
                    name, Path(tmp) / name, args.trials, seed=args.seed, scale=args.scale
                )
            except crash.TrialFailed as exc:
                failed += 1
                print(f"{name:<18} FAILED: {exc}")
                continue
            states = [rep.count("state", s) for s in ("none", "part", "all")]
            killed = rep.count("killed", True)
            total["trials"] += len(rep.trials)
            total["killed"] += killed
            print(
                f"{name:<18} {rep.seconds:>6.2f} {len(rep.trials):>6} {killed:>6}"
                f"  {states[0]:>4}  {states[1]:>4}  {states[2]:>4}  survived all"
                f" ({time.monotonic() - t0:.0f} s)"
            )
    print(
        f"{total['trials']} trials, {total['killed']} killed mid-operation,"
        f" {failed} scenario(s) failed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
