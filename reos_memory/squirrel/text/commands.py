"""The project's own build, test, lint, format and type-check commands.

A command counts when the session ran it and it worked (or the user named it as the way to
check work), and when it is the project's check rather than a task detail: `go test ./...` and
`mise run test` are; `go test ./pkg -run TestX` and `mix test test/x_test.exs` are not (their
selectors are stripped where the runner has a general form: `mise run test -- ./redact/...` is
`mise run test`)."""

from __future__ import annotations

import re

PURPOSES = ("format", "lint", "typecheck", "build", "test")
WORDS = {
    "format": "format with",
    "lint": "lint with",
    "typecheck": "type-check with",
    "build": "build with",
    "test": "run the tests with",
}

_TASK_RUNNER = re.compile(
    r"^(?:mise run|make|just|task|npm run|pnpm(?: run)?|yarn(?: run)?|bun run|poetry run|uv run"
    r"|hatch run|nox -s|tox -e|rake|invoke|cargo make)\s+([\w:.\-]+)$"
)
_FIXED = [
    (
        re.compile(
            r"^(?:go fmt|gofmt|goimports|cargo fmt|ruff format|black|prettier|mix format|terraform fmt)\b"
        ),
        "format",
    ),
    (
        re.compile(
            r"^(?:golangci-lint run|go vet|cargo clippy|ruff check|ruff|flake8|pylint|eslint|mix credo|rubocop|shellcheck|biome (?:check|lint))\b"
        ),
        "lint",
    ),
    (re.compile(r"^(?:npx tsc|tsc|mypy|pyright|mix dialyzer)\b"), "typecheck"),
    (
        re.compile(
            r"^(?:go build|cargo build|mix compile|gradle build|\./gradlew build|mvn (?:package|compile)|dotnet build)\b"
        ),
        "build",
    ),
    (
        re.compile(
            r"^(?:go test|cargo test|mix test|pytest|python -m pytest|python3 -m pytest|npm test|pnpm test|yarn test|bun test|npx vitest|vitest|npx jest|jest|tox|nox|dotnet test|mvn test|gradle test|\./gradlew test|rspec|bundle exec rspec|phpunit)\b"
        ),
        "test",
    ),
]
_NAMED = [
    (re.compile(r"\b(?:fmt|format)\b"), "format"),
    (re.compile(r"\b(?:lint|check|credo|vet)\b"), "lint"),
    (re.compile(r"\b(?:typecheck|type-check|tsc|types)\b"), "typecheck"),
    (re.compile(r"\b(?:build|compile)\b"), "build"),
    (re.compile(r"\b(?:test|tests|spec|ci)\b"), "test"),
]
# arguments that select part of the project: a task detail, not the project's check
_SELECTOR = re.compile(
    r"(?:\s-(?:run|t|k|m|-grep|-filter|-testNamePattern|-match|-only|-tests)[=\s]"
    r"|\s--run\s|\s\S+(?:_test\.\w+|\.test\.\w+|\.spec\.\w+|_spec\.rb|\.exs|\.py)\b"
    r"|\s\./(?!\.\.\.)[\w./-]+|\s[\w-]+/[\w./-]+)"
)
_NOISE_FLAGS = re.compile(
    r"\s(?:-v|-count=\d+|-race|-x|-q|--verbose|-vv|--no-cache|-p\s\d+|-timeout[=\s]\S+)(?=\s|$)"
)
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
# environment that only changes how output looks: dropped from the general form, while the rest
# (PYTHONPATH=., GOFLAGS=-mod=mod) is part of how the check runs in this project
_COSMETIC_ENV = re.compile(
    r"^(?:CI|NO_COLOR|FORCE_COLOR|CLICOLOR(?:_FORCE)?|TERM|COLUMNS|LINES|PAGER|GIT_PAGER"
    r"|PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PY_COLORS|npm_config_loglevel)=\S*$"
)
_GENERAL_GO = re.compile(r"^go (test|build|vet)(?: \./\.\.\.)?$")


def split(command: str) -> list[str]:
    """The commands of one shell line: `cd x && a && b | head` gives a and b."""
    out = []
    for part in re.split(r"\s*(?:&&|;|\|\||\n)\s*", command):
        part = re.sub(r"\s*\d?>&\d\s*", " ", part)
        part = part.split(" | ", 1)[0].split("|", 1)[0] if "|" in part else part
        part = re.sub(r"\s*[12]?>\s*/dev/null", "", part)
        part = " ".join(part.split())
        if part and not part.startswith(("cd ", "echo ", "export ", "sleep ", "cat ", "source ")):
            out.append(part)
    return out


def classify(command: str) -> tuple[str, str] | None:
    """(purpose, the command in its general form), or None when it is not a project check."""
    c = command.strip()
    env = _ENV.match(c)
    kept = ""
    if env:
        kept = " ".join(v for v in env.group(0).split() if not _COSMETIC_ENV.match(v))
        c = c[env.end() :]
    c = (
        c.split(" -- ", 1)[0]
        if re.match(r"^(?:mise run|npm run|pnpm|yarn|bun run|just|make)\b", c)
        else c
    )
    c = _NOISE_FLAGS.sub("", f" {c}").strip()
    m = _TASK_RUNNER.match(c)
    if m:
        target = m.group(1)
        for pat, purpose in _NAMED:
            if pat.search(target.replace(":", " ").replace("-", " ")):
                return purpose, f"{kept} {c}".strip()
        return None
    for pat, purpose in _FIXED:
        if pat.match(c):
            args = re.sub(r"^python3? -m ", "", c)  # (`-m` here names a module, not markers)
            if _SELECTOR.search(f" {args} ".replace(" ./... ", " ")):
                return None
            g = _GENERAL_GO.match(c)
            if c.startswith("go ") and not g:
                return None
            return purpose, f"{kept} {c}".strip()
    return None


def bare(command: str) -> str:
    """A command without the environment assignments it opens with: `PYTHONPATH=. pytest` and
    `pytest` are variants of one command."""
    return _ENV.sub("", command.strip())


def text_of(found: dict[str, list[str]]) -> str:
    """The memory: each purpose with its commands, in a fixed order."""
    parts = []
    for purpose in PURPOSES:
        cmds = found.get(purpose)
        if cmds:
            parts.append(f"{WORDS[purpose]} " + ", ".join(f"`{c}`" for c in cmds[:3]))
    return "Project checks: " + "; ".join(parts) + "."


_BACKTICKED = re.compile(r"`([^`\n]{3,80})`")


def parse_text(text: str) -> dict[str, list[str]]:
    """The commands of a memory written by `text_of` (to merge a later session's into it)."""
    found: dict[str, list[str]] = {}
    for cmd in _BACKTICKED.findall(text):
        hit = classify(cmd)
        if hit:
            found.setdefault(hit[0], []).append(hit[1])
    return found
