"""What a test runner printed: whether the run passed or failed.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, Literal

from reos_memory.squirrel.text.error_output import TAIL, looks_like_error, tail
from reos_memory.squirrel.text.shell_commands import is_test_command, is_viewer

Outcome = Literal["passed", "failed"]

_M = re.MULTILINE

# A wrapper that is no known runner may still run the suite (`./scripts/ci.sh`, `hatch run test`).
_MAY_RUN_TESTS = re.compile(r"test|spec|check|verify|\bci\b", re.IGNORECASE)

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
    if command and not testish and (is_viewer(command) or not _MAY_RUN_TESTS.search(command)):
        return None
    if output.startswith(_BACKGROUND):
        return None  # Claude Code started it in the background; the result comes later
    verdict = _summary(tail(output))
    if verdict == _FAILED:
        return "failed"
    if verdict == _PASSED:
        if testish and exit_code and len(output) > TAIL:
            return "failed"
        return "passed"
    if verdict == _EMPTY or not testish:
        return None
    if exit_code is not None:
        return "passed" if exit_code == 0 else "failed"
    return "failed" if looks_like_error(output) else None


# Pytest collects module-level callables named test_*, and test modules import this one.
test_outcome.__test__ = False  # type: ignore[attr-defined]
