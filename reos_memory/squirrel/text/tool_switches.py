"""A switch from one tool to another of its category, described ("migrate from npm to pnpm",
"replace requests with httpx", "httpx instead of requests") or shown (the failing and the working
command, an edit's old and new text)."""

from __future__ import annotations

import itertools
import re

from reos_memory.squirrel.text.prose import fold
from reos_memory.squirrel.text.tool_names import TOOL_CATEGORIES, mentioned_tools, tool_mentions

# (text before the first tool, text between the tools, which of the two is the new one)
_SWITCH_RULES: tuple[tuple[re.Pattern[str] | None, re.Pattern[str], int], ...] = (
    (
        re.compile(
            r"\b(?:from|migrat\w*|switch\w*|mov(?:e|ed|es|ing)|chang\w*|convert\w*|port\w*)"
            r"\s+(?:(?:the|our|all|of|from)\s+)*$"
        ),
        re.compile(r"^\s*(?:[\w.]+\s+){0,2}?(?:to|over\s+to|->|→|=>)\s*(?:the\s+)?$"),
        1,
    ),
    (
        re.compile(r"\b(?:replac\w*|swap\w*(?:\s+out)?|drop\w*|ditch\w*|trad\w*)\s+(?:the\s+)?$"),
        re.compile(r"^\s*(?:out\s+)?(?:with|by|for|in\s+favou?r\s+of)\s*(?:the\s+)?$"),
        1,
    ),
    (None, re.compile(r"^\s*(?:->|→|=>)\s*$"), 1),
    (
        None,
        re.compile(r"^\s*(?:is|was|has\s+been|gets|got)?\s*replaced\s+(?:with|by)\s*$"),
        1,
    ),
    (
        None,
        re.compile(r"^\s*(?:,\s*)?(?:instead\s+of|rather\s+than|in\s+place\s+of|over|not)\s*$"),
        0,
    ),
    (None, re.compile(r"^\s*replaces\s*$"), 0),
    (re.compile(r"\bnot\s+$"), re.compile(r"^\s*[,;:]?\s*(?:but|use|rather|just)?\s*$"), 1),
)


def switch_in(text: str) -> tuple[str, str, str] | None:
    """(category, old, new) when one text describes a switch between two tools of a category.

    Recognises "switch/migrate/move from X to Y", "migrated X to Y", "replace X with Y",
    "Y instead of / rather than / over X", "Y, not X", "not X, Y", "X -> Y".
    """
    mentions = tool_mentions(text)
    if len(mentions) < 2:
        return None
    low = fold(text)
    for a, b in itertools.pairwise(mentions):
        cat = TOOL_CATEGORIES[a.tool]
        if a.tool == b.tool or TOOL_CATEGORIES[b.tool] != cat:
            continue
        before = low[max(0, a.start - 40) : a.start]
        between = low[a.end : b.start]
        for before_re, between_re, new_index in _SWITCH_RULES:
            if between_re.match(between) and (before_re is None or before_re.search(before)):
                old, new = (a.tool, b.tool) if new_index == 1 else (b.tool, a.tool)
                return cat, old, new
    return None


def switch_between(before: str, after: str) -> tuple[str, str, str] | None:
    """(category, old, new) when `after` uses a tool of the same category that `before` used.

    `before`/`after` are e.g. the failing and the working command, or an edit's old and new
    text. When they show no such difference, `after` is read on its own as a description
    ("replace requests with httpx").
    """
    old_tools = mentioned_tools(before)
    new_tools = mentioned_tools(after)
    removed = [t for t in old_tools if t not in new_tools]
    for new in new_tools:
        if new in old_tools:
            continue
        cat = TOOL_CATEGORIES[new]
        for old in removed:
            if TOOL_CATEGORIES[old] == cat:
                return cat, old, new
    return switch_in(after)
