"""Run the secret-redaction corpus and print misses, false positives and speed.

    python tools/eval_redaction.py

Misses are secrets of harness/secret_corpus.py SECRETS that survive redact() (also after whitespace
is collapsed, as commit.py and service.py do before redacting); false positives are BENIGN
substrings that do not survive, listed with what was removed. As a second false-positive check on
real text, every finding in this repository's own source and README is listed (there should be
none). Speed: median time of one redact() call over the corpus texts, over 2,000-character events
joined from them (dense with secret-like names, a worst case), and over 200- and 2,000-character
slices of the repository's source and README (ordinary secret-free code and prose).
"""

from __future__ import annotations

import functools
import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.secret_corpus import BENIGN, SECRETS  # noqa: E402
from reos_memory.squirrel.redaction import find_secrets, redact  # noqa: E402


def median_us(texts: list[str], rounds: int = 200) -> float:
    """Median over `texts` of the microseconds one redact() call takes on that text.

    Each text is timed in 5 batches of rounds/5 calls and the fastest batch counts, so a busy
    machine inflates the figure less."""
    per_text: list[float] = []
    batch = max(1, rounds // 5)
    for text in texts:
        redact(text)  # warm the name cache as a long-running service would have it
        best = min(timeit.repeat(functools.partial(redact, text), number=batch, repeat=5))
        per_text.append(best / batch * 1e6)
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


def repository_texts() -> list[str]:
    """Secret-free real text: the package source and README (the redaction module excluded)."""
    files = [*sorted((ROOT / "reos_memory").rglob("*.py")), ROOT / "README.md"]
    own = ("secret_formats.py", "eval_secrets.py")  # corpora and crafted lines
    return [
        f.read_text(encoding="utf-8")
        for f in files
        if f.is_file() and "redaction" not in f.parts and f.name not in own
    ]


def slices(texts: list[str], size: int, limit: int = 150) -> list[str]:
    """Every other `size`-character slice of `texts`, at most `limit` of them."""
    out = [t[i : i + size] for t in texts for i in range(0, len(t) - size, 2 * size)]
    return out[:: max(1, len(out) // limit)][:limit]


def main() -> int:
    n_secrets = sum(len(secrets) for _, secrets, _ in SECRETS)
    misses = []
    wrong_kind = []
    for text, secrets, kind in SECRETS:
        out = redact(text)
        misses += [(s, out) for s in secrets if s in out]
        collapsed = redact(" ".join(text.split()))
        misses += [(s, collapsed) for s in secrets if s in collapsed]
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

    repo = repository_texts()
    repo_findings = [(kind, text[a:b]) for text in repo for kind, a, b in find_secrets(text)]
    n_chars = sum(map(len, repo))
    print(f"repository text ({n_chars:,} chars): findings {len(repo_findings)}")
    for kind, found in repo_findings:
        print(f"  FOUND {kind}: {found!r}")

    clean = [text for text, _ in BENIGN]
    dirty = [text for text, _, _ in SECRETS]
    print("median microseconds per redact() call:")
    rows = [
        ("corpus, secret-free texts", clean, 200),
        ("corpus, secret-bearing texts", dirty, 200),
        ("corpus, secret-free 2,000-char events", events_of(clean), 50),
        ("corpus, secret-bearing 2,000-char events", events_of(dirty), 50),
        ("repository, 200-char slices", slices(repo, 200), 200),
        ("repository, 2,000-char slices", slices(repo, 2000), 50),
    ]
    for label, texts, rounds in rows:
        us = median_us(texts, rounds)
        mean_len = statistics.mean(map(len, texts))
        print(f"  {label:42s} {us:7.1f}  ({len(texts)} texts, mean {mean_len:,.0f} chars)")
    # A yardstick for comparing machines (and noticing a busy one).
    baseline = min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000 * 1e6
    print(f"  (this machine: sum(range(1000)) takes {baseline:.1f} us)")
    return 1 if misses or false_positives else 0


if __name__ == "__main__":
    sys.exit(main())
