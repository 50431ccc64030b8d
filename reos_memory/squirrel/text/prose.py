"""A message reduced to the sentences a person wrote: no code blocks, pasted logs, tags or
markdown decoration; split into sentences that keep their inline code."""

from __future__ import annotations

import re

_FENCE = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.S)
_TAG_BLOCK = re.compile(r"<(system-reminder|command-\w+|local-command-\w+|bash-\w+)>.*?</\1>", re.S)
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")
# pasted output rather than prose: log lines, stack frames, prompts, tables, diff lines
_PASTED = re.compile(
    r"^\s*(?:\$\s|>>>|>\s|#!|at\s\S+\(|File\s\"|Traceback\b|\|.*\||[-+]{3}\s|@@|[+-]\s"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d\d:\d\d|\d+[→:]\s|\S+\.\w+:\d+:\d*)"
)
_MARKUP = re.compile(r"\*\*|__|^#{1,6}\s+|^\s*[-*+•]\s+|^\s*\d+[.)]\s+", re.M)
_END = re.compile(
    r"(?<=[.!?])\s+(?=[\"'(`]?[A-Z0-9@])|(?<=[.!?:])\s*\n+|\n\s*\n+|\n(?=\s*(?:[-*+•]|\d+[.)])\s)"
    # a line that opens with a capitalised word after one without a full stop: a report's
    # lines ("Ran tests - 2 failing\nDiagnosed the issue - ..."), not a wrapped sentence
    r"|\n(?=[A-Z][a-z]+\s)"
)
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp)\.$", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]+")


# typographic quotes read as typed ones: pasted from a review page, a document or a chat, or
# typed with smart punctuation (U+2019 for the apostrophe of "won't", U+201C/D around a quote), so
# every reading's "won'?t" holds for both
_TYPED_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def typed_quotes(text: str) -> str:
    """The text with typographic quotes and apostrophes as typed ones."""
    return text.translate(_TYPED_QUOTES)


def prose(text: str) -> str:
    """The text without code blocks, tags and pasted lines (output, logs, diffs, tables)."""
    text = _FENCE.sub(" ", text)
    text = _TAG_BLOCK.sub(" ", text)
    text = _TAG.sub(" ", text)
    lines = []
    for line in text.splitlines():
        if _PASTED.match(line) or _code_like(line):
            lines.append("")
            continue
        lines.append(line)
    return "\n".join(lines)


def _code_like(line: str) -> bool:
    """A line of code or data: more symbols than words."""
    s = line.strip()
    if len(s) < 12:
        return False
    words = sum(len(w) for w in _WORD.findall(s))
    return words < 0.45 * len(s) and s.count("`") < 2


def sentences(text: str) -> list[str]:
    """The sentences of a text's prose, whitespace collapsed, markup dropped."""
    out: list[str] = []
    pending = ""
    for part in _END.split(prose(text)):
        s = " ".join(_MARKUP.sub("", part or "").split())
        if not s:
            continue
        if pending:
            s = f"{pending} {s}"
            pending = ""
        if _ABBREV.search(s):
            pending = s
            continue
        out.append(s)
    if pending:
        out.append(pending)
    return out


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:-") + "…"


def wordset(text: str) -> frozenset[str]:
    """The words of `text`: how the rule files write their word lists."""
    return frozenset(text.split())


def fold(text: str) -> str:
    """`text` in lowercase, always of the same length (positions carry over to the original)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c) == 1 else "?" for c in (ch.lower() for ch in text))


# a full stop between sentences of a turn typed in lowercase ("yep refunds. ok so revenue is
# always net of refunds"): people type to an agent as they chat (after "?" the lowercase words
# are the question's own reason: "can we use our logger? should be WARN")
_LOWER_STOP = re.compile(r"(?<=[a-z0-9)`'\"]\.)\s+(?=[a-z])")


def typed_lowercase(sentence: str) -> list[str]:
    """A sentence cut where a full stop is followed by a lowercase word (not an abbreviation's)."""
    out: list[str] = []
    start = 0
    for m in _LOWER_STOP.finditer(sentence):
        # (the abbreviation, if any, ends at the stop: look at the few characters before it)
        if not _ABBREV.search(sentence, max(0, m.start() - 12), m.start()):
            out.append(sentence[start : m.start()])
            start = m.end()
    out.append(sentence[start:])
    return [s for s in out if s]
