"""When two memory texts say the same thing.

Measured with all-MiniLM-L6-v2 (`tools/tune_dedup.py`): cosine alone cannot tell a paraphrase
from its negation or from a swap ("Use pnpm, never npm." vs "Use npm, never pnpm." is 0.991,
above the best real paraphrase), nor from a changed number or path (Node 20 vs 18: 0.961). So
cosine only proposes candidates and this lexical check decides: the same polarity, the same
specific tokens (numbers, paths, versions, code), the same tools in the same order, and not a
mere reordering of the same words.
"""

from __future__ import annotations

import re

from reos_memory.squirrel.text import tool_names

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:+#@\-]*")
_NEGATION = re.compile(
    r"\b(?:not|never|no|don't|dont|doesn't|isn't|aren't|won't|can't|cannot|shouldn't|mustn't"
    r"|without|avoid|skip|stop|disable[sd]?|off|forbid(?:den)?|prohibit(?:ed)?|nor)\b|n't\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "be",
        "was",
        "were",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "and",
        "or",
        "as",
        "at",
        "by",
        "from",
        "it",
        "its",
        "use",
        "using",
        "used",
        "in",
        "into",
        "than",
        "then",
        "so",
    ]
)


_CODE = re.compile(r"`([^`\n]+)`")


def _specific(text: str) -> frozenset[str]:
    """Tokens whose change changes the meaning: numbers, versions, paths, file names, code
    (a span in backticks as a whole: `PYTHONPATH=. pytest` is not `pytest`)."""
    out = {" ".join(c.lower().split()) for c in _CODE.findall(text)}
    for w in _WORD.findall(text.replace("`", " ")):
        w = w.rstrip(".:,")
        if any(c.isdigit() for c in w) or (any(c in w for c in "/._-:#@+") and len(w) > 1):
            out.add(w.lower())
    return frozenset(out)


def _content(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in _STOP]


def _polarity(text: str) -> int:
    return len(_NEGATION.findall(text)) % 2


def same_meaning(a: str, b: str) -> bool:
    """True when two texts that embed close together may be merged as one memory."""
    if a.strip().lower() == b.strip().lower():
        return True
    if _polarity(a) != _polarity(b) or bool(_NEGATION.search(a)) != bool(_NEGATION.search(b)):
        return False
    if _specific(a) != _specific(b):
        return False
    if tool_names.mentioned_tools(a) != tool_names.mentioned_tools(b):
        return False
    ca, cb = _content(a), _content(b)
    # the same words in another order is a swap ("tabs over spaces"), not a paraphrase
    return not (sorted(ca) == sorted(cb) and ca != cb)
