"""A message split into clauses: code blocks, indented and pasted lines dropped, inline code and
quotations masked, sentences cut at their ends and at "; but", ", never", "and don't"; a header
line ("Rules:") and a bare prefix ("From now on:") carry over to the clauses after them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reos_memory.squirrel.text.prose import fold
from reos_memory.squirrel.text.rule_openings import DURABLE_PREFIX_RE, skip_lead
from reos_memory.squirrel.text.rule_scope import GLOBAL_PREFIX_RE, GLOBAL_RE
from reos_memory.squirrel.text.tool_names import TOOL_CATEGORIES, tool_mentions

# a block of code, or pasted between triple quotes (a program's output, a log): not the user's words
_FENCE_RE = re.compile(r'(```|~~~|""")(?:.*?\1|.*\Z)', re.S)
_MULTILINE_CODE_RE = re.compile(r"`[^`]*\n[^`]*`")
_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")
_QUOTED_RE = re.compile(r"\"[^\"\n]{1,300}\"|“[^”\n]{1,300}”")
_SKIP_LINE_RE = re.compile(
    r"^\s*(?:>|\$\s|>>>|\.\.\.\s|#|Traceback\b|File\s\"|at\s\S+\(|E\s{2}"
    r"|[A-Z][A-Z_]{2,}\b\s*[:\]]|\[[A-Za-z]+\]|\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d)"
)
_INDENTED_RE = re.compile(r"^(?:\t| {4,})(?![-*+•]\s|\d+[.)]\s)")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADER_RE = re.compile(
    r"\b(?:from now on|going forward|moving forward|rules?|conventions?|guidelines?|remember"
    r"|always|never|preferences?|important|please note|in (?:all|every))\b"
)
_SENTENCE_END_RE = re.compile(r"[.!?…]+(?=\s|$)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "eg", "ie", "etc", "vs", "cf", "approx", "incl", "ca"})
_CONDITION_START_RE = re.compile(
    r"\s*(?:if|when|whenever|every\s+time|each\s+time|any\s*time|after|before|once|unless)\b[^,;]*$"
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|,?\s+but\s+(?!not\b)"
    r"|,\s*(?:and\s+|but\s+|or\s+)?(?=(?:never|don'?t|dont|do\s+not|always|avoid|stop|please)\b)"
    r"|\s+and\s+(?=(?:never|don'?t|dont|do\s+not|always|avoid)\b)"
)


@dataclass
class Clause:
    raw: str
    masked: str  # lowercase; code spans and quotations blanked, same length as raw
    first: bool  # opens its sentence
    durable: bool  # inherited from a "from now on"/"rules:" context
    glob: bool  # inherited "in all my projects"
    vouched: frozenset[str] = frozenset()  # tool categories confirmed elsewhere in the message
    conditioned: bool = False  # the rule part of "if X, ...": its pronouns point at X
    rejected: frozenset[str] = frozenset()  # words of the tool call the user just rejected


def _mask(line: str) -> str:
    def blank(m: re.Match[str]) -> str:
        s = m.group()
        return s[0] + "_" * (len(s) - 2) + s[-1]

    return fold(_QUOTED_RE.sub(blank, _INLINE_CODE_RE.sub(blank, line)))


def _sentences(raw: str, masked: str) -> list[tuple[str, str]]:
    out = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(masked):
        if m.group() == "." and m.start() > start:
            word = masked[start : m.start()].rsplit(None, 1)[-1].lstrip("(")
            if word in _ABBREVIATIONS:
                continue
        out.append((raw[start : m.end()], masked[start : m.end()]))
        start = m.end()
    if masked[start:].strip():
        out.append((raw[start:], masked[start:]))
    return out


def split_clauses(text: str, rejected: frozenset[str] = frozenset()) -> list[Clause]:
    """The clauses of a message's prose lines; `rejected` holds the words of a rejected call."""
    if "```" in text or "~~~" in text or '"""' in text:
        text = _FENCE_RE.sub("\n", text)
    if "`" in text:
        text = _MULTILINE_CODE_RE.sub("\n", text)
    vouched = frozenset(TOOL_CATEGORIES[m.tool] for m in tool_mentions(text))
    out: list[Clause] = []
    header_durable = header_glob = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if _INDENTED_RE.match(line) or _SKIP_LINE_RE.match(line):
            continue
        bullet = _BULLET_RE.match(line)
        if bullet:
            line = line[bullet.end() :]
        else:
            header_durable = header_glob = False
        masked = _mask(line)
        stripped = masked.rstrip()
        if stripped.endswith(":") and _HEADER_RE.search(stripped):
            header_durable = True
            header_glob = GLOBAL_RE.search(stripped) is not None
            continue
        for raw_s, masked_s in _sentences(line, masked):
            out += _sentence_clauses(
                raw_s, masked_s, header_durable, header_glob, vouched, rejected
            )
    return out


def _sentence_clauses(
    raw: str,
    masked: str,
    durable: bool,
    glob: bool,
    vouched: frozenset[str],
    rejected: frozenset[str],
) -> list[Clause]:
    """One sentence's clauses, with what its header implies (`durable`, `glob`)."""
    out: list[Clause] = []
    for n, (a, b) in enumerate(_pieces(masked)):
        piece = masked[a:b]
        if not piece.strip():
            continue
        out.append(Clause(raw[a:b], piece, n == 0, durable, glob, vouched, rejected=rejected))
        # "Everywhere, please ..." / "From now on; ...": a bare prefix covers the rest
        bare = piece[skip_lead(piece, 0) :].strip(" ,;:.!-")
        if DURABLE_PREFIX_RE.fullmatch(bare) or GLOBAL_PREFIX_RE.fullmatch(bare):
            durable = True
            glob = glob or GLOBAL_RE.search(bare) is not None
    return out


def _pieces(masked: str) -> list[tuple[int, int]]:
    """Where a sentence splits into clauses: at "; ", " but ", ", never", " and don't" ..."""
    pos = 0
    pieces: list[tuple[int, int]] = []
    for m in _CLAUSE_SPLIT_RE.finditer(masked):
        if not pieces and _CONDITION_START_RE.match(masked, pos, m.start()):
            continue  # "if the tests fail, never ...": the condition stays with its rule
        pieces.append((pos, m.start()))
        pos = m.end()
    pieces.append((pos, len(masked)))
    return pieces
