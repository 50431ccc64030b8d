"""What makes a clause a passing remark rather than a standing rule: a question, a
hypothetical, a hedge, a one-off limit ("for now", "in this PR", "for this"), the past tense,
a transient state ("the build is broken")."""

from __future__ import annotations

import re

TRANSIENT_RE = re.compile(
    r"\b(?:is|are)\s+(?:currently\s+|still\s+|now\s+|so\s+|really\s+|kind\s+of\s+)?(?:broken"
    r"|failing|down|slow|flaky|wrong|weird|red|green|passing|fine|ok|okay|done|ready|missing"
    r"|gone|outdated|empty|huge|a\s+mess|messed\s+up|not\s+working|out\s+of\s+date|stuck|dead"
    r"|offline|up|running|failed)\b"
)
QUESTION_RE = re.compile(
    r"(?:(?:should|shall|do|does|did|is|are|was|were|have|has|will|can|could|would|may|might)"
    r"\s+(?:we|you|i|they|it|he|she|this|that|these|those|the|there|our|my)\b"
    r"|(?:why|what|how|where|which|who|whom|whose|when)\s+(?:do|does|did|is|are|was|were|should"
    r"|would|can|could|will|shall|have|has|don'?t|doesn'?t|didn'?t|not|isn'?t|aren'?t|about|if)\b"
    r"|any\s+(?:idea|reason)|is\s+it\b|isn'?t\s+it\b)"
)
HYPOTHETICAL_RE = re.compile(
    r"\b(?:what\s+if|suppose|supposing|imagine|hypothetically|in\s+theory|i\s+wonder|wondering"
    r"|if\s+(?:i|we|you|it)\s+were|would\s+be\s+nice|would'?ve|could'?ve|should'?ve|we\s+could"
    r"|you\s+could|i\s+could|might\s+want|would\s+you|wouldn'?t|i'?d\s+rather\s+not\s+say)\b"
)
HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|probably|i\s+think|i\s+guess|i\s+believe|possibly|might|not\s+sure"
    r"|seems?|apparently|i\s+suspect)\b"
)
ONE_OFF_RE = re.compile(
    r"\b(?:for\s+now|this\s+time|right\s+now|for\s+the\s+moment|at\s+the\s+moment|temporarily"
    r"|today|tonight|just\s+this\s+once|for\s+this\s+(?:task|pr|ticket|issue|change|commit|one"
    r"|file|function|test|step|bug)|in\s+this\s+(?:pr|file|function|commit|branch|session|task"
    r"|test|method|class)|until\s+(?:i|we|the)|anything\s+else|everything\s+else|the\s+rest"
    r"|other\s+files|yet)\b"
)
FOR_THIS_RE = re.compile(r"\b(?:for|with|on)\s+(?:this|that|these|those|it)\W*$")
_IRREGULAR_PAST = (
    r"was|were|had|did|went|got|made|wrote|ran|took|saw|thought|knew|told|said|found|forgot"
    r"|broke|chose|gave|left|kept|meant|sent|built|bought|brought|caught|felt|lost|paid|spent"
    r"|understood|began|came|became|drove|fell|grew|heard|hid|stood|taught|threw|woke|wore|used"
)
PAST_RE = re.compile(
    r"\b(?:used\s+to\b(?<!is\sused\sto)(?<!are\sused\sto)(?<!be\sused\sto)|previously|back\s+then"
    r"|in\s+the\s+past|ago|last\s+(?:week|month|year|time|sprint)|yesterday|earlier"
    r"|originally|at\s+first|before\s*$"
    r"|(?:i|we|you|they|he|she|it)\s+(?:(?:never|always|just|really|already|also|even|actually"
    r"|recently|all|both|once)\s+)*(?:\w+(?<!e)(?<!ne)ed|" + _IRREGULAR_PAST + r")\b)"
)
PAST_WORD_RE = re.compile(r"(?:\w+(?<!e)ed|" + _IRREGULAR_PAST + r"|been)$")
