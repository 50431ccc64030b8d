"""Run the secret-redaction corpus and print misses, false positives and speed.

    python tools/eval_redaction.py

Misses are secrets of tests/secret_corpus.py SECRETS that survive redact(); false positives are
BENIGN substrings that do not survive (listed with what was removed). Speed is the median time of
one redact() call over the corpus texts, secret-free and secret-bearing, plus ~2,000-character
events built by joining them (a typical size of a tool output in a coding-agent session).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reos_memory.squirrel.redaction import find_secrets, redact  # noqa: E402
from tests.secret_corpus import BENIGN, SECRETS  # noqa: E402


def median_us(texts: list[str], rounds: int = 200) -> float:
    """Median microseconds of one redact() call, taken per text over `rounds` passes."""
    per_text: list[float] = []
    clock = time.perf_counter
    for text in texts:
        redact(text)  # warm the name cache as a long-running service would have it
        start = clock()
        for _ in range(rounds):
            redact(text)
        per_text.append((clock() - start) / rounds * 1e6)
    return statistics.median(per_text)


def events_of(texts: list[str], size: int = 2000) -> list[str]:
    """Join consecutive texts into events of about `size` characters."""
    events, current = [], ""
    for text in texts * 4:
        current += text + "\n"
        if len(current) >= size:
            events.append(current[:size])
            current = ""
    return events


def main() -> int:
    n_secrets = sum(len(secrets) for _, secrets, _ in SECRETS)
    misses = []
    wrong_kind = []
    for text, secrets, kind in SECRETS:
        out = redact(text)
        misses += [(s, out) for s in secrets if s in out]
        if f"[REDACTED:{kind}]" not in out:
            wrong_kind.append((kind, out))
    false_positives = []
    for text, keep in BENIGN:
        out = redact(text)
        for s in keep:
            if s not in out:
                removed = [(k, text[a:b]) for k, a, b in find_secrets(text)]
                false_positives.append((s, removed))

    print(f"secret corpus: {len(SECRETS)} texts, {n_secrets} secrets")
    print(f"misses: {len(misses)}")
    for s, out in misses:
        print(f"  MISS {s!r}\n       in {out!r}")
    print(f"placeholder kind differs from the corpus label: {len(wrong_kind)}")
    for kind, out in wrong_kind:
        print(f"  KIND expected {kind}: {out!r}")
    n_keep = sum(len(keep) for _, keep in BENIGN)
    print(f"benign corpus: {len(BENIGN)} texts, {n_keep} substrings that must survive")
    print(f"false positives: {len(false_positives)}")
    for s, removed in false_positives:
        print(f"  FP {s!r}\n     removed {removed!r}")

    clean = [text for text, _ in BENIGN]
    dirty = [text for text, _, _ in SECRETS]
    clean_events = events_of(clean)
    dirty_events = events_of(dirty)
    print("median microseconds per redact() call:")
    print(
        f"  secret-free texts   (mean {statistics.mean(map(len, clean)):.0f} chars): {median_us(clean):7.1f}"
    )
    print(
        f"  secret-bearing texts (mean {statistics.mean(map(len, dirty)):.0f} chars): {median_us(dirty):7.1f}"
    )
    print(f"  secret-free events   (2,000 chars):   {median_us(clean_events, 100):7.1f}")
    print(f"  secret-bearing events (2,000 chars):  {median_us(dirty_events, 100):7.1f}")
    return 1 if misses or false_positives else 0


if __name__ == "__main__":
    sys.exit(main())
