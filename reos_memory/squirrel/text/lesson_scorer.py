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
from collections.abc import Callable, Mapping
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


def _phrases(text: str) -> frozenset[str]:
    """Phrases separated by "|": words and runs of up to three words, lowercase."""
    return frozenset(text.split("|"))


# cue groups, each a feature alone and again when the user says it: found among the sentence's
# words and its runs of two and three words (one tokenisation, set lookups: ingest runs this on
# every sentence of every message)
_CUES: dict[str, frozenset[str]] = {
    "modal_strong": _phrases("always|never|must|mustn't|shall"),
    "modal_should": _phrases("should|shouldn't|ought to|need to|needs to|have to|has to"),
    "negation": _phrases(
        "don't|do not|doesn't|does not|didn't|did not|not|no|won't|can't|cannot|isn't|aren't|wasn't"
    ),
    "contrast": _phrases("instead|rather than|but|however|only|except|unless"),
    "prefer": _phrases("prefer|preferred|better|avoid|recommend|recommended"),
    "causal": _phrases(
        "because|since|due to|cause|causes|caused|reason|why|so that|which means|means that"
    ),
    "finding": _phrases(
        "found|turns out|actually|root cause|the issue|the problem|the bug|the culprit|it seems"
        "|appears|realized|noticed"
    ),
    "constraint": _phrases(
        "not supported|unsupported|ignored|override|overrides|overridden|merge|merges|merged"
        "|require|requires|required|fail|fails|break|breaks|silently"
    ),
    "narration": _phrases(
        "let me|i'll|i will|i'm going to|now i|i need to|i see|i can see|looking at|checking"
        "|let's check|first i"
    ),
    "status": _phrases(
        "all tests pass|tests pass|passing|done|complete|completed|successfully|fixed"
        "|implemented|updated|added|created|perfect|great"
    ),
    "convention": _phrases("convention|pattern|rule|policy|standard|idiomatic|by default|default"),
    "person1": _phrases("i|me|my|i'm|i've|i'd"),
    "person_we": _phrases("we|our|us|let's"),
    "person_you": _phrases("you|your"),
    "hedge": _phrases("maybe|perhaps|might|probably|i think|not sure|could"),
}
# cues of the sentence's first words
_OPENS: dict[str, frozenset[str]] = {
    "chat_open": _phrases(
        "ok|okay|sure|yes|yeah|no|great|perfect|thanks|thank you|hmm|uh|oh|wait|good|nice|cool"
        "|alright|right|now"
    ),
    "imperative": _phrases(
        "use|add|don't|do not|never|always|make|keep|run|avoid|prefer|remove|check|move|put"
        "|change|write|call|pass|set|let|ensure|return|store|read|create|delete|rename|replace"
        "|update|fix|try|stop|only"
    ),
    "plan_item": _phrases("first|then|next|finally"),
    "question_word": _phrases("why|what|how|can|could|would|should|is|are|do|does|did|will|shall"),
}
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBERED = re.compile(r"\d+[.)]|step \d", re.I)


def _grams(tokens: list[str]) -> set[str]:
    """The words of a sentence and its runs of two and three words."""
    grams = set(tokens)
    grams.update(" ".join(tokens[i : i + 2]) for i in range(len(tokens) - 1))
    grams.update(" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2))
    return grams


def _opening(tokens: list[str]) -> set[str]:
    """The first word and the first two (after a "please")."""
    if tokens[:1] == ["please"]:
        tokens = tokens[1:]
    return set(tokens[:1]) | {" ".join(tokens[:2])}


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


def _cheap(s: Said) -> dict[str, bool | float]:
    """The cues read from the sentence's words and shape alone."""
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
    tokens = _TOKEN.findall(text.lower())
    grams = _grams(tokens)
    opening = _opening(tokens)
    hits = {name: not cue.isdisjoint(grams) for name, cue in _CUES.items()}
    hits |= {name: not cue.isdisjoint(opening) for name, cue in _OPENS.items()}
    hits["plan_item"] = hits["plan_item"] or bool(_NUMBERED.match(text))
    for name, hit in hits.items():
        f[name] = hit
        f["u_" + name] = hit and user
    f["code"] = min(3, len(_CODE.findall(text))) / 3
    f["path"] = bool(_PATH.search(text))
    f["ident"] = bool(_IDENT.search(text))
    f["digits"] = bool(_DIGIT.search(text))
    return f


# the cues the other rules of this package read, each costlier than all of `_cheap`: name ->
# (read in the user's words only, the rule)
_RULES: dict[str, tuple[bool, Callable[[str], bool]]] = {
    "diag": (False, lambda text: bool(diagnosis(text))),
    "u_diag": (True, lambda text: bool(find_in_users_words(text))),
    "correction": (True, is_correction),
    "chat": (False, opens_with_chat),
    "lost": (False, lost_subject),
    "oneoff": (False, lambda text: one_off(text) is not None),
}


def _read(s: Said) -> dict[str, bool]:
    """The cues of `_RULES` (false where a cue of the user's words meets the agent's)."""
    user = s.role == "user"
    return {
        name: (user or not users_only) and rule(s.sentence)
        for name, (users_only, rule) in _RULES.items()
    }


def features(s: Said) -> dict[str, float]:
    """The named cues of one sentence, each 0..1 (`bias` always 1)."""
    return {k: float(v) for k, v in (_cheap(s) | _read(s)).items()}


def _z(f: Mapping[str, bool | float], weights: Mapping[str, float]) -> float:
    return sum(weights.get(k, 0.0) * v for k, v in f.items())


def _probability(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def score(s: Said, weights: dict[str, float] = WEIGHTS) -> float:
    """The model's probability that the sentence holds a lesson."""
    return _probability(_z(_cheap(s), weights) + _z(_read(s), weights))


def _reaches(s: Said, threshold: float, weights: dict[str, float]) -> float | None:
    """The sentence's score if it reaches `threshold`, else None; the costlier cues are read
    only when their most favourable values could still carry it there (the same answer)."""
    z = _z(_cheap(s), weights)
    user = s.role == "user"
    most = sum(
        max(0.0, weights.get(name, 0.0))
        for name, (users_only, _) in _RULES.items()
        if user or not users_only
    )
    if _probability(z + most) < threshold:
        return None
    p = _probability(z + _z(_read(s), weights))
    return p if p >= threshold else None


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
    weights: dict[str, float] = WEIGHTS,
) -> list[tuple[str, float]]:
    """A message's sentences that score at least `threshold`, best first, at most
    MAX_PER_MESSAGE, each with its score (rounded)."""
    scored: list[tuple[float, str]] = []
    for s in said(text, role, origin):
        p = _reaches(s, threshold, weights)
        if p is not None:
            scored.append((p, s.sentence))
    scored.sort(key=lambda t: -t[0])
    return [(x, round(p, 3)) for p, x in scored[:MAX_PER_MESSAGE]]
