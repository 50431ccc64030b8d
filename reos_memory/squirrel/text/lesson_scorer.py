"""How much a sentence of a conversation reads like something to write down for the next session:
a small logistic model over how the sentence is said, never over what it is about.

The features are language cues: who says it (the user, the agent, the reason of a rejection),
its length and place in its message, rule words ("always", "should", "instead"), causes
("because", "the problem is"), constraints ("is not supported", "silently"), the agent's
narration of its own work ("let me", "now I"), status lines ("all tests pass"), hedges, openers of
conversation, questions, named code, and what the other rules of this package already read
(a correction, a diagnosis, a subject lost to the sentence before). No word of any project.

The weights are learned by `tools/train_lesson_scorer.py` from part 1 of a development set of
real sessions with the memories a developer would have written (which sentences hold one) and
checked on part 2, which the training never reads; they live in `lesson_weights.py`, generated
by that tool, with the figures of the fit. The model ships numbers only, no text of the data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import NamedTuple

from reos_memory.squirrel.text.diagnosis import find as diagnosis
from reos_memory.squirrel.text.diagnosis import find_in_users_words
from reos_memory.squirrel.text.lesson_form import lost_subject, one_off, opens_with_chat
from reos_memory.squirrel.text.lesson_weights import THRESHOLD, WEIGHTS
from reos_memory.squirrel.text.prose import sentences
from reos_memory.squirrel.text.replies import is_correction

MIN_CHARS = 12
MAX_CHARS = 400
MAX_PER_MESSAGE = 2


def _words(alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + alternatives + r")\b", re.I)


# cue groups, each a feature alone and again when the user says it
_CUES: dict[str, re.Pattern[str]] = {
    "modal_strong": _words(r"always|never|must|mustn't|shall"),
    "modal_should": _words(r"should(?:n't)?|ought to|needs? to|have to|has to"),
    "negation": _words(
        r"don't|do not|doesn't|does not|didn't|did not|not|no|won't|can't|cannot|isn't|aren't"
        r"|wasn't"
    ),
    "contrast": _words(r"instead|rather than|instead of|but|however|only|except|unless"),
    "prefer": _words(r"prefer|preferred|better|avoid|recommend(?:ed)?"),
    "causal": _words(
        r"because|since|due to|caus(?:e|es|ed)|reason|why|so that|which means|means that"
    ),
    "finding": _words(
        r"found|turns out|actually|root cause|the (?:issue|problem|bug|culprit)|it seems|appears"
        r"|realized|noticed"
    ),
    "constraint": _words(
        r"not supported|unsupported|ignored|overrid(?:e|es|den)|merge[sd]?|requires?|required"
        r"|fails?|breaks?|silently"
    ),
    "narration": _words(
        r"let me|i'll|i will|i'm going to|now i|i need to|i see|i can see|looking at|checking"
        r"|let's check|first,? i"
    ),
    "status": _words(
        r"all tests pass|tests pass|passing|done|complete[d]?|successfully|fixed|implemented"
        r"|updated|added|created|perfect|great"
    ),
    "convention": _words(r"convention|pattern|rule|policy|standard|idiomatic|by default|default"),
    "person1": _words(r"i|me|my|i'm|i've|i'd"),
    "person_we": _words(r"we|our|us|let's"),
    "person_you": _words(r"you|your"),
    "hedge": _words(r"maybe|perhaps|might|probably|i think|not sure|could"),
    "chat_open": re.compile(
        r"^(?:ok(?:ay)?|sure|yes|yeah|no|great|perfect|thanks|thank you|hmm|uh|oh|wait|good"
        r"|nice|cool|alright|right|now)\b",
        re.I,
    ),
    "imperative": re.compile(
        r"^(?:please\s+)?(?:use|add|don't|do not|never|always|make|keep|run|avoid|prefer|remove"
        r"|check|move|put|change|write|call|pass|set|let|ensure|return|store|read|create|delete"
        r"|rename|replace|update|fix|try|stop|only)\b",
        re.I,
    ),
    "plan_item": re.compile(r"^(?:step \d|\d+[.)]|first|then|next|finally)\b", re.I),
    "question_word": re.compile(
        r"^(?:why|what|how|can|could|would|should|is|are|do|does|did|will|shall)\b", re.I
    ),
}
_CODE = re.compile(r"`[^`]+`")
_PATH = re.compile(r"\b[\w.-]+/[\w./-]+|\b\w+\.(?:[a-z]{1,4})\b")
_IDENT = re.compile(r"\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|\b\w+_\w+\b|\w+\(\)")
_DIGIT = re.compile(r"\d")


class Said(NamedTuple):
    """One sentence of a message and where it stands: `role` user or assistant, `origin` the
    event's (a rejection's reason is "rejection"), its `position` (from 0) among the
    message's `of` sentences, `message_chars` the whole message's length."""

    sentence: str
    role: str
    origin: str | None
    position: int
    of: int
    message_chars: int


def features(s: Said) -> dict[str, float]:
    """The named cues of one sentence, each 0..1 (`bias` always 1)."""
    text = s.sentence
    user = s.role == "user"
    n = len(text.split())
    end = text.rstrip()
    f: dict[str, bool | float] = {
        "bias": 1.0,
        "user": user,
        "rejection": s.origin == "rejection",
        "len": math.log1p(n) / 4,
        "short": n < 6,
        "long": n > 40,
        "first": s.position == 0,
        "last": s.position == s.of - 1,
        "solo": s.of == 1,
        "msg_len": math.log1p(s.message_chars) / 8,
        "q": end.endswith("?"),
        "excl": end.endswith("!"),
        "colon_end": end.endswith(":"),
    }
    for name, cue in _CUES.items():
        hit = bool(cue.search(text))
        f[name] = hit
        f["u_" + name] = hit and user
    f["code"] = min(3, len(_CODE.findall(text))) / 3
    f["path"] = bool(_PATH.search(text))
    f["ident"] = bool(_IDENT.search(text))
    f["digits"] = bool(_DIGIT.search(text))
    f["diag"] = bool(diagnosis(text))
    f["u_diag"] = user and bool(find_in_users_words(text))
    f["correction"] = user and is_correction(text)
    f["chat"] = opens_with_chat(text)
    f["lost"] = lost_subject(text)
    f["oneoff"] = one_off(text) is not None
    return {k: float(v) for k, v in f.items()}


def score(s: Said, weights: dict[str, float] = WEIGHTS) -> float:
    """The model's probability that the sentence holds a lesson."""
    z = sum(weights.get(k, 0.0) * v for k, v in features(s).items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def said(text: str, role: str, origin: str | None = None) -> list[Said]:
    """The sentences of one message the model reads (prose, of a sentence's length)."""
    sents = sentences(text)
    return [
        Said(x, role, origin, i, len(sents), len(text))
        for i, x in enumerate(sents)
        if MIN_CHARS <= len(x) <= MAX_CHARS
    ]


def best(
    text: str,
    role: str,
    origin: str | None = None,
    threshold: float = THRESHOLD,
    scorer: Callable[[Said], float] = score,
) -> list[tuple[str, float]]:
    """A message's sentences that score at least `threshold`, best first, at most
    MAX_PER_MESSAGE, each with its score (rounded)."""
    scored = [(scorer(s), s.sentence) for s in said(text, role, origin)]
    scored = [(p, x) for p, x in scored if p >= threshold]
    scored.sort(key=lambda t: -t[0])
    return [(x, round(p, 3)) for p, x in scored[:MAX_PER_MESSAGE]]
