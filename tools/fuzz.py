"""Fuzz the real server from rpc_schema/openrpc.json with a long budget (the suite runs a short
one): for every method, `--examples` valid and as many invalid params, then hostile framing, odd
ids and a mixed batch. Prints the replies by method and code; exits 1 on the first reply that is
malformed, carries the wrong id or is -32603, or if the process dies.

    python tools/fuzz.py [--examples 200] [--seed 1] [--methods memory/search blocks/create]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness import fuzz  # noqa: E402


def fuzz_one(srv, method, label, strategy, args, seen: Counter[str]) -> None:
    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.data())
    def run(data):
        params = data.draw(strategy)
        reply = fuzz.call_and_check(srv, method, params)
        code = reply["error"]["code"] if "error" in reply else "ok"
        seen[f"{label}:{code}"] += 1

    run()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--examples", type=int, default=200, help="valid and invalid cases per method")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--methods", nargs="*", help="only these methods")
    args = ap.parse_args()
    counts: dict[str, Counter[str]] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, fuzz.fresh_server(Path(tmp)) as srv:
        srv.wait_ready()
        for method in args.methods or sorted(fuzz.METHODS):
            for label, strategy in (
                ("valid", fuzz.valid_params(method)),
                ("invalid", fuzz.invalid_params(method)),
            ):
                fuzz_one(srv, method, label, strategy, args, counts.setdefault(method, Counter()))
            assert srv.call("ping") == {"pong": True}, f"the server died after {method}"
        for what, raw in fuzz.hostile_frames(16 * 1024 * 1024):
            before = len(srv.raw_lines)
            srv.send_bytes(raw)
            reply = json.loads(srv.wait_lines(before + 1)[before])
            assert reply["error"]["code"] != fuzz.INTERNAL_ERROR, what
            counts.setdefault("(framing)", Counter())[what] += 1
        for rid in fuzz.ODD_IDS:
            fuzz.check_reply(srv.response(srv.request("ping", id=rid)), rid)
        assert len(srv.batch(fuzz.mixed_batch())) == 6
        assert srv.call("ping") == {"pong": True}
        alive = srv.proc.poll() is None
    total = sum(sum(c.values()) for c in counts.values())
    print(
        json.dumps(
            {
                "requests": total,
                "seconds": round(time.monotonic() - t0, 1),
                "internal_errors": 0,
                "process_alive_at_end": alive,
                "by_method": {m: dict(sorted(c.items())) for m, c in counts.items()},
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
