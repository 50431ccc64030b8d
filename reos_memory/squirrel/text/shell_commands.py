"""A shell command as an agent ran it: its canonical form, and whether it runs a test suite.

* ``normalize_command`` drops what changes only how the output is shown (``2>&1``, a trailing
  pipe into ``tail``/``head``/``less``/``grep``/``sort``/``tee``..., a trailing ``; echo $?``),
  a leading ``cd X &&``, ``VAR=value``, ``env``, ``time`` and ``timeout N``, and unwraps
  ``bash -lc '...'``. It keeps what changes what runs: ``sudo``, ``uv run``, redirections to files.

Pure and cheap, like every rule file here: ingest runs these on every event.
"""

from __future__ import annotations

import re

_SHELL_WRAPPER = re.compile(
    r"^(?:\S*/)?(?:ba|z|da|k)?sh\s+(?:-\w+\s+)*-\w*c\w*\s+(?P<body>.+)$", re.S
)
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'")
_SEGMENT = re.compile(r"&&|\|\||[;|&\n()]")
_WHITESPACE = re.compile(r"\s+")
_LEADING = re.compile(
    r"^(?:"
    r"cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)\s*"
    r"|pushd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)\s*"
    r"|(?:export\s+)?[A-Za-z_]\w*=(?:\"[^\"]*\"|'[^']*'|\S*)\s*(?:&&|;)?\s+"
    r"|env\s+(?:-\S+\s+)*"
    r"|time\s+"
    r"|timeout\s+(?:-\S+\s+)*\d+[smhd]?\s+"
    r"|nice\s+(?:-n\s*-?\d+\s+)?"
    r")"
)
_REDIRECT = re.compile(r"\s+(?:2>&1|[12]?>\s*/dev/null|&>\s*/dev/null)(?=\s|$|[|;&])")
_TRAILING = re.compile(
    r"(?:"
    r"\s*\|\s*(?:head|tail|less|more|cat|tee|grep|egrep|fgrep|rg|wc|sort|uniq|cut|awk|sed|column)\b"
    r"(?:[^|;&'\"]|'[^']*'|\"[^\"]*\")*"
    r"|\s*(?:;|&&|\|\|)\s*echo\b(?:[^|;&'\"]|'[^']*'|\"[^\"]*\")*"
    r"|\s*[;&]"
    r")$"
)


def _unwrap(command: str) -> str:
    text = command.strip()
    match = _SHELL_WRAPPER.match(text)
    if match:
        text = match.group("body").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1].strip()
    return text


def _strip_leading(text: str) -> str:
    while True:
        match = _LEADING.match(text)
        if not match or match.end() >= len(text):
            return text
        text = text[match.end() :]


def normalize_command(command: str) -> str:
    """Return a canonical form of a shell command, equal for reruns of the same command."""
    text = _WHITESPACE.sub(" ", _unwrap(command)).strip()
    text = _strip_leading(text)
    text = text.replace("|&", "|")
    text = _REDIRECT.sub("", text)
    while True:
        match = _TRAILING.search(text)
        if not match or match.start() == 0:
            break
        text = text[: match.start()].rstrip()
    return text or command.strip()


