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
SPECIFIC = re.compile(
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
    r"|let me|i'?ll|i will|i need to|we need to check|not sure|unclear|wonder"
    r"|(?:suggests|indicates)(?: that)?|it appears|appears to)\b|\?$"
)


# the user repeating what the agent said, to argue with it ("You also said above: 2. X")
_QUOTING = re.compile(
    r"^\W*(?:\w+,?\s+)?(?:you|the agent|claude)(?: also| just)? (?:said|mentioned|wrote|claimed"
    r"|suggested|stated|told)\b",
    re.IGNORECASE,
)


def find_in_users_words(text: str) -> list[str]:
    """The diagnosis sentences of a user's message (a pasted report, a review comment, a
    finding), without those that repeat the agent's words to argue with them."""
    return [s for s in find(text) if not _QUOTING.match(s)]


# a heading over the cause in an agent's write-up: "## Root Cause", "**The problem:**",
# "### What Was the Problem?", "**Why it failed**"
_CAUSE_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|\*\*)(?:\d+[.)][ \t]*)?(?:the[ \t]+)?(?:root[ \t]+cause|cause"
    r"|(?:actual|real|underlying)[ \t]+(?:problem|issue|cause)|problem|issue|bug|diagnosis"
    r"|what[ \t]+(?:was[ \t]+)?(?:went[ \t]+)?wrong|what[ \t]+was[ \t]+the[ \t]+(?:problem|issue|bug)"
    r"|why[ \t]+(?:it|this|the[ \t]+\w+)[ \t]+(?:failed|happened|broke))"
    r"[ \t]*[:?]?[ \t]*(?:\*\*)?[ \t]*[:?]?[ \t]*(?P<rest>[^\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)
_HEADING = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|\*\*[^*\n]+\*\*:?[ \t]*$)", re.MULTILINE)


def _under_cause_headings(text: str) -> list[str]:
    """The first sentence under each heading that names the cause (or after it on its line)."""
    found = []
    for m in _CAUSE_HEADING.finditer(text):
        body = m["rest"] + "\n" + text[m.end() :]
        nxt = _HEADING.search(body, len(m["rest"]) + 1)
        first = sentences(body[: nxt.start() if nxt else len(body)])[:1]
        if first:
            found.append(first[0])
    return found


def find(text: str) -> list[str]:
    """The diagnosis sentences of one agent message, strongest first."""
    low = text.lower()
    headed = _under_cause_headings(text) if ("#" in text or "**" in text) else []
    if not headed and (
        not any(w in low for w in _ANCHORS) or not (_FOUND.search(low) or _CONSTRAINT.search(low))
    ):
        return []  # most messages: one pass over the text, no sentence splitting
    sents = sentences(text)
    scored: list[tuple[int, int, str]] = []
    for s in headed:
        n = len(words(s))
        if s.rstrip().endswith(":") or re.match(r"\[[^\]]*\]\([^)]*\)\W*$", s):
            continue  # the list it announces, or a link: not the cause itself
        if 6 <= n <= 70 and not _HEDGE.search(s.lower()) and SPECIFIC.search(s):
            scored.append((-3, -1, clip(s, MAX_CHARS)))
    for i, s in enumerate(sents):
        if any(h in s for h in headed):
            continue  # read under its heading already
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
        if not SPECIFIC.search(said):
            continue  # names nothing ("I found the root cause of the issue")
        scored.append((-strength, i, clip(said, MAX_CHARS)))
    scored.sort()
    return [s for _, _, s in scored[:MAX_PER_MESSAGE]]


# the agent dropping what it thought earlier ("that wasn't the cause", "I was wrong about the
# DNS timeout", "the real issue is ...")
_RETRACTION = re.compile(
    r"\b(?:(?:that|this|it)(?:'s| is| was)(?:n'?t| not) (?:the (?:root )?(?:cause|issue|problem|culprit)"
    r"|it\b|what (?:is|was) (?:happening|going on))|wasn'?t (?:the (?:root )?(?:cause|issue|problem)"
    r"|it\b)|i was wrong|(?:my|the) (?:earlier|previous|initial|first|original) (?:guess|assumption"
    r"|theory|hypothesis|diagnosis|analysis|explanation) (?:was|is) (?:wrong|incorrect|mistaken"
    r"|not right)|red herring|ruled? (?:it |that |this )?out|not the (?:root )?cause"
    r"|the (?:real|actual) (?:root )?(?:cause|issue|problem|culprit) (?:is|was))"
)


def retracts(text: str) -> bool:
    """Whether an agent message drops a cause it gave earlier."""
    return _RETRACTION.search(text.lower()) is not None
