"""What an agent found out: the sentence in which it names a root cause or a constraint of the
project ("Found the bug! X is missing the Y field", "The tests failed because the environment
has commit.gpgsign=true", "the migration changes a column type, which SQLite doesn't
support"). Read at ingest from the agent's whole message (only these sentences are kept)."""

from __future__ import annotations

import re

from reos_memory.squirrel.text.prose import clip, sentences, words

MAX_CHARS = 360
MAX_PER_MESSAGE = 2

# strong: the agent says it found the cause
_FOUND = re.compile(
    r"\b(?:found (?:the|it|a|an)(?: \w+)?(?: \w+)? (?:bug|issue|problem|cause|culprit)"
    r"|found it\b(?! (?:in|at|on|under|inside|here|there)\b)"  # (where it is: no cause)
    r"|root cause|the (?:real|actual|underlying) (?:issue|problem|bug|cause)"
    r"|(?:the|this) (?:issue|problem|bug|failure|error|crash) (?:is|was) (?:that|because|caused)"
    r"|(?:is|was) caused by|that'?s why|this is why|which is why|that explains"
    r"|(?:fail(?:s|ed|ing)?|breaks?|broke|crash(?:es|ed)?|errors?(?:ed)?) because)"
)
# a constraint of a tool or the project, stated as a fact
_CONSTRAINT = re.compile(
    r"\b(?:(?:does|do|did)n'?t support|(?:does|do|did) not support|(?:is|are)n'?t supported"
    r"|(?:is|are) not supported|not supported (?:by|in|for)|(?:is|are) missing (?:the|from|a|an)"
    r"|doesn'?t (?:copy|handle|include|pass|persist|propagate|preserve|recogni[sz]e|detect)"
    r"|won'?t (?:affect|work|persist|propagate)|requires? (?:an? |the )?\w+ (?:to|before|instead)"
    r"|must (?:use|be|not)|only (?:supports?|works?|handles?)"
    r"|(?:merge|merges), not override|(?:is|are) (?:silently )?(?:ignored|dropped|overwritten))"
)
# something named: code, an identifier, a file, a flag, a quoted message, a product name
_SPECIFIC = re.compile(
    r"`[^`]+`|\b\w+[._/]\w+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}\b|--?\w[\w-]+|\"[^\"]{3,}\""
    r"|(?<!^)(?<![.!?]\s)\b[A-Z][a-z]{2,}"
)
# a word every cue above holds: a substring test skips most messages at C speed
_ANCHORS = (
    "found",
    "cause",
    "issue",
    "problem",
    "bug",
    "why",
    "explain",
    "because",
    "support",
    "missing",
    "n't",
    " not ",
    "require",
    "must",
    "only ",
    "merge",
    "ignored",
    "dropped",
    "overwritten",
    "failure",
    "error",
    "crash",
)
_HEDGE = re.compile(
    r"\b(?:might|maybe|perhaps|probably|possibly|likely|could be|may be|seems?|i think|i guess"
    r"|let me|i'?ll|i will|i need to|we need to check|not sure|unclear|wonder)\b|\?$"
)


def find(text: str) -> list[str]:
    """The diagnosis sentences of one agent message, strongest first."""
    low = text.lower()
    if not any(w in low for w in _ANCHORS) or not (_FOUND.search(low) or _CONSTRAINT.search(low)):
        return []  # most messages: one pass over the text, no sentence splitting
    sents = sentences(text)
    scored: list[tuple[int, int, str]] = []
    for i, s in enumerate(sents):
        low = s.lower()
        n = len(words(s))
        if n < 6 or n > 70 or _HEDGE.search(low):
            continue
        if _FOUND.search(low):
            strength = 2
        elif _CONSTRAINT.search(low):
            strength = 1
        else:
            continue
        said = s
        if s.rstrip().endswith(":") or re.search(r"\b1\.$", s):
            continue  # the list it announces is not in the sentence
        # "Found the bug!" says nothing alone: the sentence after it names the bug
        if len(words(s)) < 8 and i + 1 < len(sents) and not _HEDGE.search(sents[i + 1].lower()):
            said = f"{s} {sents[i + 1]}"
        if not _SPECIFIC.search(said):
            continue  # names nothing ("I found the root cause of the issue")
        scored.append((-strength, i, clip(said, MAX_CHARS)))
    scored.sort()
    return [s for _, _, s in scored[:MAX_PER_MESSAGE]]
