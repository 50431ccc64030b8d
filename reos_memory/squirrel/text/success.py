"""A user saying the problem is solved ("works now", "that fixed it", "finally!")."""

from __future__ import annotations

import re

from reos_memory.squirrel.text.phrases import Message, Phrases, as_message

_SUCCESS_WINDOW = 40  # words; a long task description that mentions "works" is no success cue
_SUCCESS = Phrases(
    "it|that|this|everything|all works|worked|working !on|by|with|like|as|for|when|if|the|but|in"
    "|out|through|around",
    "it's|that's|everything's working|fixed|solved|green|passing",
    "it|that|this|everything is|all working|fixed|solved|green|passing",
    "works|working|passes|passing|runs|green|compiles|builds now",
    "that|this|it fixed|solved it|that|this",
    "that|this|it did the trick|job|it",
    "that|this|it fixed|solved the problem|issue|bug",
    "fixed|solved it",
    "perfect|awesome|excellent|lgtm|yay|hooray|woohoo",
    "finally works|working|passes|passing|passed|green|fixed|compiles|builds",
    "nailed it",
    "looks good|great",
    "works great|perfectly|fine|well",
    "works like a charm",
    "great|nice|cool|sweet|brilliant|amazing|yes|wonderful|thanks|thank"
    " ... thanks|thank|thx|ty|works|worked",
    "all|the test|tests pass|passing|passed|green",
    "all|the pass|passing|passed|green",
    "test|tests pass|passes|passed now",
)
_SUCCESS_BLOCK = Phrases(
    "doesn't|didn't|isn't|won't|wasn't|don't|can't|aren't|haven't|hasn't|couldn't"
    " ... work*|help*|fix*|pass*|compil*|build*|run*|solv*|chang*",
    "not ... work*|fix*|pass*|perfect|great|good|quite|yet|solved|green",
    "no longer",
    "never|broken|broke|fails|failed|failing|crash|crashes|crashing|crashed|wrong",
    "still ... fail*|broken|error*|crash*|wrong|not|doesn't|isn't|won't|get*|see*|red|same",
    "a|an|the|new|another|same|this error|errors|exception",
    "if|whether|until|ensure|check|verify|once|when|how|should|unless ... work*|pass*|green"
    "|perfect",
    "make sure ... work*|pass*|green",
    "so that ... work*|pass*|green",
)
_SUCCESS_START = Phrases(  # a message that opens with the verb: "works!", "worked, thanks"
    "works|worked|working !on|by|with|like|as|for|when|if|the|but|in|out|through|around"
)
# "finally!" is relief; "Finally, add a changelog entry" is the last step of a list
_FINALLY = re.compile(r"^\W*finally\s*(?:[!.]|$)", re.IGNORECASE)


def success(message: Message) -> bool:
    if message.success is None:
        message.success = _says_success(message)
    return message.success


def _says_success(message: Message) -> bool:
    tokens = message.tokens[:_SUCCESS_WINDOW]
    if not tokens:
        return False
    vocabulary = frozenset(tokens) if len(message.tokens) > _SUCCESS_WINDOW else message.vocabulary
    hit = (
        _SUCCESS.search(tokens, vocabulary)
        or _SUCCESS_START.at(tokens, 0)
        or (tokens[0] == "finally" and bool(_FINALLY.match(message.prose)))
    )
    if not hit:
        return False
    lower = message.lower
    if "error:" in lower or "work?" in lower or "works?" in lower:
        return False
    return not _SUCCESS_BLOCK.search(tokens, vocabulary)


def success_cue(text: str) -> bool:
    """Whether a user message says the problem is solved ("works now", "that fixed it", ...)."""
    return success(as_message(text))
