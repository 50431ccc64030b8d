"""The token count Squirrel budgets with: an upper estimate of a BPE tokenizer's count.

`count_tokens(text) = max(ceil(ascii characters / 4) + other characters, pieces)`, where pieces
are words and punctuation marks, a word of more than 8 ASCII characters counting one piece per
4 characters (per 2 when it holds a digit: hashes, ids, base64) and every non-ASCII character
counting one. English prose runs at about 4 characters per token, code and paths at fewer,
identifiers and hex at about 2, CJK text at one or more per character; taking the larger
estimate keeps a context that fits this count inside real tokenizers' counts for ordinary text.
The parts are additive over lines, so a context can be fitted line by line.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

_PIECES = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_LONG = re.compile(r"\w{9,}", re.UNICODE)


class Size(NamedTuple):
    """Additive parts of the count: ASCII characters, other characters, pieces."""

    ascii: int
    other: int
    pieces: int

    def __add__(self, o: tuple[int, ...]) -> Size:  # type: ignore[override]
        return Size(self.ascii + o[0], self.other + o[1], self.pieces + o[2])

    @property
    def tokens(self) -> int:
        return max(math.ceil(self.ascii / 4) + self.other, self.pieces)


def _piece(tok: str) -> int:
    if not tok.isascii():
        return sum(1 for c in tok if ord(c) > 127) + _piece("".join(c for c in tok if ord(c) < 128))
    n = len(tok)
    if n <= 8:
        return 1 if n else 0
    return math.ceil(n / (2 if any(c.isdigit() for c in tok) else 4))


def size(text: str) -> Size:
    """The additive parts of `text` (joining texts with one newline adds one ASCII character)."""
    pieces = len(_PIECES.findall(text))
    # most words are short: count every piece once, then add what the long ones cost beyond it
    pieces += sum(_piece(w) - 1 for w in _LONG.findall(text))
    if text.isascii():
        return Size(len(text), 0, pieces)
    other = sum(1 for c in text if ord(c) > 127)
    # a word with non-ASCII letters counts each of them (short words were counted once)
    pieces += sum(_piece(w) - 1 for w in _PIECES.findall(text) if len(w) <= 8 and not w.isascii())
    return Size(len(text) - other, other, pieces)


def count_tokens(text: str) -> int:
    """Estimated tokens of `text` (0 for the empty string)."""
    if not text:
        return 0
    return size(text).tokens


def cap(text: str, n: int) -> str:
    """`text`, cut to at most `n` characters with an ellipsis when it was longer."""
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def shorten(text: str, n: int) -> str:
    """`text` on one line (runs of whitespace made one space), cut to at most `n` characters."""
    return cap(" ".join(text.split()), n)


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` (cut at a space when possible) within `budget` tokens."""
    if count_tokens(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid] + " …") <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > lo * 0.7:
        cut = cut[:space]
    return cut.rstrip() + " …" if cut else ""
