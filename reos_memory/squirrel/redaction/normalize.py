"""The text the rules read: NFKC-normalised, without zero-width characters, mapped back.

A key typed or pasted in full-width forms (U+FF01..U+FF5E) or with a zero-width space inside
is the same key to whoever reads it, so detection runs on the NFKC form with invisible characters
removed. What is redacted is the original text: each index of the normalised text maps back to
the character it came from, so everything but the secret keeps its original characters.

ASCII text (nearly all of it) returns at once; non-ASCII text is normalised run by run, and only
characters that change are handled one by one.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

__all__ = ["normalized", "to_original"]

# Zero-width and invisible formatting characters that split a token without showing.
_INVISIBLE = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e"
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
_INVISIBLE_SET = frozenset(_INVISIBLE)
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]+")
# Characters whose NFKC form holds ASCII letters, digits or token punctuation, and the invisible
# ones: without any of these (ordinary accents, CJK, "…", dashes, quotes) nothing a rule reads
# changes, and the text is read as it is.
_SUSPECT_RE = re.compile(
    f"[{_INVISIBLE}\uff01-\uff5e\u2070-\u209f\u2460-\u24ff\u2100-\u214f\u3000"
    "\U0001d400-\U0001d7ff\U0001f100-\U0001f1ff\ufb00-\ufb06\u2150-\u218f]"
)


@lru_cache(maxsize=8192)
def _nfkc(ch: str) -> str:
    return "" if ch in _INVISIBLE_SET else unicodedata.normalize("NFKC", ch)


# Past this many changed runs the map costs more than it is worth (a crafted line of zero-width
# spaces): the normalised text itself is what gets redacted and kept.
MAX_MAPPED_RUNS = 2000


def normalized(text: str) -> tuple[str, list[int] | None]:
    """(the text to detect in, map from its indices to `text`'s).

    The map is None when the indices are the same (nothing changed, or only one-for-one
    replacements); otherwise it has one entry per character of the normalised text plus one for
    its end. A text with more than MAX_MAPPED_RUNS changed runs comes back normalised with an
    empty map: the caller redacts and keeps the normalised text."""
    if text.isascii() or _SUSPECT_RE.search(text) is None:
        return text, None
    has_invisible = any(z in text for z in _INVISIBLE)
    if not has_invisible and unicodedata.is_normalized("NFKC", text):
        return text, None
    whole = unicodedata.normalize("NFKC", text)
    if not has_invisible and len(whole) == len(text):
        return whole, None  # one for one: the same indices
    if next(itertools.islice(_NON_ASCII_RE.finditer(text), MAX_MAPPED_RUNS, None), None):
        return _INVISIBLE_RE.sub("", whole), []
    parts: list[str] = []
    pos: list[int] = []
    last = 0
    for m in _NON_ASCII_RE.finditer(text):
        s, e = m.span()
        parts.append(text[last:s])
        pos.extend(range(last, s))
        run = m.group()
        norm = unicodedata.normalize("NFKC", run)
        if len(norm) == len(run) and not any(z in run for z in _INVISIBLE):
            parts.append(norm)  # one for one (full-width forms)
            pos.extend(range(s, e))
        else:
            for i, ch in enumerate(run, s):
                n = _nfkc(ch)
                parts.append(n)
                pos.extend([i] * len(n))
        last = e
    parts.append(text[last:])
    pos.extend(range(last, len(text) + 1))
    return "".join(parts), pos


def to_original(pos: list[int], start: int, end: int) -> tuple[int, int]:
    """The span of the original text that the normalised span [start, end) came from."""
    if end <= start:
        return pos[start], pos[start]
    return pos[start], pos[end - 1] + 1
