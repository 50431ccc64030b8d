"""An error in a tool's output: whether the output reports a failure, and its one telling line.

* ``looks_like_error``: a non-zero exit code is an error, except exit 1 with no output (``grep -q``,
  ``test -f``: a "no"). Tracebacks, compiler errors, ``npm ERR!``, ``fatal:``, ``panic:`` count
  even with exit code 0 (``cmd | tail`` hides the exit code of ``cmd``); weaker shapes (a bare
  ``FooError: ...`` line, ``ERROR``, ``FAILED``, "No such file or directory") only when no exit
  code is known.

Long outputs are cut to a window first (their head and tail): ingest reads every tool output.
Output patterns are line-anchored with a leading "\n" (searched in "\n" + window) rather than
with ^ and re.MULTILINE: a literal first character lets the regex engine jump from newline to
newline instead of trying every alternative at every character.
"""

from __future__ import annotations

import re

TAIL = 4096  # test summaries and the final exception sit at the end of an output
_HEAD = 2048  # compiler errors sit at the start
_ERROR_LINE_CAP = 200

_M = re.MULTILINE
_WHITESPACE = re.compile(r"\s+")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # progress bars redraw with a bare \r; the last state of each line is what a human saw
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def tail(text: str, size: int = TAIL) -> str:
    """The last `size` characters from a line start on, cleaned, with a leading newline."""
    if len(text) <= size:
        return "\n" + _clean(text)
    cut = text[-size:]
    newline = cut.find("\n")
    # the first line is cut mid-way; a fragment could pose as a line start
    return "\n" + _clean(cut[newline + 1 :] if newline >= 0 else cut)


def _head_and_tail(text: str) -> str:
    if len(text) <= _HEAD + TAIL:
        return "\n" + _clean(text)
    head = text[:_HEAD]
    newline = head.rfind("\n")
    return "\n" + (_clean(head[:newline]) if newline >= 0 else "") + tail(text)


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
