"""What a user's reply does to the task at hand: corrects the assistant, switches to a new
task, or carries on with it; and the words that say what a message is about.

* ``is_new_task`` wins over ``is_continuation`` ("ok, now let's ..." is a new task), and "next"
  alone is a new task ("next step" is not). "can you also look at X" is neither: the caller's
  topic overlap decides.
"""

from __future__ import annotations

import re

from reos_memory.squirrel.text.frustration import MILD
from reos_memory.squirrel.text.phrases import SEPARATORS, Message, Phrases, as_message
from reos_memory.squirrel.text.prose import wordset
from reos_memory.squirrel.text.success import success

_I = re.IGNORECASE

_NOT_A_CORRECTION_AFTER_NO = wordset(
    "problem problems worries worry rush thanks thank biggie prob probs big"
)
_CORRECTION_START = Phrases(
    "nope|nah|wrong|incorrect|actually|revert|undo|rollback|don't|dont|never|stop",
    "do not",
    "not that|this|quite|exactly|what|like|there|the|those|these|in|on|with|to|a|an|my|your|it",
    "that's|thats|this's|it's wrong|incorrect",
    "that's|thats|it's not right|correct|it|what|how|the|quite",
    "that's|thats|it's the wrong",
    "that|this|it is|was wrong|incorrect",
    "that|this|it is|was not right|correct|it|what|how|the|quite",
    "you misunderstood|broke|deleted|removed|changed|forgot|missed|ignored|reverted",
    "you got it wrong",
    "i said|meant|wanted",
    "i asked to|for",
    "i asked you to|for",
    "i told you",
    "i didn't|don't ask|say|want|mean",
    "i did|do not ask|say|want|mean",
    "please don't|dont|stop|never|revert|undo",
    "please do not",
    "hold on",
    "roll back",
    "put|change it|that|them back",
    "go back to",
    "why did you",
)
_NOT_COMMA = re.compile(r"^\W*not [^\s,.;]+(?: [^\s,.;]+)?,", _I)
_WAIT = re.compile(r"^\W*wait\s*[,.!-]", _I)


def _correction(message: Message) -> bool:
    tokens = message.tokens
    if not tokens:
        return False
    first = tokens[0]
    if first == "no":
        hit = len(tokens) == 1 or tokens[1] not in _NOT_A_CORRECTION_AFTER_NO
    elif first == "not" and tokens[1:2] and tokens[1] in ("bad", "sure", "yet", "really", "now"):
        hit = False
    else:
        hit = (
            _CORRECTION_START.at(tokens, 0)
            or "instead" in message.vocabulary
            or (first == "not" and bool(_NOT_COMMA.match(message.prose)))
            or (first == "wait" and bool(_WAIT.match(message.prose)))
        )
    return hit and not success(message)


def is_correction(text: str) -> bool:
    """Whether a user message corrects the assistant ("no, use X", "I said ...", "revert that")."""
    return _correction(as_message(text))


