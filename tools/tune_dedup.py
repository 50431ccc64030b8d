"""Measure where Squirrel's near-duplicate threshold (`dedup_threshold`) should sit.

    python tools/tune_dedup.py [--sts DIR] [--min-precision 0.95] [--show-pairs]

A new memory whose cosine with a live memory of the same slot is >= dedup_threshold is merged
into it (see reos_memory/squirrel/commit.py), so a false "duplicate" loses information. This tool
embeds sentence pairs with the service's own embedder (the configured ONNX folder, loaded exactly
like reos_memory/app.py does) and reports precision, recall and F1 of "cosine >= t means
duplicate" for t = 0.70 .. 0.98 on:

  * STS-B dev + test (sts-dev.csv, sts-test.csv): duplicate = gold >= 4.5, non-duplicate = gold
    < 3.5 (pairs in between ignored); and again with duplicate = gold >= 4.0.
  * MEMORY_DUPLICATES / MEMORY_NON_DUPLICATES below: memory-style pairs, the non-duplicates hard on
    purpose (same topic, flipped polarity, another tool, another value or path).

The recommendation is the lowest threshold whose precision is >= --min-precision on both the
memory set and STS-B (4.5 vs < 3.5). With it (or, when there is none, at the lowest threshold
that satisfies STS-B alone and at the configured threshold) the tool lists the memory
non-duplicates that would be merged, first those that differ only by a negation or a tool name.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reos_memory.config import load_config  # noqa: E402
from reos_memory.embeddings.onnx import OnnxEmbedder  # noqa: E402

DEFAULT_STS = ROOT.parent / "shared" / "datasets" / "stsbenchmark"
THRESHOLDS = [round(0.70 + 0.01 * i, 2) for i in range(29)]  # 0.70 .. 0.98

# Paraphrases a coding assistant could write for the same lesson: merging these is right.
MEMORY_DUPLICATES: list[tuple[str, str]] = [
    (
        "Use httpx as the HTTP client in this project.",
        "The standard HTTP client for this project is httpx.",
    ),
    (
        "Use pnpm for package management in this project; never use npm.",
        "This project uses pnpm as its package manager; do not use npm.",
    ),
    ("Run the test suite with pytest -x.", "Tests are run with `pytest -x`."),
    (
        "Format Python code with ruff format before committing.",
        "Before each commit, run ruff format on the Python code.",
    ),
    (
        "The database migrations live in the migrations/ folder.",
        "Database migration files are kept under migrations/.",
    ),
    (
        "Do not commit directly to the main branch; open a pull request instead.",
        "Never push straight to main: changes go through a pull request.",
    ),
    (
        "The user prefers short answers without long explanations.",
        "Keep replies brief; the user does not want lengthy explanations.",
    ),
    (
        "Use type hints on all public functions.",
        "All public functions should have type annotations.",
    ),
    (
        "Logging goes through the structlog library, not print statements.",
        "Use structlog for logging instead of print().",
    ),
    (
        "The API server listens on port 8080 in development.",
        "In development the API server runs on port 8080.",
    ),
    (
        "Environment variables are loaded from the .env file at the repo root.",
        "The project reads its environment variables from .env in the repository root.",
    ),
    (
        "Use Pydantic v2 models for request validation.",
        "Request validation is done with Pydantic v2 models.",
    ),
    ("The frontend is built with Vite.", "Vite is the build tool for the frontend."),
    (
        "Always run mypy --strict before opening a pull request.",
        "Before a pull request, mypy must pass in strict mode.",
    ),
    ("Dates are stored in UTC in the database.", "The database keeps all timestamps in UTC."),
    (
        "The user wants commit messages in the imperative mood.",
        "Write commit messages in imperative mood, as the user prefers.",
    ),
    (
        "Docker images are built with the Makefile target `make image`.",
        "Build the Docker image by running `make image`.",
    ),
    ("Secrets must never be written to the logs.", "Never log secrets."),
    (
        "Use SQLAlchemy 2.0-style queries with select().",
        "Queries should use the SQLAlchemy 2.0 select() style.",
    ),
    (
        "The CI pipeline runs on GitHub Actions.",
        "Continuous integration for this repo is GitHub Actions.",
    ),
    (
        "Prefer pathlib over os.path for file paths.",
        "Use pathlib rather than os.path when handling paths.",
    ),
    (
        "Integration tests need a running Postgres started with docker compose up db.",
        "Start Postgres with `docker compose up db` before running the integration tests.",
    ),
    ("The user's preferred editor is Neovim.", "The user edits code in Neovim."),
    ("Use 4 spaces for indentation, never tabs.", "Indent with four spaces; tabs are not allowed."),
    (
        "The main entry point of the service is src/app/main.py.",
        "The service starts from src/app/main.py.",
    ),
    ("Keep line length at 100 characters.", "The maximum line length is 100 characters."),
    (
        "Use React Query for data fetching in the frontend.",
        "Frontend data fetching is done with React Query.",
    ),
    (
        "The staging environment is deployed from the develop branch.",
        "Deployments to staging come from the develop branch.",
    ),
    ("Run the linter with npm run lint.", "Linting is done via `npm run lint`."),
    ("Use f-strings instead of str.format.", "Prefer f-strings over str.format()."),
    (
        "The user asked not to add new dependencies without asking first.",
        "Do not introduce new dependencies without the user's approval.",
    ),
    ("The project targets Python 3.12.", "This codebase requires Python 3.12."),
    (
        "Translations are stored in locales/<lang>/messages.json.",
        "Translation strings live in locales/<lang>/messages.json.",
    ),
    (
        "Use Tailwind CSS classes instead of custom CSS files.",
        "Styling should be done with Tailwind utility classes rather than separate CSS files.",
    ),
    (
        "The flaky test test_upload_retry should be rerun before assuming a real failure.",
        "test_upload_retry is flaky; rerun it before treating a failure as real.",
    ),
    (
        "Feature flags are read from config/flags.yaml.",
        "config/flags.yaml holds the feature flags.",
    ),
    ("Use uv to manage the virtual environment.", "The virtual environment is managed with uv."),
    (
        "Public API changes must be noted in CHANGELOG.md.",
        "Record every public API change in CHANGELOG.md.",
    ),
    ("Always run gofmt on Go files before committing.", "Run gofmt on Go code before each commit."),
    (
        "Error messages shown to users must be translated.",
        "All user-facing error messages need translations.",
    ),
    (
        "The Redis cache is only used in production, not locally.",
        "Locally there is no Redis cache; it runs only in production.",
    ),
    ("Use snake_case for database column names.", "Database columns are named in snake_case."),
    ("Benchmarks are run with `cargo bench`.", "Run the benchmarks using cargo bench."),
    ("Avoid wildcard imports.", "Do not use `from module import *`."),
    (
        "The user works on macOS with an M2 laptop.",
        "The user's machine is an Apple Silicon M2 Mac.",
    ),
]

# Same topic, different content: merging these loses a memory. The kind says how they differ;
# DANGEROUS kinds differ only by a negation or a tool name (near-identical wording).
MEMORY_NON_DUPLICATES: list[tuple[str, str, str]] = [
    # polarity flipped
    (
        "negation",
        "Always run mypy before committing.",
        "Never run mypy before committing.",
    ),
    (
        "negation",
        "Commit directly to the main branch.",
        "Do not commit directly to the main branch.",
    ),
    (
        "negation",
        "The user wants emoji in commit messages.",
        "The user does not want emoji in commit messages.",
    ),
    (
        "negation",
        "Add type hints to test functions.",
        "Do not add type hints to test functions.",
    ),
    (
        "negation",
        "Use async database calls in request handlers.",
        "Do not use async database calls in request handlers.",
    ),
    (
        "negation",
        "Squash commits when merging pull requests.",
        "Never squash commits when merging pull requests.",
    ),
    (
        "negation",
        "The Redis cache is enabled in local development.",
        "The Redis cache is disabled in local development.",
    ),
    ("negation", "Tests may access the network.", "Tests must not access the network."),
    (
        "negation",
        "Use trailing commas in multi-line function calls.",
        "Avoid trailing commas in multi-line function calls.",
    ),
    (
        "negation",
        "It is fine to edit the generated files in src/gen/.",
        "Never edit the generated files in src/gen/.",
    ),
    ("negation", "Include docstrings on private helpers.", "Skip docstrings on private helpers."),
    # the same words, roles swapped
    ("swap", "Use pnpm, never npm.", "Use npm, never pnpm."),
    ("swap", "Use yarn, not npm.", "Use npm, not yarn."),
    (
        "swap",
        "Prefer tabs over spaces for indentation.",
        "Prefer spaces over tabs for indentation.",
    ),
    (
        "swap",
        "Use pytest instead of unittest for new tests.",
        "Use unittest instead of pytest for new tests.",
    ),
    # another tool of the same category
    (
        "tool",
        "Use httpx as the HTTP client in this project.",
        "Use requests as the HTTP client in this project.",
    ),
    (
        "tool",
        "Use pnpm for package management in this project.",
        "Use yarn for package management in this project.",
    ),
    ("tool", "Format Python code with black.", "Format Python code with ruff format."),
    ("tool", "Use Jest for frontend unit tests.", "Use Vitest for frontend unit tests."),
    ("tool", "The application database is PostgreSQL.", "The application database is MySQL."),
    ("tool", "Logging goes through structlog.", "Logging goes through loguru."),
    ("tool", "Use Poetry to manage dependencies.", "Use uv to manage dependencies."),
    ("tool", "The CI pipeline runs on GitHub Actions.", "The CI pipeline runs on GitLab CI."),
    ("tool", "The frontend is built with Vite.", "The frontend is built with webpack."),
    ("tool", "Use Redux for state management.", "Use Zustand for state management."),
    (
        "tool",
        "Secrets are stored in AWS Secrets Manager.",
        "Secrets are stored in HashiCorp Vault.",
    ),
    ("tool", "The user's preferred editor is Neovim.", "The user's preferred editor is VS Code."),
    # another flag, number or command
    ("value", "Run tests with pytest -x.", "Run tests with pytest -q --cov."),
    (
        "value",
        "The API server listens on port 8080 in development.",
        "The API server listens on port 3000 in development.",
    ),
    ("value", "The project targets Python 3.12.", "The project targets Python 3.9."),
    ("value", "Keep line length at 100 characters.", "Keep line length at 79 characters."),
    (
        "value",
        "Set the HTTP request timeout to 30 seconds.",
        "Set the HTTP request timeout to 5 seconds.",
    ),
    ("value", "Use Node 20 for this project.", "Use Node 18 for this project."),
    (
        "value",
        "Build the Docker image with make image.",
        "Build the Docker image with make release-image.",
    ),
    # another path
    (
        "path",
        "Database migrations live in the migrations/ folder.",
        "Database migrations live in the db/schema/ folder.",
    ),
    (
        "path",
        "The main entry point of the service is src/app/main.py.",
        "The main entry point of the service is cmd/server/main.go.",
    ),
    (
        "path",
        "Environment variables are loaded from .env.",
        "Environment variables are loaded from .env.local.",
    ),
    (
        "path",
        "Feature flags are read from config/flags.yaml.",
        "Feature flags are read from config/settings.toml.",
    ),
    ("path", "Unit tests live in tests/unit/.", "Unit tests live in src/__tests__/."),
    (
        "path",
        "Translations are stored in locales/<lang>/messages.json.",
        "Translations are stored in i18n/<lang>.po.",
    ),
    # same topic, another fact
    (
        "topic",
        "The staging environment is deployed from the develop branch.",
        "The production environment is deployed from the main branch.",
    ),
    (
        "topic",
        "The user prefers short answers without long explanations.",
        "The user prefers detailed answers with code examples.",
    ),
    (
        "topic",
        "Integration tests need a running Postgres.",
        "Integration tests need a running Redis.",
    ),
    (
        "topic",
        "Use snake_case for database column names.",
        "Use camelCase for JSON field names in API responses.",
    ),
    (
        "topic",
        "The flaky test test_upload_retry should be rerun before assuming a real failure.",
        "The flaky test test_download_resume should be rerun before assuming a real failure.",
    ),
    (
        "topic",
        "Dates are stored in UTC in the database.",
        "Dates are shown in the user's local time zone in the UI.",
    ),
    (
        "topic",
        "Public API changes must be noted in CHANGELOG.md.",
        "Public API changes must be approved by the platform team.",
    ),
    ("topic", "Run the unit tests before pushing.", "Run the end-to-end tests before pushing."),
]
DANGEROUS = ("negation", "swap", "tool")


@dataclass
class PairSet:
    """Cosines of labelled pairs (True = duplicate)."""

    name: str
    cos: np.ndarray
    dup: np.ndarray


@dataclass
class Score:
    precision: float | None  # None: nothing predicted as duplicate
    recall: float
    f1: float


def score(ps: PairSet, t: float) -> Score:
    pred = ps.cos >= t
    tp = int(np.sum(pred & ps.dup))
    fp = int(np.sum(pred & ~ps.dup))
    fn = int(np.sum(~pred & ps.dup))
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return Score(precision, recall, f1)


def cosines(embedder: OnnxEmbedder, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """Dot products of the embeddings, as commit.py computes them (the model emits unit vectors)."""
    texts = sorted({s for pair in pairs for s in pair})
    index = {s: i for i, s in enumerate(texts)}
    vecs = embedder.embed(texts)
    return np.array([float(vecs[index[a]] @ vecs[index[b]]) for a, b in pairs])


def load_sts(folder: Path) -> list[tuple[float, str, str]]:
    """(gold score, sentence1, sentence2) of the dev and test splits.

    Tab-separated: genre, file, year, id, score, sentence1, sentence2[, license fields]. Sentences
    may contain quote characters, so the lines are split on tabs, not parsed as CSV.
    """
    rows = []
    for name in ("sts-dev.csv", "sts-test.csv"):
        with (folder / name).open(encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                rows.append((float(fields[4]), fields[5], fields[6]))
    return rows


def sts_set(name: str, rows: list[tuple[float, str, str]], cos: np.ndarray, dup_min: float):
    keep = [i for i, (g, _, _) in enumerate(rows) if g >= dup_min or g < 3.5]
    dup = np.array([rows[i][0] >= dup_min for i in keep])
    return PairSet(name, cos[keep], dup)


def fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def print_table(sets: list[PairSet], danger: np.ndarray) -> None:
    """One row per threshold; the last column counts memory non-duplicates of DANGEROUS kinds
    that would be merged."""
    head = (
        "thr  "
        + "".join(f" | {s.name:^17}" for s in sets)
        + f" | neg/swap/tool merged (of {len(danger)})"
    )
    print(head)
    print(("     " + " | prec  rec   F1   " * len(sets)).rstrip())
    print("-" * len(head))
    for t in THRESHOLDS:
        cells = []
        for s in sets:
            sc = score(s, t)
            cells.append(f" | {fmt(sc.precision)} {sc.recall:.3f} {sc.f1:.3f}")
        print(f"{t:.2f} " + "".join(cells) + f" | {int(np.sum(danger >= t))}")


def lowest_precise(sets: Sequence[PairSet], min_precision: float) -> float | None:
    """The lowest threshold whose precision is >= min_precision on every set."""

    def ok(t: float) -> bool:
        return all((p := score(s, t).precision) is not None and p >= min_precision for s in sets)

    return next((t for t in THRESHOLDS if ok(t)), None)


def describe(cos: np.ndarray) -> str:
    return f"min {cos.min():.3f}  median {statistics.median(cos.tolist()):.3f}  max {cos.max():.3f}"


def print_scores(t: float, sets: Sequence[PairSet]) -> None:
    for s in sets:
        sc = score(s, t)
        print(f"  {s.name:<21} precision {fmt(sc.precision)}  recall {sc.recall:.3f}")


def print_merges(t: float, non_cos: np.ndarray) -> None:
    """The memory non-duplicates a threshold would merge, the dangerous kinds first."""
    above = [
        (float(c), k, a, b)
        for c, (k, a, b) in zip(non_cos, MEMORY_NON_DUPLICATES, strict=True)
        if c >= t
    ]
    dangerous = sorted((m for m in above if m[1] in DANGEROUS), reverse=True)
    others = sorted((m for m in above if m[1] not in DANGEROUS), reverse=True)
    total = sum(k in DANGEROUS for k, _, _ in MEMORY_NON_DUPLICATES)
    print(
        f"  dangerous merges: {len(dangerous)} of the {total} memory non-duplicates that differ "
        f"only by a negation or a tool name ({'/'.join(DANGEROUS)}) reach {t:.2f}"
    )
    for c, k, a, b in dangerous:
        print(f"    {c:.3f}  {k:<8} {a}  <->  {b}")
    print(f"  other wrong merges (value/path/topic): {len(others)}")
    for c, k, a, b in others:
        print(f"    {c:.3f}  {k:<8} {a}  <->  {b}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sts", type=Path, default=DEFAULT_STS, help="STS-B folder")
    ap.add_argument("--min-precision", type=float, default=0.95)
    ap.add_argument("--show-pairs", action="store_true", help="print every memory pair's cosine")
    args = ap.parse_args()
    min_p = args.min_precision

    config = load_config()
    # The same construction as reos_memory/app.py's _embedder_factory for embedder = "onnx".
    embedder = OnnxEmbedder(Path(config.model_dir), threads=config.onnx_threads or None)
    print(f"embedder: {embedder.model_id} ({embedder.dimensions} dims) from {config.model_dir}")
    print(f"configured dedup_threshold: {config.dedup_threshold}")

    rows = load_sts(args.sts)
    sts_cos = cosines(embedder, [(a, b) for _, a, b in rows])
    sts45 = sts_set("STS >=4.5 vs <3.5", rows, sts_cos, 4.5)
    sts40 = sts_set("STS >=4.0 vs <3.5", rows, sts_cos, 4.0)

    non_dup_pairs = [(a, b) for _, a, b in MEMORY_NON_DUPLICATES]
    mem_cos = cosines(embedder, MEMORY_DUPLICATES + non_dup_pairs)
    n_dup = len(MEMORY_DUPLICATES)
    memory = PairSet("memory pairs", mem_cos, np.arange(len(mem_cos)) < n_dup)
    kinds = np.array([k for k, _, _ in MEMORY_NON_DUPLICATES])
    non_cos = mem_cos[n_dup:]

    print()
    for s in (sts45, sts40, memory):
        print(f"{s.name}: {int(s.dup.sum())} duplicates, {int((~s.dup).sum())} non-duplicates")
    print("(prec '-': no pair reaches the threshold)\n")
    print_table([sts45, sts40, memory], non_cos[np.isin(kinds, DANGEROUS)])

    print("\ncosine of the memory pairs")
    print(f"  {'duplicates':<10} n={n_dup:<3} {describe(mem_cos[:n_dup])}")
    for kind in dict.fromkeys(kinds.tolist()):
        sel = non_cos[kinds == kind]
        print(f"  {kind:<10} n={len(sel):<3} {describe(sel)}")

    if args.show_pairs:
        print("\nmemory pairs, by cosine")
        labelled = [("dup", a, b) for a, b in MEMORY_DUPLICATES] + MEMORY_NON_DUPLICATES
        for i in np.argsort(-mem_cos):
            kind, a, b = labelled[i]
            print(f"  {mem_cos[i]:.3f}  {kind:<8} {a}  <->  {b}")

    # Squirrel merges only when cosine >= threshold AND the lexical check agrees
    from reos_memory.squirrel.memory.dedup import same_meaning

    all_mem = MEMORY_DUPLICATES + non_dup_pairs
    guard = np.array([same_meaning(a, b) for a, b in all_mem])
    sts_guard = np.array([same_meaning(a, b) for _, a, b in rows])
    g_memory = PairSet("memory pairs", np.where(guard, mem_cos, -1.0), memory.dup)
    g_sts45 = sts_set("STS >=4.5 vs <3.5", rows, np.where(sts_guard, sts_cos, -1.0), 4.5)
    g_sts40 = sts_set("STS >=4.0 vs <3.5", rows, np.where(sts_guard, sts_cos, -1.0), 4.0)
    print("\nwith the lexical check of reos_memory/squirrel/dedup.py (what commit.py does):")
    print_table([g_sts45, g_sts40, g_memory], g_memory.cos[n_dup:][np.isin(kinds, DANGEROUS)])
    g_best = lowest_precise([g_memory, g_sts45], min_p)
    if g_best is not None:
        print(f"\nrecommendation with the check: dedup_threshold = {g_best:.2f}")
        print_scores(g_best, [g_memory, g_sts45, g_sts40])
        print_merges(g_best, g_memory.cos[n_dup:])
        return 0

    print()
    best = lowest_precise([memory, sts45], min_p)
    if best is not None:
        print(
            f"recommendation: dedup_threshold = {best:.2f} (the lowest with precision >= {min_p} "
            f"on the memory pairs and on STS-B >=4.5 vs <3.5)"
        )
        print_scores(best, [memory, sts45, sts40])
        unstable = [
            t
            for t in THRESHOLDS
            if t > best
            and any((p := score(s, t).precision) is not None and p < min_p for s in (memory, sts45))
        ]
        if unstable:
            print(f"  note: precision falls below {min_p} again at {unstable}")
        print_merges(best, non_cos)
        return 0

    print(f"recommendation: none; no threshold in 0.70..0.98 has precision >= {min_p} on both sets")
    p_max, t_max = max(
        ((p, t) for t in THRESHOLDS if (p := score(memory, t).precision) is not None),
        default=(0.0, THRESHOLDS[0]),
    )
    print(f"  memory pairs: best precision {p_max:.3f}, at {t_max:.2f}")
    sts_only = lowest_precise([sts45], min_p)
    checks = [(config.dedup_threshold, "the configured threshold")]
    if sts_only is not None:
        checks.insert(0, (sts_only, f"the lowest with STS-B precision >= {min_p}"))
    for t, why in checks:
        print(f"\nat {t:.2f} ({why}):")
        print_scores(t, [memory, sts45, sts40])
        print_merges(t, non_cos)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
