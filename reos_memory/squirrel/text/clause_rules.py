"""The rule stated in one clause of a user's message, or None: its opening read, passing
remarks turned away, then its form decides the memory's kind, polarity, scope, slot and text.
In a correction, plain instructions count too when they name a tool choice, a location or an
"instead"."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from reos_memory.squirrel.text.clauses import Clause
from reos_memory.squirrel.text.interaction_prefs import INTERACTION_HINT_RE, interaction
from reos_memory.squirrel.text.passing_remarks import (
    FOR_THIS_RE,
    HEDGE_RE,
    HYPOTHETICAL_RE,
    ONE_OFF_RE,
    PAST_RE,
    QUESTION_RE,
)
from reos_memory.squirrel.text.prose import fold, wordset
from reos_memory.squirrel.text.rule_openings import (
    CUE_RE,
    SUBJECT,
    WORD_RE,
    State,
    read_prefixes,
    rule_form,
    skip_lead,
)
from reos_memory.squirrel.text.rule_scope import (
    GLOBAL_HINT_RE,
    GLOBAL_RE,
    GLOBAL_STRIP_RE,
    PROJECT_HINT_RE,
    PROJECT_RE,
)
from reos_memory.squirrel.text.tool_names import (
    LANG_VERSION_RE,
    TOOL_CATEGORIES,
    classify_tools,
    strip_tools,
    tool_mentions,
)
from reos_memory.squirrel.text.tool_switches import switch_in

_TRAIL_CHARS = frozenset(" \t,.!?…;:~)*_-\ufe0f")
_TRAIL_WORD_RE = re.compile(
    r"(?<![\w'])(?:lol|lmao|haha+|thanks|thank\s+you|thx|ty|pls|plz|please|ok|okay|btw|tho|k"
    r"|for\s+(?:that|this)|like\s+(?:that|this)|again|anymore|any\s+more|ever\s+again)\Z"
    r"|[:;]-?[)(dp]\Z"
)
_CORRECTION_LEAD_RE = re.compile(
    r"(?:(?:actually|instead|rather)\s+(?=\w)"
    r"|(?:no+[\s,.!]+)*(?:no+|nope|nah)(?:\s*[,.!:;\u2014\u2013-]+\s*"
    r"|\s+(?=(?:use|run|try|it'?s|its|we|you|the|not"
    r"|don'?t|do|never|always|please|pls|that|this|i)\b))"
    r"|(?:wrong|that'?s\s+(?:wrong|not\s+(?:right|it|what\s+i\s+(?:want|meant|asked)(?:\s+for)?))"
    r"|(?:that'?s|this\s+is|you'?re\s+in)\s+the\s+wrong\s+\w+"
    r"|not\s+quite|incorrect|actually|hold\s+on|wait|stop|instead)"
    r"(?:\s+(?:file|place|path|dir(?:ectory)?|one|tool|command|package|module|folder|approach"
    r"|way|again))?\s*[,.!:;\u2014\u2013-]+\s*)+"
)
_POLITE_ONLY_RE = re.compile(
    r"(?:no\s+(?:problem|worries|thanks|thank\s+you|need|rush|biggie)|never\s*mind|nevermind"
    r"|all\s+good|(?:it'?s|that'?s)\s+(?:fine|ok|okay|alright)|np|thanks|thank\s+you|ok(?:ay)?)"
    r"\b[\s,.!;:\u2014\u2013-]*"
)
_POLITE_RULE_RE = re.compile(
    r"(?:can|could|would)\s+you(?:\s+please)?\s+(?:always|never|stop|not|from\s+now\s+on"
    r"|going\s+forward|make\s+sure|remember)\b"
)
_CONDITIONAL_RE = re.compile(
    r"(?P<cue>whenever|every\s+time|each\s+time|any\s*time|when|if|after|before)\b[^,]{3,120},\s*"
)

_FACT_VERB_RE = re.compile(
    r"\b(?:is|are|lives?|runs?|uses?|needs?|requires?|must|should|can'?t|cannot|doesn'?t|don'?t"
    r"|won'?t|isn'?t|aren'?t|has|have|goes|go|expects?|breaks?|only\s+works|works|sits?|belongs?"
    r"|deploys?|points?|means?|contains?|reads?|writes?|owns?|handles?)\b"
)
_LOCATION_RE = re.compile(
    r"(?:the\s+|our\s+)?" + SUBJECT + r"(?P<subj>[\w`'\"./ -]{2,40}?)\s+(?:is|are|lives?|sits?"
    r"|goes|go|belongs?|should\s+(?:go|live|be)|must\s+(?:go|live|be)|is\s+located|are\s+located"
    r"|is\s+defined|are\s+defined|is\s+kept|are\s+kept)\s+(?:in|under|at|inside)\s+"
    r"(?:the\s+)?(?P<loc>\S+)"
)
_PATH_RE = re.compile(r"`[^`]+`|\S*/\S*|\S+\.[a-z]{1,5}\b")
_INSTEAD_RE = re.compile(
    r"(?:(?:use|run|try|do|call)\s+(?P<a>.+?)\s+instead(?P<of>\s+of\s+.+)?"
    r"|instead,?\s+(?:use|run|try|do|call)\s+(?P<b>.+))$"
)
# "use `uv run pytest`, not `python -m pytest`" (masked: the backticks keep their places)
_CMD_CONTRAST_RE = re.compile(
    r"(?:(?:use|run|try|it'?s|call)\s+)?(?P<new>`[^`]+`)\s*,?\s*(?:not|instead\s+of|rather\s+than"
    r"|over)\s+(?P<old>`[^`]+`)$"
)
_CHOICE_RE = re.compile(
    r"(?:(?:let'?s\s+)?(?:just\s+)?(?:use|try|switch\s+to|go\s+with|stick\s+(?:to|with))"
    r"|it'?s|its|we\s+use|with|prefer|run"
    r"|that'?s|should\s+be)\s+"
)
_PRONOUN_END_RE = re.compile(r"\b(?:it|this|that|them|these|those|one|there|so|him|her)\W*$")
FUNCTION_WORDS = wordset(
    "a an the to of in on for with and or but not no do does be is are it this that these those "
    "them they we you i me my our your us as at by from so just also please pls then than ever "
    "always never don't dont again anymore any all some thing things stuff here there up out it's "
    "its that's we're let's into about over"
)
# Words that may sit around tool names in a clause that is nothing but a tool choice.
DIRECTIVE_WORDS = FUNCTION_WORDS | wordset(
    "use using uses run running install installing installs instead rather prefer prefers code "
    "calls call stick sticking standard standardize standardized choice pick default "
    "switch switched move moved migrate migrated stick go only package packages management "
    "manager managers http client clients library libraries lib test tests testing runner "
    "format formatting formatter lint linting linter type checking checker database databases "
    "db orm framework web env environment environments virtualenvs deps dependencies project "
    "repo repository codebase should must be default standard our ok lol thanks please "
    "everything anything anywhere new one ones tool tools python js node projects repos "
    "repositories codebases all every"
)

_INSTRUCTION_RE = re.compile(r"\b(?:use|run|never|don'?t|do\s+not|always|instead|not)\b")
_PLEASE_RE = re.compile(r"\b(?:please|pls|plz)\b\s*", re.IGNORECASE)
_VERSION_WORDS = wordset("target targets version versions runtime on running require")
_ME_RE = re.compile(r"\b(?:me|myself)\b")
_MY_RE = re.compile(r"\bmy\b")
_HERE_END_RE = re.compile(r"\s+here$")
_NEVER_WORD_RE = re.compile(r"\bnever\b")
_INSTEAD_WORD_RE = re.compile(r"\binstead\b(?!\s+of\b)")
_EVER_RE = re.compile(r"ever\s+", re.IGNORECASE)


@dataclass
class Hit:
    text: str
    kind: str
    polarity: int
    scope: str
    key: str | None
    pos: list[str] = field(default_factory=list)  # tools to use
    neg: list[str] = field(default_factory=list)  # tools not to use
    strong: bool = False  # a "never/don't" names one of the `neg` tools
    simple: bool = False  # nothing but a tool choice: merged per category, rendered from a template
    pref: bool = False  # a stated preference ("prefer X", "I prefer ..."): rendered "Prefer X"
    instead: bool = False  # "use X instead": about the rejected call, if any
    needs_rejection: bool = False  # meaningless without the rejected call ("use that instead")
    never: bool = False  # worded with "never" rather than "don't"
    tentative: bool = False  # a plain "use X": kept only if merged with a rule on the same slot
    tools: list[str] = field(default_factory=list)


def _closes(low: str, at: int) -> bool:
    """Whether the ")" at `at` closes a "(" of the clause (`os.Exit(1)`), not a smiley."""
    return low[at] == ")" and low.count("(", 0, at) > low.count(")", 0, at)


def _trim_end(low: str) -> tuple[int, bool]:
    """Where the clause ends without trailing fillers ("lol", "!!", emoji), and if it asked "?"."""
    end = len(low)
    question = False
    while end:
        e = end
        while e and (
            (low[e - 1] in _TRAIL_CHARS and not _closes(low, e - 1))
            or "\u2600" <= low[e - 1] <= "\u27bf"
            or low[e - 1] >= "\U0001f300"
        ):
            question = question or low[e - 1] == "?"
            e -= 1
        if m := _TRAIL_WORD_RE.search(low, max(0, e - 16), e):
            e = m.start()
        if e == end:
            break
        end = e
    return end, question


def content_words(text: str, stop: frozenset[str]) -> list[str]:
    return [w for w in WORD_RE.findall(text) if w not in stop and len(w) > 1]


def _polish(text: str, scope: str) -> str:
    """Tidy a copied clause into a memory sentence: no fillers, "me" -> "the user", a period."""
    text = " ".join(text.split()).strip(" ,;:-")
    if scope == "global":
        text = GLOBAL_STRIP_RE.sub("", text).strip(" ,;:-")
    low = text.lower()
    if "pl" in low:
        text = _PLEASE_RE.sub("", text).strip()
    if "me" in low or "my" in low:
        text = _MY_RE.sub("the user's", _ME_RE.sub("the user", text))
    if scope == "project":
        text = _HERE_END_RE.sub(" in this project", text)
    if text.lower().startswith("our "):
        text = "the " + text[4:]
    if text and text[0] != "`":
        text = text[0].upper() + text[1:]
    text = text.rstrip(" .!…,;:")
    return text + "." if text else ""


def parse_clause(cl: Clause, correction: bool) -> Hit | None:
    """The statement in one clause, or None when it holds no durable instruction."""
    low = cl.masked
    end, question = _trim_end(low)
    i = skip_lead(low, 0)
    if correction:
        if polite := _POLITE_ONLY_RE.match(low, i):
            if not _INSTRUCTION_RE.search(low, polite.end()):
                return None  # "no worries", "no need, it's fine"
            i = polite.end()
        if m := _CORRECTION_LEAD_RE.match(low, i):
            i = skip_lead(low, m.end())
    if i >= end or end - i > 260:
        return None
    if (question or QUESTION_RE.match(low, i)) and not _POLITE_RULE_RE.match(low, i):
        return None
    body = low[i:end]
    glob = cl.glob or (
        GLOBAL_HINT_RE.search(body) is not None and GLOBAL_RE.search(body) is not None
    )
    st = State(
        durable=cl.durable or glob,
        glob=glob,
        project=PROJECT_HINT_RE.search(body) is not None and PROJECT_RE.search(body) is not None,
    )
    i = read_prefixes(low, i, st)
    if i >= end:
        return None
    # Cheap anchored matches decide first; the searches below only run for candidates.
    cond = _CONDITIONAL_RE.match(low, i)
    if cond is not None and cond.end() >= end:
        cond = None
    form, j = ("", i) if cond else rule_form(low, i, st, cl.first or correction)
    if form is None:
        return None
    plain = not (form or cond or st.lead or st.fact or st.durable or st.needs_cue or correction)
    if plain and st.convention is None and not INTERACTION_HINT_RE.search(body):
        return _tentative_choice(cl, j, end, st)
    if HYPOTHETICAL_RE.search(body) or ONE_OFF_RE.search(body):
        return None
    if not correction and FOR_THIS_RE.search(low):
        return None  # "don't use any libraries for this": about the task at hand
    if cond:
        return _parse_conditional(cl, i, cond, end, st, correction)
    return _finish(cl, i, j, end, st, correction, form)


def _parse_conditional(
    cl: Clause, i: int, m: re.Match[str], end: int, st: State, correction: bool
) -> Hit | None:
    """'when/if/whenever ..., <rule>': the rule part decides, the whole clause is the text."""
    inter = interaction(cl.masked[i:end])
    durable = st.durable or m.group("cue") in {"whenever", "every time", "each time", "anytime"}
    durable = durable or (inter is not None and inter[2])
    rest = replace(
        cl, raw=cl.raw[m.end() : end], masked=cl.masked[m.end() : end], first=True, conditioned=True
    )
    rest.durable, rest.glob = durable, st.glob
    hit = parse_clause(rest, correction)
    if hit is None or hit.simple or hit.text.startswith("The user"):
        return None
    if inter is not None:
        hit.kind = inter[1]
        hit.scope = "project" if st.project else "global"
        hit.key = f"user.pref.{inter[0]}" if inter[0] and hit.scope == "global" else None
    else:
        hit.key = None
        if hit.kind not in {"guard", "preference"}:
            hit.kind = "pattern"
    hit.text = _polish(cl.raw[i:end], hit.scope)
    return hit


@dataclass
class _Tools:
    """The catalog tools a rule names from its body on."""

    pos: list[str]  # to use
    neg: list[str]  # to avoid
    strong: bool  # a "never/don't" names one of the `neg` tools
    simple: bool  # the rule is nothing but a choice between tools of one category
    named: list[str]  # every tool named, in order


def _finish(
    cl: Clause, i: int, j: int, end: int, st: State, correction: bool, form: str
) -> Hit | None:
    """Checks common to every form, then kind, polarity, scope, key and text."""
    body = cl.masked[j:end]
    inter = interaction(cl.masked[i:end])
    if not form:
        implied = _implied_form(cl.masked, j, st, inter)
        if implied is None:
            return (
                _parse_correction(cl, j, end, st)
                if correction
                else _tentative_choice(cl, j, end, st)
            )
        form = implied
        standing = CUE_RE.search(cl.masked, j) or _alone(inter)
        if st.needs_cue and form == "imperative" and not correction and not standing:
            return None
    if _no_standing_rule(cl, j, end, st, form, inter):
        return None
    hedged = HEDGE_RE.search(body) is not None
    if hedged and not st.fact:
        return None
    tools = _tools_named(cl, j, end, st, form)
    if tools is None:
        return None
    scope = "global" if (st.glob or inter is not None) and not st.project else "project"
    polarity = -1 if (st.prohibition or tools.strong) else 1
    text = _polish(_rule_text(cl.raw[j:end], body, form, st, scope), scope)
    if not text:
        return None
    return Hit(
        text=text,
        kind=_kind(st, inter, polarity, scope, hedged),
        polarity=polarity,
        scope=scope,
        key=_slot_key(body, inter, scope, tools),
        pos=tools.pos,
        neg=tools.neg,
        strong=tools.strong or (st.prohibition and bool(tools.neg)),
        simple=tools.simple,
        pref=st.pref,
        never=st.lead.startswith("Never") or _NEVER_WORD_RE.search(body) is not None,
        tools=tools.named,
    )


def _alone(inter: tuple[str, str, bool] | None) -> bool:
    """Whether an interaction preference stands alone ("be concise"), without a durable cue."""
    return inter is not None and inter[2]


def _implied_form(low: str, j: int, st: State, inter: tuple[str, str, bool] | None) -> str | None:
    """The form of a clause no rule word opened: a convention, a fact or an imperative; None for
    a plain instruction, which only a correction or a rule on the same slot can keep."""
    if st.convention is not None:
        return "convention"
    if st.fact:
        return "fact"
    if (
        st.lead
        or (st.durable and not st.needs_cue)
        or (st.needs_cue and CUE_RE.search(low, j))
        or _alone(inter)
    ):
        return "imperative"
    return None


def _no_standing_rule(
    cl: Clause, j: int, end: int, st: State, form: str, inter: tuple[str, str, bool] | None
) -> bool:
    """Whether a clause of a rule's form still holds no standing rule: news, the past, a fact
    without a verb, no content, or a pronoun that points at the task at hand."""
    low = cl.masked
    body = low[j:end]
    if form == "no" and not (st.durable or _alone(inter) or _about_rejected(cl, body)):
        return True  # "no emojis" is a standing request; "no tests yet" is news
    if form != "switched" and PAST_RE.search(low, j, end):
        return True
    if form == "fact" and not _FACT_VERB_RE.search(body):
        return True
    if not content_words(cl.raw[j:end].lower(), FUNCTION_WORDS):
        return True
    # "never do that", "don't add retries to it": the pronoun points at the task at hand
    dangling = _PRONOUN_END_RE.search(body) is not None and not cl.conditioned
    return dangling and (len(body.split()) <= 3 or inter is None)


def _about_rejected(cl: Clause, body: str) -> bool:
    """Whether the clause speaks of the tool call the user just rejected ("no lockfile edits")."""
    return not cl.rejected.isdisjoint(content_words(body, FUNCTION_WORDS))


def _tools_named(cl: Clause, j: int, end: int, st: State, form: str) -> _Tools | None:
    """The tools a rule names, split into use and avoid; None when its form needs tools it lacks."""
    raw, body = cl.raw, cl.masked[j:end]
    mentions = tool_mentions(raw, cl.vouched)
    pos, neg, strong = classify_tools(fold(raw), mentions, j, st.prohibition)
    if form == "switched":
        sw = switch_in(raw[j:end])
        if sw is not None:
            pos, neg = [sw[2]], [sw[1]]
        if not pos:
            return None
    if form == "we_use" and not (pos or neg or st.project or LANG_VERSION_RE.search(body)):
        return None  # "we use this helper in three places" is not a convention
    residual = content_words(strip_tools(body, mentions, j), DIRECTIVE_WORDS)
    simple = bool(pos or neg) and not residual
    simple = simple and len({TOOL_CATEGORIES[t] for t in pos + neg}) == 1
    if form == "switched" and not simple:
        return None
    return _Tools(pos, neg, strong, simple, [m.tool for m in mentions if m.start >= j])


def _kind(
    st: State, inter: tuple[str, str, bool] | None, polarity: int, scope: str, hedged: bool
) -> str:
    if inter is not None:
        return inter[1]
    if polarity == -1:
        return "guard"
    if st.pref or (scope == "global" and not st.fact):
        return "preference"
    return "note" if hedged else "invariant"


def _slot_key(
    body: str, inter: tuple[str, str, bool] | None, scope: str, tools: _Tools
) -> str | None:
    """The slot a rule fills: a named interaction preference, or the project's language version
    ("we target python 3.12"); None for the rest."""
    if inter is not None and inter[0] and scope == "global":
        return f"user.pref.{inter[0]}"
    if tools.pos or tools.neg or scope != "project":
        return None
    lang = LANG_VERSION_RE.search(body)
    if lang is None:
        return None
    if content_words(body[: lang.start()] + body[lang.end() :], DIRECTIVE_WORDS | _VERSION_WORDS):
        return None
    name = lang.group(1).lower()
    name = "node" if name.startswith("node") else {"py": "python", "golang": "go"}.get(name, name)
    return f"project.{name}_version"


def _rule_text(copied: str, body: str, form: str, st: State, scope: str) -> str:
    """The memory's text before polish: the copied body behind the words its form calls for."""
    if form == "convention":
        if st.convention == "colon":
            return st.lead + copied
        return copied if st.convention else "The convention in this project is " + copied
    if form == "we_use" and st.lead:
        text = "Use " + copied
        if scope == "project" and not PROJECT_RE.search(body):
            text += " in this project"
        return text
    if st.lead == "Do not " and (ever := _EVER_RE.match(copied)):
        return "Never " + copied[ever.end() :]
    return st.lead + copied