_RUNNER_PREFIX = (
    r"(?:(?:[A-Za-z_]\w*=\S*|env|time|nice|command|exec|sudo|timeout\s+(?:-\S+\s+)*\d+\S*"
    r"|(?:uv|poetry|pipenv|pdm|hatch|rye)\s+run(?:\s+--?[\w-]+(?:=\S+)?)*"
    r"|bundle\s+exec|npx(?:\s+--?[\w-]+)*|pnpx|bunx|(?:pnpm|yarn)\s+(?:exec|dlx)"
    r"|(?:npm|pnpm|yarn|bun)\s+run|pnpm|yarn"
    r"|xvfb-run(?:\s+-\S+)*|dotenv(?:\s+-\S+)*\s+--)\s+)*"
)
_RUNNER = re.compile(
    _RUNNER_PREFIX + r"(?:"
    r"(?:\S*/)?(?:py\.?test|pytest-\w+)(?=\s|$)"
    r"|(?:\S*/)?python[\d.]*(?:\s+-(?!m\b)[A-Za-z]+(?:\s+[^-\s]\S*)?)*\s+-m\s+"
    r"(?:pytest|unittest|nose2?|tox|nox|ward)\b"
    r"|(?:\S*/)?python[\d.]*\s+(?:\S*/)?manage\.py\s+test\b"
    r"|(?:\S*/)?(?:tox|nox)(?=\s|$)"
    r"|(?:npm|pnpm|yarn|bun)(?:\s+-[-\w]+(?:[= ]\S+)?)*\s+(?:run\s+)?(?:test|tests|t)(?::\S*)?"
    r"(?=\s|$)"
    r"|(?:\S*/)?(?:jest|vitest|mocha|ava|karma)(?=\s|$)"
    r"|(?:playwright|deno|swift|flutter|dart|stack|cabal|lein|rails|dotnet|bazel|bazelisk)\s+test\b"
    r"|node\s+(?:--\S+\s+)*--test\b"
    r"|go\s+test\b|gotestsum\b"
    r"|cargo(?:\s+\+\S+)?\s+(?:test|nextest|t)\b"
    r"|mix\s+test\b"
    r"|make\b[^\n;&|]*?\s(?:tests?|check)(?:[-_:]\w+)?(?=\s|$)"
    r"|(?:\S*/)?(?:rspec|phpunit|pest|ctest)(?=\s|$)"
    r"|rake\s+(?:test|spec)\b"
    r"|(?:\S*/)?mvnw?\b[^\n;&|]*?\s(?:\S+:)?(?:test|verify)(?=\s|$)"
    r"|(?:\S*/)?gradlew?\b[^\n;&|]*?\s(?:\S*:)?(?:test|check)(?=\s|$)"
    r"|sbt\b[^\n;&|]*?\s\"?test\b"
    r"|zig\s+build\s+test\b"
    r"|\S*/run[-_]tests?(?:\.\w+)?(?=\s|$)|\S*/tests?\.sh(?=\s|$)"
    r")"
)
# Commands that only show text: their output may quote a test summary without being a test run.
_VIEWER = re.compile(
    r"^(?:sudo\s+)?(?:cat|bat|less|more|head|tail|sed|awk|grep|egrep|fgrep|rg|ag|ack|echo|printf|ls"
    r"|find|fd|tree|nl|wc|jq|diff|file|stat|git\s+(?:-\S+\s+)*(?:diff|show|log|blame|grep|status))"
    r"(?=\s|$)"
)


def is_test_command(command: str | None) -> bool:
    """Whether a shell command runs a test suite (pytest, jest, go test, cargo test, mix test)."""
    if not command:
        return False
    # quoted text is data (a commit message, an echo), never the program that runs
    text = _QUOTED.sub('""', _unwrap(command))
    return any(_RUNNER.match(segment.strip()) for segment in _SEGMENT.split(text))


def is_viewer(command: str) -> bool:
    """Whether a command only shows text (cat, grep, git diff ...): no program of the project runs."""
    return bool(_VIEWER.match(_strip_leading(_unwrap(command))))


# Commands that destroy what cannot be had back by running them again: files, branches, history,
# volumes, databases, cloud resources.
_DESTRUCTIVE = re.compile(
    r"^(?:sudo\s+)?(?:rm\s+(?:-\w*[rf]\w*\s+)+|rmdir\s|shred\s|dd\s.*\bof="
    r"|git\s+(?:-\S+\s+)*(?:reset\s+--hard|clean\s+-\w*f|push\s+(?:.*\s)?(?:--force\S*|-f)(?=\s|$)"
    r"|branch\s+-D|checkout\s+--\s|restore\s|stash\s+(?:drop|clear)|filter-branch|rebase\s)"
    r"|docker(?:-compose|\s+compose)?\s+(?:system\s+prune|volume\s+(?:rm|prune)|image\s+prune"
    r"|container\s+prune|rm\s|rmi\s|down\s+(?:.*\s)?-v\b)"
    r"|kubectl\s+delete\s|helm\s+(?:uninstall|delete)\s|terraform\s+destroy|pulumi\s+destroy"
    r"|dropdb\s|(?:psql|mysql|sqlite3)\s.*\b(?:drop|truncate|delete\s+from)\b"
    r"|aws\s+s3\s+(?:rm|rb)\s|gsutil\s+(?:-m\s+)?rm\s|npm\s+unpublish)",
    re.IGNORECASE,
)


def is_destructive(command: str) -> bool:
    """Whether one of a shell line's commands destroys what re-running cannot bring back."""
    text = _unwrap(command)
    return any(_DESTRUCTIVE.match(_strip_leading(seg.strip())) for seg in _SEGMENT.split(text))
