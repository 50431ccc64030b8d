"""How a rule opens: the prefixes that qualify it ("please", "from now on", "in this repo",
"note that", "the convention is", "I want you to") and the words that give it its form ("never",
"don't", "always", "prefer", "we use", "our X is", "X must always"). Reading them fills a
`State`: durable or not, its scope, a prohibition, and the words the memory text starts with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reos_memory.squirrel.text.passing_remarks import PAST_WORD_RE, TRANSIENT_RE
from reos_memory.squirrel.text.prose import wordset
from reos_memory.squirrel.text.rule_scope import GLOBAL_PREFIX_RE, PROJECT_PREFIX_RE

# words that open a turn of conversation and say nothing of a rule after them (`lesson_form`
# strips these and more from a memory's text: "no", "note", "right" open rules here)
CHAT_OPENERS = (
    r"ok(?:ay)?|so|also|and(?:\s+also)?|but|btw|by\s+the\s+way|oh(?:\s+and)?|hey|yeah|yep|yes"
    r"|alright|well|hmm+|one\s+more\s+thing|important|reminder|nb|fwiw"
)
_LEAD_RE = re.compile(r"(?:(?:" + CHAT_OPENERS + r")\b[\s,:;!.-]*|[\s,:;!.*\u2014\u2013-]+)*")
_POLITE_RE = re.compile(
    r"(?:(?:can|could|would)\s+you(?:\s+(?:please|pls|kindly))?|please|pls|plz|kindly)\s*,?\s+"
)
DURABLE_PREFIX_RE = re.compile(
    r"(?:from\s+now\s+on|from\s+here\s+on(?:\s+out)?|going\s+forward|moving\s+forward"
    r"|in\s+(?:the\s+)?future|henceforth|for\s+future\s+reference|from\s+this\s+point(?:\s+on)?"
    r"|as\s+a\s+(?:general\s+)?rule|in\s+general|generally)\b[\s,:-]*"
)
_MAKE_SURE_RE = re.compile(r"(?:make\s+sure|be\s+sure|ensure)(?:\s+that)?(?:\s+(?:to|you|we))?\s+")
_DECIDED_RE = re.compile(
    r"we(?:'ve|\s+have)?\s+(?:(?:decided|agreed)\s+(?:to|that|on)|settled\s+on)\s+"
)
# how a person addressed is told what to do ("you should", "we need to")
MODALS = r"should|must|need\s+to|have\s+to|ought\s+to"
_MODAL_RE = re.compile(
    r"(?:you|we)\s+(?:(?:" + MODALS + r"|shall)(?P<always>\s+always)?"
    r"|always\s+(?:need\s+to|have\s+to|must|should))\s+(?!not\b|never\b)"
)
_MODAL_NEG_RE = re.compile(
    r"(?:you|we)\s+(?:(?P<strong>must|shall)\s+not|mustn'?t|(?:should|need\s+to|ought\s+to)\s+not"
    r"|shouldn'?t|(?P<never>(?:should|must|shall)\s+never))(?P<ever>\s+ever)?\s+"
)
_REMEMBER_TO_RE = re.compile(r"(?:remember|don'?t\s+forget|do\s+not\s+forget)\s+to\s+")
_FACT_PREFIX_RE = re.compile(
    r"(?:remember|keep\s+in\s+mind|note|be\s+aware|fyi|heads\s+up|for\s+context"
    r"|for\s+(?:your|the)\s+(?:info|information|reference))"
    r"(?:\s*[,:-]\s*(?:that\s+)?|\s+that\s+)|fyi\s+"
)
_CONVENTION_RE = re.compile(
    r"(?:(?:the|our)\s+(?:convention|rule|standard|policy|norm|practice|house\s+style)"
    r"(?:\s+(?:here|in\s+this\s+(?:repo|project|codebase)))?\s*(?:is|:)"
    r"|(?P<colon>(?:convention|rule|policy)\s*:))\s*(?:(?P<conn>that|to)\s+)?"
)
_I_ALWAYS_RE = re.compile(
    r"i\s+always\s+(?:(?P<you>(?:want|need|expect)\s+you\s+to)\s+|(?P<want>want|like|need)\s+"
    r"|(?=use|prefer|run))"
)
_I_WANT_RE = re.compile(
    r"i\s+(?:(?P<neg>never|don'?t|do\s+not)\s+)?(?:really\s+)?(?:want|need|expect)\s+"
    r"(?P<you>you\s+to\s+)?"
)
_YOU_DIDNT_RE = re.compile(r"(?:didn'?t|did\s+not|wouldn'?t|would\s+not|don'?t|do\s+not|not)\s+")
_I_PREFER_RE = re.compile(
    r"i(?:'d|\s+would)?\s+(?:always\s+|really\s+|generally\s+|strongly\s+)?prefer\s+"
    r"(?:(?:that|if|when|it\s+when)\s+)?(?P<you>you\s+(?:to\s+)?)?"
)

_NO_MORE_RE = re.compile(r"no\s+more\s+")
_NO_RE = re.compile(r"no\s+")
_NO_STOP = wordset("one way need problem worries thanks idea clue luck rush biggie i you it")
_NEVER_RE = re.compile(r"(?:never(?:\s+ever)?|(?:don'?t|dont|do\s+not)\s+ever)\s+")
_DONT_RE = re.compile(r"(?:don'?t|dont|do\s+not)\s+(?:you\s+(?:dare\s+|ever\s+)?(?=\w))?")
_ALWAYS_RE = re.compile(r"always\s+")
_STOP_RE = re.compile(r"(?:stop|quit)\s+(?=\w+ing\b)")
_AVOID_RE = re.compile(r"avoid\s+")
_PREFER_RE = re.compile(r"prefer\s+")
_WE_ALWAYS_RE = re.compile(r"we\s+(?P<adv>always|never)\s+")
_WE_DONT_RE = re.compile(r"we\s+(?:don'?t|dont|do\s+not)\s+")
_WE_USE_RE = re.compile(
    r"(?:we(?:'re|\s+are)?\s+(?:only\s+|mostly\s+|mainly\s+|now\s+)?(?:use|using)"
    r"|we\s+standardi[sz]ed?\s+on|we\s+(?:stick|stuck)\s+(?:to|with)|we\s+go\s+with)\s+"
)
_PROJECT_USES_RE = re.compile(
    r"(?:this|the)\s+(?:project|repo(?:sitory)?|codebase|app|service)\s+"
    r"(?:uses|is\s+using|runs\s+on|targets|is\s+built\s+(?:on|with)|requires)\s+"
)
_WE_SWITCHED_RE = re.compile(
    r"we(?:'ve|\s+have)?\s+(?:recently\s+|now\s+|just\s+|finally\s+)?(?:switched|moved|migrated)\b"
)
_OUR_RE = re.compile(
    r"our\s+(?!own\b)[\w./ -]{1,40}?\s+(?:is|are|lives?|runs?|uses?|goes|go|sits?|should|must"
    r"|needs?\s+to|has\s+to|have\s+to)\b"
)
SUBJECT = r"(?!(?:it|this|that|these|those|there|they|he|she|i|you|we|what|which|who)\b)"
_SUBJECT_MODAL_RE = re.compile(
    SUBJECT + r"[\w`'\"./()_ -]{2,60}?\s+(?:"
    r"(?P<neg>(?:must|should|shall|may|can|are|is)\s+(?:never|not\s+ever)"
    r"|must\s+not|mustn'?t|shall\s+not|(?:are|is)\s+not\s+allowed\s+to"
    r"|(?:aren'?t|isn'?t)\s+allowed\s+to)"
    r"|(?:must|should|shall|needs?\s+to|has\s+to|have\s+to)\s+always"
    r"|always\s+(?:has|have|needs?)\s+to)\b"
)
_ALL_MUST_RE = re.compile(
    r"(?:all|every|each|any)\s+[\w`'\"./_ -]{1,50}?\s+(?:must|should|need\s+to|needs\s+to"
    r"|has\s+to|have\s+to)\s+(?P<neg>not\b|never\b)?"
)
_NEVER_STOP = wordset(
    "mind again heard seen knew thought worked works got had been was were did really "
    "happens ends understood"
)
_DONT_STOP = wordset(
    "worry mind bother know think care understand see remember get need have feel "
    "hesitate panic stress like want mean believe be really agree even expect recall "
    "quite fully forget"
)
_ALWAYS_STOP = wordset(
    "a an the is was has had been same there it this that so good nice fun fails failing "
    "breaks works happens forget get gets seems like true ends"
)
_WE_STOP = wordset(
    "get got have had hit see saw forget end run struggle fail lose seem know need want "
    "care think understand use"
)
# Words that make a plain instruction durable ("remember to ... before every release").
CUE_RE = re.compile(
    r"\b(?:always|never|ever|anymore|any\s+more|again|whenever|every|each"
    # (not a time of this task: "before this is done", "after that", "when it's ready")
    r"|(?:after|before|when)(?!\s+(?:this|that|it|it's|then|now)\b))\b"
)
WORD_RE = re.compile(r"[a-z][a-z0-9'_-]*")


@dataclass
class State:
    durable: bool
    glob: bool
    project: bool
    pref: bool = False
    fact: bool = False
    convention: str | None = None  # "", "to", "that" ("the convention is to ...") or "colon"
    needs_cue: bool = False  # "remember to", "you should", "I want you to": durable only with a cue
    lead: str = ""  # words put before the copied body ("Never ", "Use ")
    prohibition: bool = False


def skip_lead(low: str, i: int) -> int:
    m = _LEAD_RE.match(low, i)
    return m.end() if m else i


def _next_word(low: str, i: int) -> str:
    m = WORD_RE.match(low, i)
    return m.group() if m else ""


def read_prefixes(low: str, i: int, st: State) -> int:
    """Consume "please", "from now on", "in this repo", "note that" ... and note what they imply."""
    for _ in range(8):
        if m := _POLITE_RE.match(low, i):
            pass
        elif m := DURABLE_PREFIX_RE.match(low, i):
            st.durable = True
        elif m := GLOBAL_PREFIX_RE.match(low, i):
            st.glob = st.durable = True
        elif m := PROJECT_PREFIX_RE.match(low, i):
            st.project = True
            st.durable = st.durable or not m.group().startswith("here")
        elif m := _DECIDED_RE.match(low, i):
            st.durable = True
        elif m := _MAKE_SURE_RE.match(low, i):
            st.needs_cue = not st.durable
            if not m.group().rstrip().endswith((" to", " you", " we")) and not st.lead:
                st.lead = "Make sure "  # ("make sure the tests pass ...": a clause, no order)
        elif m := _MODAL_RE.match(low, i):
            if m.group("always") or m.group().startswith(("you always", "we always")):
                st.durable = True
                st.lead = "Always "
            else:
                st.needs_cue = not st.durable
        elif m := _REMEMBER_TO_RE.match(low, i):
            st.needs_cue = not st.durable
        elif m := _FACT_PREFIX_RE.match(low, i):
            st.fact = True
        elif m := _CONVENTION_RE.match(low, i):
            st.durable = True
            st.convention = m.group("conn") or ("colon" if m.group("colon") else "")
            if m.group("colon"):
                st.lead = m.group("colon").capitalize() + " "
        elif m := _I_ALWAYS_RE.match(low, i):
            if _i_always(m, st):
                return m.end()
        elif m := _I_WANT_RE.match(low, i):
            if _i_want(m, st):
                return m.end()
        else:
            break
        i = skip_lead(low, m.end())
    return i


def _i_always(m: re.Match[str], st: State) -> bool:
    """ "I always use ..." is a rule in all projects; "I always want ..." is the user's wish, and
    its object is the body (True)."""
    st.glob = st.durable = True
    if m.group("want"):
        st.pref = True
        verb = {"want": "wants", "like": "likes", "need": "needs"}[m.group("want")]
        st.lead = f"The user always {verb} "
        return True
    st.lead = "Always "
    return False


def _i_want(m: re.Match[str], st: State) -> bool:
    """ "I (don't) want you to ..." is an instruction; "I (don't) want ..." a wish, whose object is
    the body (True). Only "never" makes either durable without a cue."""
    neg = m.group("neg")
    st.prohibition = neg is not None
    st.needs_cue = neg != "never" and not st.durable
    if m.group("you"):
        st.lead = "Never " if neg == "never" else "Do not " if neg else ""
        return False
    st.pref = True
    if neg == "never":
        st.lead = "The user never wants "
    else:
        st.lead = "The user does not want " if neg else "The user wants "
    return True


_Form = tuple[str | None, int]  # (form, where the copied body starts); form None: no rule


def rule_form(low: str, i: int, st: State, opens_sentence: bool) -> _Form:
    """The rule form at `i` and where the copied body starts; ("", i) if none, None to reject."""
    if st.lead.startswith("The user"):
        if st.needs_cue and not CUE_RE.search(low, i):
            return None, i  # "I want a button that exports CSV" is a task
        return "want", i
    return (
        _prohibition_form(low, i, st, opens_sentence)
        or _directive_form(low, i, st)
        or _convention_form(low, i, st)
        or ("", i)
    )


def _prohibition_form(low: str, i: int, st: State, opens_sentence: bool) -> _Form | None:
    """ "no more X", "no X", "never X", "don't X", "you must not X"; None if none of them."""
    if _NO_MORE_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = ""
        return "no_more", i
    if (m := _NO_RE.match(low, i)) and _next_word(low, m.end()) not in _NO_STOP:
        st.prohibition = True
        st.lead = ""
        return "no", i
    if m := _NEVER_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _NEVER_STOP or PAST_WORD_RE.match(nxt):
            return None, i
        st.prohibition = st.durable = True
        st.lead = "Never "
        return "never", m.end()
    if (m := _DONT_RE.match(low, i)) or (m := _MODAL_NEG_RE.match(low, i)):
        return _dont_form(low, i, m, st, opens_sentence)
    return None


def _dont_form(low: str, i: int, m: re.Match[str], st: State, opens_sentence: bool) -> _Form:
    nxt = _next_word(low, m.end())
    if nxt in _DONT_STOP or PAST_WORD_RE.match(nxt):
        return None, i
    strong = "must" in m.group() or "shall" in m.group() or "never" in m.group()
    strong = strong or "ever" in m.group().split()
    # A bare "don't X" inside a task request ("fix it but don't touch the tests") is about
    # the task; one that opens its sentence, or has a cue, reads as a standing rule.
    if not (st.durable or strong or opens_sentence or CUE_RE.search(low, m.end())):
        return None, i
    st.prohibition = st.durable = True
    st.lead = "Never " if "never" in m.group() or "ever" in m.group().split() else "Do not "
    return "dont", m.end()


def _directive_form(low: str, i: int, st: State) -> _Form | None:
    """ "always X", "stop Xing", "avoid X", "prefer X", "I'd prefer (you) X"; None if none."""
    if m := _ALWAYS_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _ALWAYS_STOP or PAST_WORD_RE.match(nxt):
            return None, i
        st.durable = True
        st.lead = "Always "
        return "always", m.end()
    if m := _STOP_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = "Stop "
        return "stop", m.end()
    if m := _AVOID_RE.match(low, i):
        st.prohibition = st.durable = True
        st.lead = "Avoid "
        return "avoid", m.end()
    if m := _PREFER_RE.match(low, i):
        st.pref = st.durable = True
        st.lead = "Prefer "
        return "prefer", m.end()
    if m := _I_PREFER_RE.match(low, i):
        st.pref = st.durable = True
        st.lead = "" if m.group("you") else "Prefer "
        if m.group("you") and (neg := _YOU_DIDNT_RE.match(low, m.end())):
            st.prohibition = True
            st.lead = "Do not "
            return "dont", neg.end()
        if m.group("you"):
            st.durable = False
            st.needs_cue = True  # "I'd prefer you use the helper" is about this task
            return "", m.end()
        return "prefer", m.end()
    return None


def _convention_form(low: str, i: int, st: State) -> _Form | None:
    """How the team or the project does things: "we always/never X", "we don't X", "we use X",
    "this project uses X", "we switched to X", "our X is Y", "X must always Y"; None if none."""
    if m := _WE_ALWAYS_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _WE_STOP or PAST_WORD_RE.match(nxt):
            return None, i
        never = m.group("adv") == "never"
        st.prohibition = never
        st.durable = True
        st.lead = "Never " if never else "Always "
        return ("never" if never else "always"), m.end()
    if m := _WE_DONT_RE.match(low, i):
        nxt = _next_word(low, m.end())
        if nxt in _DONT_STOP or nxt in _WE_STOP - {"use", "run"}:
            return None, i
        st.prohibition = st.durable = True
        st.lead = "Do not "
        return "dont", m.end()
    if m := _WE_USE_RE.match(low, i):
        st.fact = True
        st.lead = "Use "
        return "we_use", m.end()
    if _PROJECT_USES_RE.match(low, i):
        st.fact = True
        st.lead = ""
        return "we_use", i
    if m := _WE_SWITCHED_RE.match(low, i):
        st.fact = True
        return "switched", m.end()
    if _OUR_RE.match(low, i):
        if TRANSIENT_RE.search(low, i):
            return None, i
        st.fact = True
        return "our", i
    if (m := _SUBJECT_MODAL_RE.match(low, i)) or (m := _ALL_MUST_RE.match(low, i)):
        st.durable = True
        st.prohibition = m.group("neg") is not None
        return "modal", i
    return None