def _tentative_choice(cl: Clause, j: int, end: int, st: State) -> Hit | None:
    """A plain "use pytest": kept only beside a rule on the same slot ("..., never unittest")."""
    if st.needs_cue or st.fact or PAST_RE.search(cl.masked, j, end):
        return None
    m = _CHOICE_RE.match(cl.masked, j)
    if m is None:
        return None
    mentions = [mm for mm in tool_mentions(cl.raw, cl.vouched) if mm.start >= j]
    pos, neg, strong = classify_tools(fold(cl.raw), mentions, m.end(), False)
    residual = content_words(strip_tools(cl.masked[j:end], mentions, j), DIRECTIVE_WORDS)
    if not pos or residual or len({TOOL_CATEGORIES[t] for t in pos + neg}) != 1:
        return None
    scope = "global" if st.glob and not st.project else "project"
    return Hit(
        "",
        "invariant",
        1,
        scope,
        None,
        pos=pos,
        neg=neg,
        strong=strong,
        simple=True,
        tentative=True,
        tools=[mm.tool for mm in mentions],
    )


def _parse_correction(cl: Clause, j: int, end: int, st: State) -> Hit | None:
    """Plain instructions count only in a correction: a tool choice, a location, an 'instead'."""
    low, raw = cl.masked, cl.raw
    body = low[j:end]
    scope = "global" if st.glob and not st.project else "project"
    mentions = [m for m in tool_mentions(raw, cl.vouched) if m.start >= j]
    if mentions:
        m = _CHOICE_RE.match(low, j)
        pos, neg, strong = classify_tools(fold(raw), mentions, m.end() if m else j, False)
        residual = content_words(strip_tools(body, mentions, j), DIRECTIVE_WORDS)
        if (pos or neg) and not residual and len({TOOL_CATEGORIES[t] for t in pos + neg}) == 1:
            return Hit(
                text=_polish(raw[j:end], scope),
                instead=_INSTEAD_WORD_RE.search(body) is not None,
                kind="invariant",
                polarity=-1 if strong else 1,
                scope=scope,
                key=None,
                pos=pos,
                neg=neg,
                strong=strong,
                simple=True,
                tools=[mm.tool for mm in mentions],
            )
    loc = _LOCATION_RE.match(low, j)
    if loc and not PAST_RE.search(body) and _PATH_RE.fullmatch(_loc_text(raw, loc)):
        return Hit(_polish(raw[j:end], "project"), "invariant", 1, "project", None)
    if cmd := _CMD_CONTRAST_RE.match(low, j, end):
        new, old = raw[cmd.start("new") : cmd.end("new")], raw[cmd.start("old") : cmd.end("old")]
        return Hit(f"Run {new} instead of {old}.", "guard", 1, scope, None, instead=True)
    if inst := _INSTEAD_RE.match(low, j, end):
        what = inst.group("a") or inst.group("b") or ""
        if content_words(what, FUNCTION_WORDS) and not _PRONOUN_END_RE.search(what):
            hit = Hit(_polish(raw[j:end], scope), "guard", 1, scope, None, instead=True)
            hit.needs_rejection = inst.group("of") is None
            return hit
    return None


def _loc_text(raw: str, loc: re.Match[str]) -> str:
    return raw[loc.start("loc") : loc.end("loc")].strip(".,;")
