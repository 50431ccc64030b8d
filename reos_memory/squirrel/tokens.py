"""The token count Squirrel budgets with: an upper estimate of a BPE tokenizer's count.

`count_tokens(text) = max(ceil(characters / 4), words + punctuation marks)`. English prose runs
at about 4 characters per token, code and paths at fewer; taking the larger of the two estimates
keeps a context that fits our count inside real tokenizers' counts for ordinary text.
"""

from __future__ import annotations

import math
import re

_PIECES = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """Estimated tokens of `text` (0 for the empty string)."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(_PIECES.findall(text)))


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
