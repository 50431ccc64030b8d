"""Rule-based signals over a coding-agent session: test runs, errors, commands and user cues.

Every function here is pure and cheap: regexes are compiled at import and long texts are cut to a
window first (the tail of a tool output, the head of a user message), because ingest runs these on
every event and must keep up with thousands of events a second.

Decisions where the rules could go either way:

* A test run that ran nothing (pytest ``no tests ran``, ``0 tests, 0 failures``, ``Ran 0 tests``,
  ``[no tests to run]``, ``No tests found``) has no outcome: ``test_outcome`` returns None, whatever
  the exit code. It neither proves a fix nor shows a failure.
* The output of a known command is read only when the command runs tests or may wrap a runner
  (it mentions test, spec, check, verify or ci): ``cat pytest.log`` or ``python report.py`` that
  print a summary are no test runs. The cost: a pre-commit hook's pytest run inside the output
  of ``git commit`` is missed. With no command (a background task's output) the output decides.
* A summary in the output wins over the exit code (``npm test && npm run lint`` may exit 1 after
  the tests passed). The exit code decides only when a test command printed no summary, with one
  exception: a passing tail, a non-zero exit and an output longer than the scanned tail mean that an
  earlier part failed (``go test ./...`` prints one line per package and no total).
* ``looks_like_error``: a non-zero exit code is an error, except exit 1 with no output (``grep -q``,
  ``test -f``: a "no"). Tracebacks, compiler errors, ``npm ERR!``, ``fatal:``, ``panic:`` count
  even with exit code 0 (``cmd | tail`` hides the exit code of ``cmd``); weaker shapes (a bare
  ``FooError: ...`` line, ``ERROR``, ``FAILED``, "No such file or directory") only when no exit
  code is known.
* ``normalize_command`` drops what changes only how the output is shown (``2>&1``, a trailing
  pipe into ``tail``/``head``/``less``/``grep``/``sort``/``tee``..., a trailing ``; echo $?``),
  a leading ``cd X &&``, ``VAR=value``, ``env``, ``time`` and ``timeout N``, and unwraps
  ``bash -lc '...'``. It keeps what changes what runs: ``sudo``, ``uv run``, redirections to files.
* ``is_new_task`` wins over ``is_continuation`` ("ok, now let's ..." is a new task), and "next"
  alone is a new task ("next step" is not). "can you also look at X" is neither: the caller's
  topic overlap decides.
* Cues in a user message are looked for in its first 60 and last 20 words, outside code blocks:
  the middle of a long message is its content, and a pasted log shouts without anger.
* Frustration in a message that also says it works is capped at "mild" ("holy shit, it works").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Final, Literal

__all__ = [
    "FRUSTRATION_ORDER",
    "Frustration",
    "Outcome",
    "combine_frustration",
    "content_words",
    "error_line",
    "frustration",
    "is_continuation",
    "is_correction",
    "is_new_task",
    "is_test_command",
    "looks_like_error",
    "normalize_command",
    "success_cue",
    "test_outcome",
    "topic_overlap",
]

Outcome = Literal["passed", "failed"]
Frustration = Literal["none", "mild", "moderate", "severe"]

FRUSTRATION_ORDER: Final[tuple[Frustration, ...]] = ("none", "mild", "moderate", "severe")

_TAIL = 4096  # test summaries and the final exception sit at the end of an output
_HEAD = 2048  # compiler errors sit at the start
_MESSAGE_CAP = 2000  # cue words are in the prose a user typed, not in a pasted log
# Cues open or close a message ("no, ...", "... wtf"); the middle of a long one is its content.
_HEAD_WORDS, _TAIL_WORDS, _HEAD_CHARS, _TAIL_CHARS = 60, 20, 400, 200
_ERROR_LINE_CAP = 200

_M = re.MULTILINE
_I = re.IGNORECASE

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # progress bars redraw with a bare \r; the last state of each line is what a human saw
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _tail(text: str, size: int = _TAIL) -> str:
    """The last `size` characters from a line start on, cleaned, with a leading newline."""
    if len(text) <= size:
        return "\n" + _clean(text)
    cut = text[-size:]
    newline = cut.find("\n")
    # the first line is cut mid-way; a fragment could pose as a line start
    return "\n" + _clean(cut[newline + 1 :] if newline >= 0 else cut)


def _head_and_tail(text: str) -> str:
    if len(text) <= _HEAD + _TAIL:
        return "\n" + _clean(text)
    head = text[:_HEAD]
    newline = head.rfind("\n")
    return "\n" + (_clean(head[:newline]) if newline >= 0 else "") + _tail(text)


# ---------------------------------------------------------------------------------------------
# Commands

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


# A wrapper that is no known runner may still run the suite (`./scripts/ci.sh`, `hatch run test`).
_MAY_RUN_TESTS = re.compile(r"test|spec|check|verify|\bci\b", re.IGNORECASE)


def _is_viewer(command: str) -> bool:
    return bool(_VIEWER.match(_strip_leading(_unwrap(command))))


# ---------------------------------------------------------------------------------------------
# Test outcomes
#
# Output patterns are line-anchored with a leading "\n" (searched in "\n" + window) rather than
# with ^ and re.MULTILINE: a literal first character lets the regex engine jump from newline to
# newline instead of trying every alternative at every character.

_PASSED, _FAILED, _EMPTY = "passed", "failed", "empty"

_COUNT = re.compile(r"(\d+) ([a-z]+(?: out)?)")
_PYTEST = re.compile(
    r"\n(?:=+ |!+ )?(?P<body>(?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed"
    r"|warnings?|rerun|subtests? passed|subtests? failed)(?:, )?)+"
    r"|no tests ran|\d+ tests? collected)"
    r"(?: in [\d.]+s(?: \([\d:.]+\))?)(?: =+| !+)?[ \t]*$",
    _M,
)
_JEST = re.compile(r"\nTest(?:s| Suites):[ \t]+(?P<body>.*?\d+ total)[ \t]*$", _M)
_VITEST = re.compile(
    r"\n[ \t]*(?:Test Files|Tests)[ \t]{2,}(?P<body>\d+ \w+(?: \| \d+ \w+)*)[ \t]+\(\d+\)[ \t]*$",
    _M,
)
_MOCHA = re.compile(r"\n[ \t]+(?P<n>\d+) (?P<kind>passing|failing|pending)\b", _M)
_BUN = re.compile(r"\n[ \t]*(?P<n>\d+) (?P<kind>pass|fail)[ \t]*$", _M)
_GO = re.compile(
    r"\n(?:(?P<ok>ok[ \t]+\S+[ \t]+(?:[\d.]+s|\(cached\))(?P<rest>.*))"
    r"|(?P<fail>FAIL(?:[ \t].*)?|--- FAIL: .*)"
    r"|(?P<pass>PASS(?:[ \t].*)?|--- PASS: .*)"
    r"|(?P<none>\?[ \t]+\S+[ \t]+\[no test files\]))$",
    _M,
)
_CARGO = re.compile(
    r"\ntest result: (?P<status>ok|FAILED)\. (?P<passed>\d+) passed; (?P<failed>\d+)", _M
)
_NEXTEST = re.compile(r"\n[ \t]*Summary \[[^\]\n]*\][ \t]+(?P<body>\d+ tests? run: .*)$", _M)
_CARGO_FAILED = re.compile(r"\nerror: (?:test failed|\d+ targets? failed)", _M)
_EXUNIT = re.compile(
    r"\n(?P<body>(?:\d+ (?:doctests?|propert(?:y|ies)|tests?|examples?|features?), )+"
    r"\d+ failures?.*)$",
    _M,
)
_UNITTEST_RAN = re.compile(r"\nRan (?P<n>\d+) tests? in [\d.]+s[ \t]*$", _M)
_UNITTEST_RESULT = re.compile(r"\n(?P<word>OK|FAILED|NO TESTS RAN)\b", _M)
_PHPUNIT = re.compile(
    r"\n(?:(?P<ok>OK \(\d+ tests?, \d+ assertions?\))|(?P<bad>FAILURES!|ERRORS!)"
    r"|Tests: \d+, Assertions: \d+, (?:Errors|Failures): (?P<n>\d+))",
    _M,
)
_DOTNET = re.compile(
    r"\n[ \t]*(?:(?P<word>Passed|Failed)![ \t]+-[ \t]+Failed:[ \t]+(?P<failed>\d+)"
    r"|Test Run (?P<run>Successful|Failed)\.)",
    _M,
)
_MAVEN = re.compile(
    r"\n(?:\[\w+\] )?Tests run: (?P<run>\d+), Failures: (?P<failures>\d+), Errors: (?P<errors>\d+)",
    _M,
)
_GRADLE = re.compile(r"\n(?P<run>\d+) tests? completed, (?P<failed>\d+) failed", _M)
_TOX_NOX = re.compile(
    r"\n[ \t]*(?:(?P<ok>congratulations :\)|nox > Session \S+ was successful)"
    r"|(?P<bad>evaluation failed :\(|ERROR: +\S+: commands failed|nox > Session \S+ failed))",
    _M,
)
_NOTHING_FOUND = re.compile(
    r"\n(?:No tests found|No test files found|There are no tests to run)", _M
)
_BACKGROUND = "Command running in background"


def _counts(body: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(body):
        key = word.rstrip("s") if word.endswith(("errors", "warnings", "failures")) else word
        counts[key] = counts.get(key, 0) + int(number)
    return counts


def _verdict(failed: int, passed: int) -> str:
    if failed:
        return _FAILED
    return _PASSED if passed else _EMPTY


def _pytest(match: re.Match[str]) -> str:
    counts = _counts(match.group("body"))
    failed = counts.get("failed", 0) + counts.get("error", 0)
    return _verdict(failed, counts.get("passed", 0) + counts.get("xpassed", 0))


def _by_words(match: re.Match[str]) -> str:
    counts = _counts(match.group("body"))
    return _verdict(counts.get("failed", 0), counts.get("passed", 0))


def _nextest(match: re.Match[str]) -> str:
    counts = _counts(match.group("body"))
    failed = counts.get("failed", 0) + counts.get("timed out", 0)
    return _verdict(failed, counts.get("passed", 0))


def _mocha(match: re.Match[str]) -> str:
    n = int(match.group("n"))
    if match.group("kind") == "failing":
        return _FAILED if n else _EMPTY
    return _PASSED if match.group("kind") == "passing" and n else _EMPTY


def _bun(match: re.Match[str]) -> str:
    n = int(match.group("n"))
    if match.group("kind") == "fail":
        return _FAILED if n else _EMPTY
    return _PASSED if n else _EMPTY


def _go(match: re.Match[str]) -> str:
    if match.group("ok"):
        return _EMPTY if "[no tests to run]" in match.group("rest") else _PASSED
    if match.group("fail"):
        return _FAILED
    return _PASSED if match.group("pass") else _EMPTY


def _cargo(match: re.Match[str]) -> str:
    if match.group("status") == "FAILED":
        return _FAILED
    return _verdict(int(match.group("failed")), int(match.group("passed")))


def _exunit(match: re.Match[str]) -> str:
    counts = _counts(match.group("body"))
    failed = counts.get("failure", 0) + counts.get("invalid", 0)
    ran = sum(
        n
        for kind, n in counts.items()
        if kind.startswith(("test", "doctest", "propert", "example"))
    )
    return _verdict(failed, ran + counts.get("feature", 0) + counts.get("features", 0))


def _phpunit(match: re.Match[str]) -> str:
    if match.group("ok"):
        return _PASSED
    if match.group("bad"):
        return _FAILED
    return _FAILED if int(match.group("n")) else _EMPTY


def _dotnet(match: re.Match[str]) -> str:
    if match.group("word"):
        failed = match.group("word") == "Failed" or int(match.group("failed")) > 0
        return _FAILED if failed else _PASSED
    return _PASSED if match.group("run") == "Successful" else _FAILED


def _maven(match: re.Match[str]) -> str:
    failed = int(match.group("failures")) + int(match.group("errors"))
    return _verdict(failed, int(match.group("run")))


def _gradle(match: re.Match[str]) -> str:
    return _verdict(int(match.group("failed")), int(match.group("run")))


def _tox_nox(match: re.Match[str]) -> str:
    return _PASSED if match.group("ok") else _FAILED


def _nothing(match: re.Match[str]) -> str:
    return _EMPTY


def _always_failed(match: re.Match[str]) -> str:
    return _FAILED


_Judge = Callable[[re.Match[str]], str]
_SUMMARIES: Final[tuple[tuple[re.Pattern[str], _Judge], ...]] = (
    (_PYTEST, _pytest),
    (_JEST, _by_words),
    (_VITEST, _by_words),
    (_MOCHA, _mocha),
    (_BUN, _bun),
    (_GO, _go),
    (_CARGO, _cargo),
    (_NEXTEST, _nextest),
    (_CARGO_FAILED, _always_failed),
    (_EXUNIT, _exunit),
    (_PHPUNIT, _phpunit),
    (_DOTNET, _dotnet),
    (_MAVEN, _maven),
    (_GRADLE, _gradle),
    (_TOX_NOX, _tox_nox),
    (_NOTHING_FOUND, _nothing),
)


# The line starts a summary line can have. One pass finds the few candidate lines, then the
# runners' own patterns read them. Every alternative opens with a literal character, which the
# regex engine rejects in one step; the full patterns tried on every line cost ~5x more.
_CANDIDATE = re.compile(
    r"\n(?:[ \t]+(?:Test|\d+ [pf]|Summary|Passed!|Failed!|congratulations|evaluation|ERROR)"
    r"|=|!|\d+ [a-z]|Test|test result|ok[ \t]|FAIL|PASS|--- |\?[ \t]|error: |OK|ERRORS!"
    r"|Passed!|Failed!|\[|congratulations|evaluation|ERROR: |nox > |No test|There are no)"
)


def _judge_line(text: str, start: int) -> str | None:
    for pattern, judge in _SUMMARIES:
        match = pattern.match(text, start)
        if match is not None:
            return judge(match)
    return None


def _summary(text: str) -> str | None:
    seen: set[str] = set()
    for candidate in _CANDIDATE.finditer(text):
        verdict = _judge_line(text, candidate.start())
        if verdict == _FAILED:
            return _FAILED
        if verdict is not None:
            seen.add(verdict)
    if "Ran " in text:
        ran = _UNITTEST_RAN.search(text)
        if ran:
            result = _UNITTEST_RESULT.search(text, ran.end())
            if result and result.group("word") == "FAILED":
                return _FAILED
            if result and result.group("word") == "OK" and int(ran.group("n")):
                seen.add(_PASSED)
            else:
                seen.add(_EMPTY)
    if _PASSED in seen:
        return _PASSED
    return _EMPTY if seen else None


def test_outcome(command: str | None, output: str, exit_code: int | None) -> Outcome | None:
    """Whether a test run passed or failed, from its summary lines or exit code; None if no run."""
    testish = is_test_command(command)
    if command and not testish and (_is_viewer(command) or not _MAY_RUN_TESTS.search(command)):
        return None
    if output.startswith(_BACKGROUND):
        return None  # Claude Code started it in the background; the result comes later
    verdict = _summary(_tail(output))
    if verdict == _FAILED:
        return "failed"
    if verdict == _PASSED:
        if testish and exit_code and len(output) > _TAIL:
            return "failed"
        return "passed"
    if verdict == _EMPTY or not testish:
        return None
    if exit_code is not None:
        return "passed" if exit_code == 0 else "failed"
    return "failed" if looks_like_error(output) else None


# Pytest collects module-level callables named test_*, and test modules import this one.
test_outcome.__test__ = False  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# Errors

# Seen even when the command exited 0: a pipe (`cmd | tail`) hides the exit code of `cmd`.
# Each alternative opens with a literal character, which the regex engine rejects in one step.
_STRONG_ERROR = re.compile(
    r"\n(?:Traceback \(most recent call last\):"
    r"|error(?:(?:\[\w+\]| TS\d+)?: \S+ \S| Command failed)"
    r"|fatal(?::| error:) "
    r"|npm (?:ERR!|error) |ERR_PNPM_| ERR_PNPM_| ELIFECYCLE "
    r"|panic: |goroutine \d+ \[running\]:|thread '[^'\n]*' panicked at "
    r"|\*\* \([\w.]+\) |     \*\* \([\w.]+\) "
    r"|Segmentation fault|Killed[ \t]*$"
    r"|make(?:\[\d+\])?: \*\*\* "
    r"|Exception in thread \""
    r"|Exit code [1-9]\d*[ \t]*$"
    r"|Uncaught [A-Z]\w*"
    r"|    at (?:[^\n(]*\()?[^\s()]+:\d+:\d+\)?[ \t]*$"
    r")",
    _M,
)
_STRONG_MARKERS = ("<tool_use_error>", "(core dumped)", "command not found")
# A compiler error behind a file location ("src/a.c:3:5: error: ...", "a.ts(6,33): error TS2307:")
# is looked for only when its marker occurs: scanning a path at every line start is the slow part.
_LOCATED_ERROR = re.compile(
    r"\n\S+?(?::\d+(?::\d+)?:?[ \t]*(?:-[ \t]*)?|\(\d+,\d+\): )"
    r"(?:fatal )?error(?:\[\w+\]| [A-Z]+\d+)?: \S",
    _M,
)
_LOCATED_MARKERS = (": error", "- error ", "): error ")
# Only trusted without an exit code: a plain listing or a log may also contain these.
_WEAK_ERROR = re.compile(
    r"\n(?:\[?(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Interrupt)(?::|\]?[ \t]*$)"
    r"|E {2,}\S"
    r"|ERROR[: ]|FATAL[: ]|FAIL(?:ED)?[: ]"
    r"|--- FAIL: "
    r"|E[A-Z]{2,}: [a-z]"
    r"|Error[ \t]*$"
    r")",
    _M,
)
_WEAK_MARKERS = (
    "o such file or directory",
    "Permission denied",
    "cannot access '",
    "ommand not found",
)


def looks_like_error(output: str, exit_code: int | None = None) -> bool:
    """Whether a tool output reports a failure: a non-zero exit code or the usual error shapes."""
    if exit_code is not None and exit_code != 0:
        # `grep -q`, `test -f`, `diff -q`: exit 1 with nothing printed answers "no", it is no error
        return not (exit_code == 1 and not output.strip())
    text = _head_and_tail(output)
    if _STRONG_ERROR.search(text) or any(marker in text for marker in _STRONG_MARKERS):
        return True
    if any(marker in text for marker in _LOCATED_MARKERS) and _LOCATED_ERROR.search(text):
        return True
    if exit_code is not None:
        return False
    return bool(_WEAK_ERROR.search(text)) or any(marker in text for marker in _WEAK_MARKERS)


_EXCEPTION_LINE = re.compile(
    r"\n\[?(?P<line>(?:[\w.]+\.)?(?:[A-Z]\w*)?(?:Error|Exception|Interrupt)\b(?::.*?)?)\]?[ \t]*$",
    _M,
)
_RUNTIME_ERROR = re.compile(
    r"\n[ \t]*(?P<line>\*\* \([\w.]+\) .+|panic: .+|thread '[^'\n]*' panicked at .+"
    r"|Exception in thread \".+|Uncaught [A-Z]\w*.*)$",
    _M,
)
_PYTEST_E_EXCEPTION = re.compile(
    r"\nE {2,}(?P<line>(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b.*)$", _M
)
_PYTEST_E = re.compile(r"\nE {2,}(?P<line>\S.*)$", _M)
_COMPILER_ERROR = re.compile(
    r"\n(?P<line>(?:\S+:\d+(?::\d+)?:?[ \t]*(?:-[ \t]*)?)?(?:fatal )?error(?:\[\w+\]| TS\d+)?: .+"
    r"|\S+\(\d+,\d+\): error [A-Z]+\d+: .+)$",
    _M,
)
_INDENTED_EXCEPTION = re.compile(
    r"\n[ \t]+(?P<line>(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)(?::.*)?)$", _M
)
_SHELL_ERROR = re.compile(r"\n(?P<line>fatal: .+|fatal error: .+|E[A-Z]{2,}: [a-z].*)$", _M)
_SHELL_ERROR_NEEDLES = (
    "command not found",
    "no such file or directory",
    "permission denied",
    "cannot access '",
)
_TOOL_USE_ERROR = re.compile(r"<tool_use_error>(?P<line>.*?)</tool_use_error>", re.S)
_NPM_ERROR = re.compile(r"\n(?P<line>(?:npm ERR!|npm error) +(?P<message>\S.*))$", _M)
_NPM_BOILERPLATE = re.compile(
    r"(?:code |errno |syscall |path |signal |command |cwd |workspace |location |Lifecycle script"
    r"|A complete log|Exit status|Failed at the|This is probably not|Missing script|To see a list"
    r"|npm (?:help|run)|\s*$|/|[\w./-]+@)"
)
_OTHER_ERROR = re.compile(
    r"\n(?P<line>(?:ERROR|FATAL)\b[: ].*|FAILED .+|--- FAIL: .+|FAIL[ \t].+"
    r"|make(?:\[\d+\])?: \*\*\* .+|error Command failed.*|[ \t]*ERR_PNPM_\w+.*"
    r"|Segmentation fault.*|[ \t]*Assertion with \S+ failed.*|Error)[ \t]*$",
    _M,
)


def _cap(line: str) -> str:
    line = _WHITESPACE.sub(" ", line).strip()
    if len(line) > _ERROR_LINE_CAP:
        return line[: _ERROR_LINE_CAP - 1] + "…"
    return line


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else len(text)]


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group("line") if match else None


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    line = None
    for match in pattern.finditer(text):
        line = match.group("line")
    return line


def _first_containing(text: str, needles: tuple[str, ...], whole_word: bool = False) -> str | None:
    """The first line holding one of the needles (lower-case; the search ignores case)."""
    lowered = text.lower()
    best = -1
    for needle in needles:
        position = lowered.find(needle)
        while position >= 0 and whole_word:
            end = position + len(needle)
            before = lowered[position - 1] if position else " "
            after = lowered[end] if end < len(lowered) else " "
            inside_word = before.isalnum() or before == "_" or after.isalpha() or after == "_"
            if not inside_word:
                break  # "errors.log", "ErrorBoundary": a word that merely contains "error"
            position = lowered.find(needle, end)
        if position >= 0 and (best < 0 or position < best):
            best = position
    return _line_at(text, best) if best >= 0 else None


def _npm(text: str) -> str | None:
    first = None
    for match in _NPM_ERROR.finditer(text):
        if not _NPM_BOILERPLATE.match(match.group("message")):
            return match.group("line")
        first = first or match.group("line")
    return first


def error_line(output: str) -> str | None:
    """The one line a human would quote from an error output (at most 200 chars), or None."""
    text = _head_and_tail(output)
    line = (
        _last(_EXCEPTION_LINE, text)  # Python's final exception; chained ones come before it
        or _first(_RUNTIME_ERROR, text)
        or _first(_PYTEST_E_EXCEPTION, text)
        or _first(_COMPILER_ERROR, text)  # the first compiler error causes the rest
        or _first(_INDENTED_EXCEPTION, text)
        or _first(_PYTEST_E, text)
        or _first(_TOOL_USE_ERROR, text)
        or _first(_SHELL_ERROR, text)
        or _first_containing(text, _SHELL_ERROR_NEEDLES)
        or _npm(text)
        or _first(_OTHER_ERROR, text)
        or _first_containing(text, ("error", "failed", "failure", "fatal"), whole_word=True)
    )
    return _cap(line) if line else None


# ---------------------------------------------------------------------------------------------
# User messages
#
# Cues are word sequences matched over the message's tokens: one dict lookup per word instead of a
# regex alternation tried at every character (measured 10-20x faster on chat-sized messages).

_GAP_WORDS = 4  # "..." in a phrase: up to this many words of anything
_Step = tuple[frozenset[str], tuple[str, ...], bool] | None


def _step(spec: str) -> _Step:
    if spec == "...":
        return None
    negated = spec.startswith("!")
    parts = spec.lstrip("!").split("|")
    words = frozenset(part for part in parts if not part.endswith("*"))
    prefixes = tuple(part[:-1] for part in parts if part.endswith("*"))
    return words, prefixes, negated


def _fits(step: tuple[frozenset[str], tuple[str, ...], bool], token: str) -> bool:
    words, prefixes, _ = step
    return token in words or (bool(prefixes) and token.startswith(prefixes))


def _follows(tokens: list[str], at: int, steps: tuple[_Step, ...]) -> bool:
    for index, step in enumerate(steps):
        if step is None:
            rest = steps[index + 1 :]
            last = min(at + _GAP_WORDS, len(tokens))
            return any(_follows(tokens, start, rest) for start in range(at, last + 1))
        if step[2]:
            # a negated step looks ahead without consuming: "works" but not "works on"
            if at < len(tokens) and _fits(step, tokens[at]):
                return False
            continue
        if at >= len(tokens) or not _fits(step, tokens[at]):
            return False
        at += 1
    return True


class _Phrases:
    """Word sequences such as "still not|doesn't work*": | for alternatives, * for a prefix."""

    def __init__(self, *phrases: str) -> None:
        self._by_first: dict[str, list[tuple[_Step, ...]]] = {}
        for phrase in phrases:
            first, *rest = phrase.replace("'", "").split()  # tokens carry no apostrophes
            steps = tuple(_step(word) for word in rest)
            for word in first.split("|"):
                self._by_first.setdefault(word, []).append(steps)
        self._first = frozenset(self._by_first)
        self._single = frozenset(word for word, rests in self._by_first.items() if () in rests)
        # the words that may follow each first word, when that is a plain set: most occurrences of
        # a common first word ("it", "the") are then rejected without walking the phrase
        self._second: dict[str, frozenset[str]] = {}
        for word, rests in self._by_first.items():
            if () in rests:
                continue  # a one-word phrase: search() answers before looking further
            seconds = [steps[0] for steps in rests]
            if all(step is not None and not step[1] and not step[2] for step in seconds):
                self._second[word] = frozenset().union(*(step[0] for step in seconds if step))

    def at(self, tokens: list[str], index: int) -> bool:
        """Whether a phrase starts at tokens[index]."""
        if index >= len(tokens):
            return False
        followers = self._by_first.get(tokens[index])
        return bool(followers) and any(_follows(tokens, index + 1, f) for f in followers or ())

    def search(self, tokens: list[str], vocabulary: frozenset[str]) -> bool:
        """Whether a phrase starts anywhere in tokens (vocabulary is set(tokens))."""
        if self._first.isdisjoint(vocabulary):
            return False
        if not self._single.isdisjoint(vocabulary):
            return True
        last = len(tokens) - 1
        for word in self._first & vocabulary:
            followers = self._by_first[word]
            second = self._second.get(word)
            if second is not None and second.isdisjoint(vocabulary):
                continue
            index = -1
            for _ in range(tokens.count(word)):
                index = tokens.index(word, index + 1)
                if second is not None and (index == last or tokens[index + 1] not in second):
                    continue
                if any(_follows(tokens, index + 1, steps) for steps in followers):
                    return True
        return False


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)
# str.translate + split: 2-3x faster than a findall for words. Apostrophes go ("don't" -> "dont"),
# other punctuation separates words.
_SEPARATORS = str.maketrans(
    {
        **dict.fromkeys(
            '!"#$%&()*+,-./:;<=>?@[\\]^`{|}~\u201c\u201d\u00ab\u00bb\u2014\u2013\u2026', " "
        ),
        "'": None,
        "\u2019": None,
        "\u2018": None,
    }
)


class _Message:
    __slots__ = ("edges", "lower", "prose", "success", "tokens", "vocabulary")

    def __init__(self, text: str) -> None:
        prose = text[:_MESSAGE_CAP]
        if "`" in prose:
            prose = _CODE.sub(" ", prose)  # pasted code and logs shout in capitals without anger
        self.prose = prose.replace("\u2019", "'")
        self.lower = self.prose.lower()
        tokens = self.lower.translate(_SEPARATORS).split()
        if len(tokens) > _HEAD_WORDS + _TAIL_WORDS:
            tokens = [*tokens[:_HEAD_WORDS], "", *tokens[-_TAIL_WORDS:]]
        self.tokens: list[str] = tokens
        self.vocabulary = frozenset(tokens)
        edges = self.prose
        if len(edges) > _HEAD_CHARS + _TAIL_CHARS:
            edges = edges[:_HEAD_CHARS] + "\n" + edges[-_TAIL_CHARS:]
        self.edges = edges
        self.success: bool | None = None  # computed on first use; several cues ask for it


@functools.lru_cache(maxsize=64)
def _message(text: str) -> _Message:
    # the caller asks several questions about the same message; tokenize it once
    return _Message(text)


_SEVERE = _Phrases(
    "wtf|wth|fuck|fucking|fucked|fucks|fuckin|fck|fcking|fml|shit|shitty|bullshit|damn|damnit"
    "|dammit|damned|goddamn|goddammit|goddamnit|crap|crappy|ffs|omfg|stfu|jfc",
    "bloody hell",
    "what the hell|heck|fuck|fucking",
    "are you kidding|serious|joking|insane|stupid|dumb|even",
    "ridiculous|absurd|unacceptable|pathetic|incompetent|idiot|idiots|idiotic|stupid|hopeless",
    # "useless" alone is often about code ("drop the useless import")
    "this|that|it is useless",
    "you're|so|completely|totally|utterly useless",
    "you are useless",
    "i give up",
    "i'm|im giving up",
    "i am giving up",
    "giving up",
    "for the last|hundredth|millionth time",
    "what's|whats wrong with you",
    "what is wrong with you",
)
_MODERATE = _Phrases(
    "third|3rd|fourth|4th|fifth|5th|sixth|6th|tenth|nth time",
    "how many times",
    "why does|do|is|are|did|would|will|won't|doesn't|isn't|can't ... keep|keeps|again|still|always",
    "keep|keeps failing|breaking|crashing|happening|doing|getting|making|adding|removing|ignoring"
    "|changing|saying|going|trying|forgetting|using|deleting|reverting|undoing",
    "you keep|always|never",
    "come on",
    "seriously|ugh|ughh|ughhh|argh|arghh|sigh|jeez|geez|omg",
    "i already|just told|said|asked",
    "i told you",
    "as i said|told|mentioned",
    "again and again",
    "over and over",
    "not again",
    "same error|problem|issue|thing again",
)
_MILD = _Phrases(
    "hm|hmm|hmmm|hmmmm|hmph|nope|meh",
    "that's|thats|it's wrong",
    "is|was|still|all|completely|totally wrong",
    "that's|thats|it's|this's not right|correct|it|what|quite",
    "that|it|this is|was not right|correct|what|quite",
    "not right|correct|quite",
    "still not|doesn't|isn't|won't|can't|didn't|broken|getting|seeing|wrong|erroring|red|fail*"
    "|crash*",
    "still the|a|an same|error|issue|problem|bug",
    "still does|is not",
    "still no",
    "try|do|run it|this|that again",
    "try again",
    "it|that|this|which doesn't|didn't|isn't|wasn't|won't|can't ... work*|help*|fix*|chang*"
    "|compil*|build*|run*|pass*",
    "it|that|this|which does|did|is|was not work*|help*|fix*|chang*|compil*|build*|run*|pass*",
    "same error|problem|issue|failure|result|thing",
    "no luck",
    "not what i",
    "that|you broke",
)
_CAPS_WORD = re.compile(r"[A-Z][A-Z']*[A-Z](?![a-z0-9_])")
_UPPER_PAIR = re.compile(r"[A-Z][A-Z]")
_ACRONYM_TEXT = (
    "API URL URI JSON HTTP HTTPS SQL CSS HTML CLI CI CD PR PRS UI UX DB AWS GCP SDK JWT SSH "
    "TLS SSL YAML TOML XML CSV PDF LLM MCP RPC REST ENV PATH TODO FIXME README OK LGTM ASAP "
    "FYI IMO IIRC EOF GPU CPU RAM OS VM ID IDS UUID NPM TS JS JSX TSX PY MD ORM CRUD DNS IP "
    "TCP UDP GUI IDE VS VSCODE MVP QA DX SRE AI ML NLP GET POST PUT PATCH DELETE HEAD UTF UTC "
    "PST EST MB GB KB TB SHA MD5 OAUTH CORS CSRF XSS SSO SAML LDAP S3 EC2 RDS K8S GH AM PM "
    "NOTE WIP BTW TL DR TLDR INFO DEBUG WARN WARNING TRACE I A"
)
_ACRONYMS = _wordset(_ACRONYM_TEXT)


def _shouting(prose: str, tokens: list[str]) -> bool:
    if not _UPPER_PAIR.search(prose):
        return False
    caps = [word for word in _CAPS_WORD.findall(prose) if word not in _ACRONYMS]
    if "STOP" in caps or len(caps) >= 3:
        return True
    # two capitalised words are shouting only when they are most of the message ("NOT WORKING")
    return len(caps) == 2 and len(tokens) <= 3


def _frustration(message: _Message) -> Frustration:
    prose, tokens, vocabulary = message.edges, message.tokens, message.vocabulary
    if (
        "!!!" in prose
        or "?!?" in prose
        or "!?!" in prose
        or _SEVERE.search(tokens, vocabulary)
        or _shouting(prose, tokens)
    ):
        level: Frustration = "severe"
    elif (
        "!!" in prose
        or "?!" in prose
        or "!?" in prose
        or "???" in prose
        or _MODERATE.search(tokens, vocabulary)
    ):
        level = "moderate"
    elif _MILD.search(tokens, vocabulary):
        level = "mild"
    else:
        return "none"
    if level != "mild" and _success(message):
        return "mild"  # relief, not anger: "holy shit, it works"
    return level


def frustration(text: str) -> Frustration:
    """Rule-based frustration level of one user message: none, mild, moderate or severe."""
    return _frustration(_message(text))


def combine_frustration(levels: Iterable[Frustration]) -> Frustration:
    """The highest of several frustration levels ("none" for no levels)."""
    highest = 0
    for level in levels:
        highest = max(highest, FRUSTRATION_ORDER.index(level))
    return FRUSTRATION_ORDER[highest]


_NOT_A_CORRECTION_AFTER_NO = _wordset(
    "problem problems worries worry rush thanks thank biggie prob probs big"
)
_CORRECTION_START = _Phrases(
    "nope|nah|wrong|incorrect|actually|revert|undo|rollback|don't|dont|never|stop",
    "do not",
    "not that|this|quite|exactly|what|like|there|the|those|these|in|on|with|to|a|an|my|your|it",
    "that's|thats|this's|it's wrong|incorrect",
    "that's|thats|it's not right|correct|it|what|how|the|quite",
    "that's|thats|it's the wrong",
    "that|this|it is|was wrong|incorrect",
    "that|this|it is|was not right|correct|it|what|how|the|quite",
    "you misunderstood|broke|deleted|removed|changed|forgot|missed|ignored|reverted",
    "you got it wrong",
    "i said|meant|wanted",
    "i asked to|for",
    "i asked you to|for",
    "i told you",
    "i didn't|don't ask|say|want|mean",
    "i did|do not ask|say|want|mean",
    "please don't|dont|stop|never|revert|undo",
    "please do not",
    "hold on",
    "roll back",
    "put|change it|that|them back",
    "go back to",
    "why did you",
)
_NOT_COMMA = re.compile(r"^\W*not [^\s,.;]+(?: [^\s,.;]+)?,", _I)
_WAIT = re.compile(r"^\W*wait\s*[,.!-]", _I)


def _correction(message: _Message) -> bool:
    tokens = message.tokens
    if not tokens:
        return False
    first = tokens[0]
    if first == "no":
        hit = len(tokens) == 1 or tokens[1] not in _NOT_A_CORRECTION_AFTER_NO
    elif first == "not" and tokens[1:2] and tokens[1] in ("bad", "sure", "yet", "really", "now"):
        hit = False
    else:
        hit = (
            _CORRECTION_START.at(tokens, 0)
            or "instead" in message.vocabulary
            or (first == "not" and bool(_NOT_COMMA.match(message.prose)))
            or (first == "wait" and bool(_WAIT.match(message.prose)))
        )
    return hit and not _success(message)


def is_correction(text: str) -> bool:
    """Whether a user message corrects the assistant ("no, use X", "I said ...", "revert that")."""
    return _correction(_message(text))


_ACK_WORDS = _wordset(
    "ok okay k kk alright yes yep yeah yup sure right great perfect good nice cool awesome "
    "excellent thanks thank thx ty you done fine got it go ahead on for continue proceed do "
    "please sounds lgtm looks carry keep going next step y yes all"
)
_LEADING_ACK = _wordset(
    "ok okay k kk alright right yes yep yeah yup sure great perfect good nice cool awesome "
    "excellent thanks thank thx ty you done fine got it all right so"
)
_NEW_TASK = _Phrases(
    "next !step",
    "new|a task|thing|question|issue|feature|bug|topic|request|problem",
    "a new|different|separate task|thing|question|issue|feature|bug|topic|request|problem",
    "moving|move on",
    "let's|lets move|switch|turn",
    "another thing|task|question|issue|problem|topic",
    "unrelated",
    "on an unrelated",
    "different|separate topic|question|task|issue|problem|thing",
    "switch|switching to|gears|topic|topics",
    "change of plan|plans|topic",
    "now let's|lets|let",
    "let's|lets now|work|start",
    "i have|i've|ive another|a new|a different",
    "i've|ive got another|a new|a different",
    "something else",
    "task 0|1|2|3|4|5|6|7|8|9|10|11|12",
)
_CONTINUATION_START = _Phrases(
    "also|and|but|plus|then|still|again|same|retry|continue|proceed|it|that|this|these|those|they"
    "|them|here|it's|that's|here's|they're|both|neither|either|ok|okay|yes|yep|yeah|yup|sure|thanks"
    "|thank|thx|ty|great|perfect|good|nice|cool|awesome|hmm|hm|alright",
    "try again|it|that|this",
    "go ahead",
    "keep going",
    "what|how about",
    "what if",
    "why did|didn't|not",
    "did|have|has|does|is|are|was|were you|it|that|this|they",
    "did|have|has|does|is|are|was|were the test|tests|build|ci|fix",
    "the same",
    "the first|second|third|last|latter|former|other|previous one|option|approach",
    "first|second|third|last|latter|former|other|previous one|option|approach",
    "option|choice ...",
    "none of",
    "all of them",
)


def _skip_acks(tokens: list[str]) -> int:
    index = 0
    while index < len(tokens) and tokens[index] in _LEADING_ACK:
        index += 1
    return index


def _new_task(message: _Message) -> bool:
    tokens = message.tokens
    start = _skip_acks(tokens)
    # the ack words themselves may start a cue: "all right, next"
    return _NEW_TASK.at(tokens, start) or (start > 0 and _NEW_TASK.at(tokens, 0))


def is_new_task(text: str) -> bool:
    """Whether a user message explicitly switches to another task ("next", "moving on" ...)."""
    return _new_task(_message(text))


def is_continuation(text: str) -> bool:
    """Whether a user message carries on the current task: an ack, a follow-up, a correction."""
    message = _message(text)
    tokens = message.tokens
    if _new_task(message):
        return False
    if not tokens:
        return bool(message.prose.strip())  # "👍", "?"
    if len(tokens) <= 4 and message.vocabulary <= _ACK_WORDS:
        return True
    if len(tokens) == 1 and len(tokens[0]) == 1:
        return True  # an answer to a choice: "a", "2"
    return bool(
        _CONTINUATION_START.at(tokens, 0)
        or _correction(message)
        or _success(message)
        or _MILD.search(tokens, message.vocabulary)
    )


_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren arent as at be because
    been before being below between both but by can cannot cant could couldn couldnt did didn
    didnt do does doesn doesnt doing don dont down during each few for from further had hadn
    hadnt has hasn hasnt have haven havent having he her here hers herself him himself his how i
    if in into is isn isnt it its itself just let lets me more most mustn my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same shan she should
    shouldn shouldnt so some such than that thats the their theirs them themselves then there
    theres these they theyre this those through to too under until up very was wasn wasnt we
    were weren what whats when where which while who whom why will with won wont would wouldn
    wouldnt you youd youll youre youve your yours yourself yourselves im ive id ill okay yes
    yeah yep sure thanks thank please pls can could would want need like make made get got use
    used using try tried run ran see look looking check fix add change update work works working
    still also now well actually really maybe thing things stuff something anything everything
    way one two new next again too much many lot bit able know think go going gonna done do
    doing does did ok hey hello hi sorry good great nice cool perfect right wrong
"""
_STOPWORDS = _wordset(_STOPWORD_TEXT)


