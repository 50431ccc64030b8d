"""The gate every candidate memory passes before it is committed: what would be junk in a
later session's context is turned away, with the reason kept on the episode."""

from __future__ import annotations

import re

from reos_memory.squirrel.text.prose import words

MIN_WORDS = 5
NEAR_DUPLICATE = 0.6  # share of content words in common

# the agent's own tool mechanics and harness: nothing about the project
_MECHANICS = re.compile(
    r"(?:has not been read yet|read it first|string to replace not found|file (?:is )?too large"
    r"|tool_use_error|exceeds maximum allowed tokens|<system-reminder>|todo ?list|todowrite"
    r"|exitplanmode|plan mode|context window|ran out of context|/compact\b|squirrel-context"
    r"|permission to use|operation stopped by hook|hook (?:error|blocking error)"
    r"|interrupted by user|request interrupted)",
    re.I,
)
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "this",
        "that",
        "these",
        "those",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "they",
        "them",
        "he",
        "she",
        "its",
        "as",
        "at",
        "by",
        "from",
        "so",
        "if",
        "then",
        "than",
        "there",
        "here",
        "not",
        "no",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "just",
        "also",
        "all",
        "any",
        "some",
        "what",
        "which",
        "who",
        "how",
        "why",
        "when",
        "where",
        "let",
        "lets",
        "us",
        "have",
        "has",
        "had",
        "into",
        "out",
        "up",
        "about",
    ]
)


def content(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP and len(w) > 2}


def reason(text: str, kept: list[str], seen: list[str]) -> str | None:
    """Why `text` is junk, or None. `kept`: candidates already accepted for this episode;
    `seen`: the texts of memories already stored."""
    n = len(words(text))
    if n < MIN_WORDS:
        return f"fragment ({n} words)"
    if _MECHANICS.search(text):
        return "about the agent's own tools, not the project"
    mine = content(text)
    if len(mine) < 3:
        return "no content words"
    for other in (*kept, *seen):
        theirs = content(other)
        if theirs and len(mine & theirs) / min(len(mine), len(theirs)) >= NEAR_DUPLICATE:
            return f"near-duplicate of: {other[:80]}"
    return None