_ACK_WORDS = wordset(
    "ok okay k kk alright yes yep yeah yup sure right great perfect good nice cool awesome "
    "excellent thanks thank thx ty you done fine got it go ahead on for continue proceed do "
    "please sounds lgtm looks carry keep going next step y yes all"
)
_LEADING_ACK = wordset(
    "ok okay k kk alright right yes yep yeah yup sure great perfect good nice cool awesome "
    "excellent thanks thank thx ty you done fine got it all right so"
)
_NEW_TASK = Phrases(
    "next !step",
    "new|a task|thing|question|issue|feature|bug|topic|request|problem",
    "a new|different|separate task|thing|question|issue|feature|bug|topic|request|problem",
    "moving|move on",
    "let's|lets move|switch|turn",
    "another thing|task|question|issue|problem|topic",
    "unrelated",
    "on an unrelated",
    "different|separate topic|question|task|issue|problem|thing",
    "switch|switching to|gears|topic|topics",
    "change of plan|plans|topic",
    "now let's|lets|let",
    "let's|lets now|work|start",
    "i have|i've|ive another|a new|a different",
    "i've|ive got another|a new|a different",
    "something else",
    "task 0|1|2|3|4|5|6|7|8|9|10|11|12",
)
_CONTINUATION_START = Phrases(
    "also|and|but|plus|then|still|again|same|retry|continue|proceed|it|that|this|these|those|they"
    "|them|here|it's|that's|here's|they're|both|neither|either|ok|okay|yes|yep|yeah|yup|sure|thanks"
    "|thank|thx|ty|great|perfect|good|nice|cool|awesome|hmm|hm|alright",
    "try again|it|that|this",
    "go ahead",
    "keep going",
    "what|how about",
    "what if",
    "why did|didn't|not",
    "did|have|has|does|is|are|was|were you|it|that|this|they",
    "did|have|has|does|is|are|was|were the test|tests|build|ci|fix",
    "the same",
    "the first|second|third|last|latter|former|other|previous one|option|approach",
    "first|second|third|last|latter|former|other|previous one|option|approach",
    "option|choice ...",
    "none of",
    "all of them",
)


def _skip_acks(tokens: list[str]) -> int:
    index = 0
    while index < len(tokens) and tokens[index] in _LEADING_ACK:
        index += 1
    return index


def _new_task(message: Message) -> bool:
    tokens = message.tokens
    start = _skip_acks(tokens)
    # the ack words themselves may start a cue: "all right, next"
    return _NEW_TASK.at(tokens, start) or (start > 0 and _NEW_TASK.at(tokens, 0))


def is_new_task(text: str) -> bool:
    """Whether a user message explicitly switches to another task ("next", "moving on" ...)."""
    return _new_task(as_message(text))


def is_continuation(text: str) -> bool:
    """Whether a user message carries on the current task: an ack, a follow-up, a correction."""
    message = as_message(text)
    tokens = message.tokens
    if _new_task(message):
        return False
    if not tokens:
        return bool(message.prose.strip())  # "👍", "?"
    if len(tokens) <= 4 and message.vocabulary <= _ACK_WORDS:
        return True
    if len(tokens) == 1 and len(tokens[0]) == 1:
        return True  # an answer to a choice: "a", "2"
    return bool(
        _CONTINUATION_START.at(tokens, 0)
        or _correction(message)
        or success(message)
        or MILD.search(tokens, message.vocabulary)
    )


_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren arent as at be because
    been before being below between both but by can cannot cant could couldn couldnt did didn
    didnt do does doesn doesnt doing don dont down during each few for from further had hadn
    hadnt has hasn hasnt have haven havent having he her here hers herself him himself his how i
    if in into is isn isnt it its itself just let lets me more most mustn my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same shan she should
    shouldn shouldnt so some such than that thats the their theirs them themselves then there
    theres these they theyre this those through to too under until up very was wasn wasnt we
    were weren what whats when where which while who whom why will with won wont would wouldn
    wouldnt you youd youll youre youve your yours yourself yourselves im ive id ill okay yes
    yeah yep sure thanks thank please pls can could would want need like make made get got use
    used using try tried run ran see look looking check fix add change update work works working
    still also now well actually really maybe thing things stuff something anything everything
    way one two new next again too much many lot bit able know think go going gonna done do
    doing does did ok hey hello hi sorry good great nice cool perfect right wrong
"""
_STOPWORDS = wordset(_STOPWORD_TEXT)


def content_words(text: str) -> set[str]:
    """Lower-cased words of a message minus stopwords and numbers, each at least 3 letters long."""
    words = text[:4096].lower().translate(SEPARATORS).split()
    return {
        word
        for word in words
        if len(word) >= 3 and word not in _STOPWORDS and not word[0].isdigit() and word[0] != "_"
    }


def topic_overlap(a: set[str], b: set[str]) -> float:
    """Overlap coefficient |a & b| / min(|a|, |b|); 0.0 when either set is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))