def content_words(text: str) -> set[str]:
    """Lower-cased words of a message minus stopwords and numbers, each at least 3 letters long."""
    words = text[:4096].lower().translate(_SEPARATORS).split()
    return {
        word
        for word in words
        if len(word) >= 3 and word not in _STOPWORDS and not word[0].isdigit() and word[0] != "_"
    }


def topic_overlap(a: set[str], b: set[str]) -> float:
    """Overlap coefficient |a & b| / min(|a|, |b|); 0.0 when either set is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


_SUCCESS_WINDOW = 40  # words; a long task description that mentions "works" is no success cue
_SUCCESS = _Phrases(
    "it|that|this|everything|all works|worked|working !on|by|with|like|as|for|when|if|the|but|in"
    "|out|through|around",
    "it's|that's|everything's working|fixed|solved|green|passing",
    "it|that|this|everything is|all working|fixed|solved|green|passing",
    "works|working|passes|passing|runs|green|compiles|builds now",
    "that|this|it fixed|solved it|that|this",
    "that|this|it did the trick|job|it",
    "that|this|it fixed|solved the problem|issue|bug",
    "fixed|solved it",
    "perfect|awesome|excellent|lgtm|yay|hooray|woohoo",
    "finally works|working|passes|passing|passed|green|fixed|compiles|builds",
    "nailed it",
    "looks good|great",
    "works great|perfectly|fine|well",
    "works like a charm",
    "great|nice|cool|sweet|brilliant|amazing|yes|wonderful|thanks|thank"
    " ... thanks|thank|thx|ty|works|worked",
    "all|the test|tests pass|passing|passed|green",
    "all|the pass|passing|passed|green",
    "test|tests pass|passes|passed now",
)
_SUCCESS_BLOCK = _Phrases(
    "doesn't|didn't|isn't|won't|wasn't|don't|can't|aren't|haven't|hasn't|couldn't"
    " ... work*|help*|fix*|pass*|compil*|build*|run*|solv*|chang*",
    "not ... work*|fix*|pass*|perfect|great|good|quite|yet|solved|green",
    "no longer",
    "never|broken|broke|fails|failed|failing|crash|crashes|crashing|crashed|wrong",
    "still ... fail*|broken|error*|crash*|wrong|not|doesn't|isn't|won't|get*|see*|red|same",
    "a|an|the|new|another|same|this error|errors|exception",
    "if|whether|until|ensure|check|verify|once|when|how|should|unless ... work*|pass*|green"
    "|perfect",
    "make sure ... work*|pass*|green",
    "so that ... work*|pass*|green",
)
_SUCCESS_START = _Phrases(  # a message that opens with the verb: "works!", "worked, thanks"
    "works|worked|working !on|by|with|like|as|for|when|if|the|but|in|out|through|around"
)
# "finally!" is relief; "Finally, add a changelog entry" is the last step of a list
_FINALLY = re.compile(r"^\W*finally\s*(?:[!.]|$)", _I)


def _success(message: _Message) -> bool:
    if message.success is None:
        message.success = _says_success(message)
    return message.success


def _says_success(message: _Message) -> bool:
    tokens = message.tokens[:_SUCCESS_WINDOW]
    if not tokens:
        return False
    vocabulary = frozenset(tokens) if len(message.tokens) > _SUCCESS_WINDOW else message.vocabulary
    hit = (
        _SUCCESS.search(tokens, vocabulary)
        or _SUCCESS_START.at(tokens, 0)
        or (tokens[0] == "finally" and bool(_FINALLY.match(message.prose)))
    )
    if not hit:
        return False
    lower = message.lower
    if "error:" in lower or "work?" in lower or "works?" in lower:
        return False
    return not _SUCCESS_BLOCK.search(tokens, vocabulary)


def success_cue(text: str) -> bool:
    """Whether a user message says the problem is solved ("works now", "that fixed it", ...)."""
    return _success(_message(text))
