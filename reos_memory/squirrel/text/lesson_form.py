"""A memory is addressed to a future session: a rule or a fact, never a line of chat.

People correct and propose in conversation ("Sure, but the cli should handle that", "Let's not
mock the database", "can we use our logging framework?"). The words stay on the episode as the
memory's evidence; the memory itself is written as a lesson:

* the conversational opener goes ("Uh oh!", "Sure, but", "OK so", "Basically", "Found it:");
* "let's not X" is "Do not X", "let's use X" is "Use X"; a "let's" about the moment ("let's
  pause", "let's see") is no lesson at all;
* a proposal asked as a question becomes the rule it proposes only when the session shows it
  was taken ("Can we use X?" answered "Good idea" is "Use X."); a question whose outcome the
  session does not show, or that the agent argued against, is not written (`outcome`).
"""

from __future__ import annotations

import re

from reos_memory.squirrel.text.diagnosis import SPECIFIC
from reos_memory.squirrel.text.junk import content
from reos_memory.squirrel.text.prose import typed_lowercase
from reos_memory.squirrel.text.rule_openings import CHAT_OPENERS, MODALS

# words that open a turn of conversation without saying anything: those that open no rule,
# and those a rule may start with but a memory's text never should
_OPENER = re.compile(
    r"^(?:(?:" + CHAT_OPENERS + r"|uh[- ]?oh|oh\s+(?:no|wow)|huh|ah+|aha|ok(?:ay)?\s+so"
    r"|all\s+right|sure|no|nope|nah|like|basically|actually|honestly|question|note|anyway"
    r"|right|great|good|cool|nice|thanks|wait|now|then|lol|lmao|wow|ehh?|meh|ugh|oops|whoa"
    r"|yikes)\b[,:;!.?\u2014-]*\s+)+",
    re.IGNORECASE,
)
# what an agent says before the finding itself
_LEAD_IN = re.compile(
    r"^(?:(?:i(?:'ve)? )?found (?:it|(?:the|an?) (?:bug|issue|problem|cause|culprit))[!:.,]*\s+"
    r"|(?:looking at|after (?:reading|checking)|having (?:read|checked)) (?:the|this) \w+(?: \w+)?,\s+"
    r"|(?:interesting|got it|i see|i understand)[!:.,]+\s+"
    r"|(?:please )?(?:remember|don'?t forget|do not forget) to\s+(?=\w)"
    # a verdict on what the agent just did, before the rule itself: "That is not correct, we ..."
    r"|(?:that|this|it)(?:'?s| is| was)(?: not|n'?t)? (?:quite )?(?:correct|right|true|wrong|it"
    r"|what i (?:meant|asked for|wanted))[,.;:!\u2014-]+\s+"
    # an approval before what is corrected: "That looks good, but X", "Looks fine, X"
    r"|(?:(?:that|this|it|the \w+)(?:'s| is)? )?(?:looks?|sounds?|seems?|is) (?:\w+ )?(?:good|great|fine"
    r"|ok(?:ay)?|nice|better|right)(?:[,.;:!\u2014-]+\s+|\s+(?=but\b))"
    # the frame around a cause: "The issue is that X", "The real problem was that X" (X is it)
    r"|(?:the|this|my|our) (?:(?:real|actual|underlying|root) )?(?:issue|problem|bug|cause"
    r"|culprit|reason)(?: here)? (?:is|was) that\s+(?=\S)"
    # a report's label: "Diagnosed the issue - ", "Fixed the tests: "
    r"|[a-z]+ed (?:the |an? )?\w+(?: \w+)?\s+[-\u2013\u2014:]\s+)+",
    re.IGNORECASE,
)
_LETS = re.compile(r"^let'?s\s+", re.IGNORECASE)
# "let's" + a step of the moment ("let's pause", "let's see what fails"): no rule
_LETS_MOMENT = re.compile(
    r"^(?:pause|wait|see|check|look|think|try|first|start|begin|go ahead|continue|move on|stop"
    r"|discuss|talk|take a|step back|revisit|figure|find out|investigate|debug|run|test it|do (?:it|this|that)"
    r"|get|call it|wrap|finish|commit|push|merge|ship|release|focus|now|also|then|maybe|perhaps)\b",
    re.IGNORECASE,
)

# proposals asked as questions, and the rule each proposes when it is taken
_PROPOSAL = re.compile(
    r"^(?:(?:can(?:'t|not)?|could(?:n'?t)?|should(?:n'?t)?|shall) (?:we|you|it|i)|why (?:not|don'?t we|are we not"
    r"|aren'?t we|do we not|not just)|(?:how|what) about(?: (?:we|you))?|what if we"
    r"|(?:would(?:n'?t)?|is(?:n'?t)?) it (?:be )?(?:better|cleaner|simpler|easier|safer) (?:to|if we))"
    r"\s+(?:just\s+)?"
    r"(?P<rest>.+?)\s*\?+$",
    re.IGNORECASE,
)
_THERE_IS = re.compile(
    r"^is there (?:no|not an?) (?P<rest>(?:library|package|module|crate|gem|tool|helper"
    r"|function|command|builtin|api|way|option|flag|setting)\b.+?)\s*\?+$",
    re.IGNORECASE,
)
# a doubt asked as a question: what it doubts is needed ("Do we even need the wrapper at all?");
# a doubt needs its word of doubt before "need" or after what is needed (see `_doubt`)
_NEED_DOUBT = re.compile(
    r"^do (?:we|you|i) (?P<before>(?:(?:really|even|actually|still) +)+)?need (?P<rest>.+?)"
    r"(?P<after>\s+(?:at all|anymore|any more))?(?:\s+(?:then|now|here))?\s*\?+$",
    re.IGNORECASE,
)
# a statement with a question tag after it ("it should just work, right?")
_TAG = re.compile(
    r",?\s*(?:right|no|correct|yes|isn'?t it|doesn'?t it|don'?t you think|wouldn'?t it)\s*\?+\s*$",
    re.IGNORECASE,
)
_POINTER = frozenset({"it", "this", "that", "these", "those", "them"})
_GERUNDS = {
    "adding": "add",
    "using": "use",
    "making": "make",
    "having": "have",
    "moving": "move",
    "writing": "write",
    "creating": "create",
    "keeping": "keep",
    "putting": "put",
    "running": "run",
    "removing": "remove",
    "storing": "store",
    "changing": "change",
    "updating": "update",
    "reusing": "reuse",
    "passing": "pass",
    "returning": "return",
    "calling": "call",
    "splitting": "split",
    "checking": "check",
    "setting": "set",
    "caching": "cache",
    "sharing": "share",
    "providing": "provide",
}
_FIRST_PERSON = (
    (re.compile(r"\bour\b", re.IGNORECASE), "the project's"),
    (re.compile(r"\bwe\b", re.IGNORECASE), "the project"),
)

# the people of a user's rule named as a future session reads them: the one speaking is the
# user, the one spoken to the agent, "we" the project's team; only where no verb has to agree
# with the new subject (a possessive, an object, a subject before a modal)
_MODAL = r"(?:would|should|could|can|cannot|can't|will|won't|must|might|may|shall)"
_AGREES = (  # (the present forms said most in rules, with the verb made to agree)
    (r"don't|do not", "does not"),
    (r"'re|\s+are", " is"),
    (r"want", "wants"),
    (r"need", "needs"),
    (r"prefer", "prefers"),
    (r"like", "likes"),
    (r"use", "uses"),
    (r"have", "has"),
)
_THIRD_PERSON = (
    *(
        (re.compile(rf"\b{who}(?:\s+)?(?:{verb})\b", re.I), f"{name} {agreed.strip()}")
        for who, name in (("I", "the user"), ("we", "the team"))
        for verb, agreed in _AGREES
        if not (who == "I" and verb.startswith("'re"))
    ),
    (re.compile(r"\bI'?m\b|\bI am\b"), "the user is"),
    (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bI'll\b"), "the user will"),
    (re.compile(r"\bI(?=\s+(?:really\s+|also\s+|rather\s+)?" + _MODAL + r"\b)"), "the user"),
    (re.compile(r"\b[Mm]y\b"), "the user's"),
    (re.compile(r"(?<!\b[Ll]et )\bme\b"), "the user"),
    (re.compile(r"\byou'd\b", re.I), "the agent would"),
    (re.compile(r"\byou'll\b", re.I), "the agent will"),
    (
        re.compile(r"\byou(?=\s+(?:really\s+|also\s+)?" + _MODAL + r"\b|\s+\w+ing\b)", re.I),
        "the agent",
    ),
    (re.compile(r"\byour\b", re.I), "the agent's"),
    (re.compile(r"\bwe'd\b", re.I), "the team would"),
    (re.compile(r"\bwe'll\b", re.I), "the team will"),
    (re.compile(r"\bwe(?=\s+(?:really\s+|also\s+)?" + _MODAL + r"\b)", re.I), "the team"),
    (re.compile(r"\bour\b", re.I), "the project's"),
    (re.compile(r"(?<!\b[Ll]et )\bus\b"), "the team"),
)
# code and quoted words are kept as written
_KEPT_AS_WRITTEN = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"")


def third_person(text: str) -> str:
    """A rule of the user's with its people named (`_THIRD_PERSON`: "Avoid tokens under my
    account" -> "Avoid tokens under the user's account"); the writer's note after it, code and
    quotes as they are."""
    rule, note = split_note(text)
    out, at = [], 0
    for m in _KEPT_AS_WRITTEN.finditer(rule):
        out += [_named(rule[at : m.start()]), m.group(0)]
        at = m.end()
    out.append(_named(rule[at:]))
    return capital("".join(out)) + note


def _named(words: str) -> str:
    for pat, repl in _THIRD_PERSON:
        words = pat.sub(repl, words)
    return words


# how an agent takes a proposal, or argues against it (the first sentence of its answer)
_TAKEN = re.compile(
    r"^(?:(?:good|great|excellent|fair|valid) (?:idea|point|call|catch|suggestion|question)"
    r"|you'?re (?:right|correct|absolutely right)|yes\b|yeah\b|sure\b|agreed|absolutely|of course"
    r"|that(?:'s| is| would be) (?:a )?(?:better|cleaner|simpler|good|great|right)"
    r"|makes sense|(?:let me|i'?ll) (?:do|use|switch|change|update|add|move|make|refactor|rework"
    r"|go with|implement))",
    re.IGNORECASE,
)
_PUSHBACK = re.compile(
    r"\b(?:however|but (?:that|this|it)|i'?d (?:recommend|suggest) (?:against|not|keeping)"
    r"|(?:would|could) (?:break|cause|lead to|introduce)|not (?:a good|ideal|recommended)"
    r"|won'?t work|wouldn'?t work|the (?:problem|issue|downside|risk) (?:with|is)"
    r"|i'?d keep|better to keep|unfortunately|rather not|i'?d avoid)\b",
    re.IGNORECASE,
)
# a user dropping their proposal after the answer ("ok, fair", "makes sense, keep it")
_DROPPED = re.compile(
    r"^(?:ok(?:ay)?|fair(?: enough)?|makes sense|agreed|right|got it|true|good point|i see)\b",
    re.IGNORECASE,
)


# a word that is code: a qualified name, a call, a path, camelCase ("git.PlainOpen",
# "openRepo()", "os/exec"): it keeps its case at the start of a sentence
_CODE_WORD = re.compile(r"[\w$-]*(?:[._/\[]\w|\(|[a-z][A-Z])")


def capital(text: str) -> str:
    """`text` with its first letter upper-case, unless its first word is code."""
    return text if _CODE_WORD.match(text) else text[:1].upper() + text[1:]


def opens_with_chat(text: str) -> bool:
    """Whether the text opens with an opener of conversation or an agent's lead-in."""
    return bool(_OPENER.match(text.strip()) or _LEAD_IN.match(text.strip()))


_HEDGE = re.compile(
    r"^(?:i (?:think|believe|guess|feel)|imo|in my opinion)(?: that)?,?\s+", re.IGNORECASE
)
# what follows "I don't want to" when it is no act of the agent's ("be asked", "see warnings",
# "have to restart"): the words stay as said
_NOT_AN_ACT = re.compile(r"(?:be|see|hear|have to|get|receive|wait|deal)\b", re.I)
# person-addressed forms and their impersonal rule
_IMPERSONAL = (
    # "we should not X" / "you must X" / "we need to X" -> an order
    (
        re.compile(
            r"^(?:we|you)\s+(?:" + MODALS + r")(?P<neg> not| never)? (?P<rest>\w.*)$",
            re.IGNORECASE,
        ),
        lambda m: ("Do not " if m["neg"] == " not" else "Never " if m["neg"] else "") + m["rest"],
    ),
    # "we don't want X" -> "Avoid X", "I don't want to touch X" -> "Do not touch X"
    (
        re.compile(
            r"^(?:we|i) (?:don'?t|do not) want (?:to have (?!to\b))?(?P<to>to )?(?P<rest>\w.*)$",
            re.IGNORECASE,
        ),
        lambda m: (
            m.string
            if m["to"] and _NOT_AN_ACT.match(m["rest"])
            else ("Do not " if m["to"] else "Avoid ") + m["rest"]
        ),
    ),
    # "I want the formula to be called X" -> "The formula should be called X"
    (
        re.compile(
            r"^i(?: want| would like|'d like) (?P<what>(?:the|this|that|our|each|every)\b[^.]*?) to be (?P<rest>.+)$",
            re.IGNORECASE,
        ),
        lambda m: f"{m['what']} should be {m['rest']}",
    ),
    # "For every test i'd like to see X instead of Y" -> "For every test, prefer X instead of Y"
    (
        re.compile(
            r"^(?P<scope>(?:for|in|on|with|when) [^,]{3,80}?,?\s+)?i(?: would|'d) (?:really )?"
            r"(?:like|love|prefer) (?:to (?:see|have|get|use) )?(?!to\b)(?P<rest>\w.*)$",
            re.IGNORECASE,
        ),
        lambda m: (f"{m['scope'].rstrip(' ,')}, prefer " if m["scope"] else "Prefer ") + m["rest"],
    ),
    # "I did not say commit anything" -> "Do not commit anything unless asked"
    (
        re.compile(
            r"^i (?:did not|didn'?t) (?:say|ask(?: you)?(?: to)?) (?!(?:for|about|that|if|whether)\b)"
            r"(?P<rest>\w[^(]*?)(?P<tail>\s*\(.*)?$",
            re.IGNORECASE,
        ),
        lambda m: (
            f"Do not {m['rest'].rstrip(' .')} unless asked{'.' if not m['tail'] else ''}{m['tail'] or ''}"
        ),
    ),
)


def impersonal(text: str) -> str:
    """The rule without the people in it: "I think we should X" -> "X", "we don't want X" ->
    "Avoid X", "I want the X to be Y" -> "The X should be Y"; the text unchanged when none of
    these applies."""
    out = _HEDGE.sub("", text.strip())
    for pat, rule in _IMPERSONAL:
        m = pat.match(out)
        if m:
            out = rule(m)
            break
    out = re.sub(r"\s+if we can help it\b", " where possible", out)
    return capital(out) if out != text.strip() else text


# openers asking for the other's view of what follows ("any ideas:", "wdyt")
_ASKS_VIEW = (
    r"any (?:ideas|thoughts)(?: (?:on|about) (?:this|that))?|thoughts|what do you think|wdyt"
)


# a discourse marker before what is said, with its comma, colon or dash ("Taking a step back:
# X", "To be clear, X", "In other words, X"): X is the statement ("In short mode the CLI ...",
# "I mean values ..." keep their words)
_DISCOURSE = re.compile(
    # (a run of them at once: "Frankly, " 10,000 times was quadratic, one per pass of `plain`)
    r"^(?:(?:taking a step back|stepping back|to be (?:clear|honest|fair)|in other words|that said"
    r"|having said that|on second thought|come to think of it|long story short|in short"
    r"|tl;?dr|for context|(?:as a )?side note|(?:just )?to clarify|frankly|of course|obviously"
    r"|in fact|the thing is|the point is|i mean|to sum(?:mari[sz]e| up)|in summary|quick note"
    r"|just so you know|for the record)[,:;!\u2014-]+\s+"
    # asking for the agent's view of what follows, a colon before it: "any ideas: <a pasted
    # review comment>" ("Thoughts? We could cache it" stays a question: it proposes)
    r"|(?:" + _ASKS_VIEW + r")\??:\s+)+",
    re.IGNORECASE,
)
# politeness around an order ("please use X", "keep X please (...)", "use X, please.")
# (a run of blanks is entered at its first blank only: linear on long runs)
_PLEASE = re.compile(
    r"^please,?\s+|(?:,|(?<![\s,]))\s+please\b(?=\s*(?:[.!;:,()]|$))", re.IGNORECASE
)


# a tracker's id the note was filed under ("gqc.4: Added ...", "ABC-123: ...", "#42: ..."): the
# id means nothing to a later session without the tracker
_TRACKER_ID = re.compile(r"^(?:[A-Za-z]{2,10}[-.]\d+|#\d+)[:)]\s+")


MAX_OPENER_PASSES = 12


def plain(text: str) -> str:
    """The text without the openers of conversation, a tracker's id before it and its "please",
    capitalised; unchanged when nothing would remain."""
    out, before = text.strip(), ""
    for _ in range(MAX_OPENER_PASSES):  # (bounded: a crafted run of alternating openers)
        if out == before:
            break
        before = out
        out = _DISCOURSE.sub("", _TRACKER_ID.sub("", out))
        out = _PLEASE.sub("", _LEAD_IN.sub("", _OPENER.sub("", out)))
    if len(out.split()) < 3:
        return text.strip()
    return capital(_EXCLAIMED.sub(".", out))


# a closing exclamation or trailing off ("... not override!", "... to the very end...") is how
# it was said in chat; a lesson ends with a period
_EXCLAIMED = re.compile(r"(?<=[\w)])\s*(?:!+|\.{3,}|\u2026)\s*$")


def from_lets(text: str) -> str | None:
    """ "let's not X" -> "Do not X", "let's use X" -> "Use X"; None when the "let's" is about the
    moment ("let's pause", "let's see what fails"); the text unchanged when it has no "let's"."""
    m = _LETS.match(text)
    if not m:
        return text
    rest = text[m.end() :]
    if _LETS_MOMENT.match(rest) or len(rest.split()) < 3:
        return None
    if re.match(r"not\b", rest, re.IGNORECASE):
        rest = "do " + rest
    return capital(rest)


def split_note(text: str) -> tuple[str, str]:
    """A rule and the writer's own note on it, "(on rejecting Edit x.go)", which stays at its
    end whatever the rule is rewritten to ("" when it has none)."""
    at = text.rfind(" (on rejecting ")
    return (text, "") if at < 0 else (text[:at], text[at:])


_ASKED_OF_IT = re.compile(r"^(?:can|could|should|shall)(?:n'?t|not)? it\b", re.I)


def proposed_rule(question: str) -> str | None:
    """The rule a proposal asked as a question proposes ("Can we use our logger?" -> "Use the
    project's logger."), or None when it is not such a question."""
    text, tail = split_note(question.strip())
    paren = re.search(r"\s*(\([^()]*\))\s*$", text)
    if not tail and paren:
        text, tail = text[: paren.start()], " " + paren.group(1)
    asked, mark, after = text.partition("?")
    if after.strip(" ?"):  # "Can we use our logger? should be WARN": the rest explains it
        rest = _TAG.sub("", after.strip())  # (", right?": a statement, not a question)
        if not rest.strip(" ?") or "?" in rest:
            return None
        rest = rest.strip()
        tail = " " + capital(rest).rstrip(".") + "." + tail
    text = asked + mark
    there = _THERE_IS.match(text)
    if there:  # "is there no library to validate UUIDs?" -> "Use a library to validate UUIDs."
        rest = there.group("rest").strip().rstrip(" ?.")
        article = "an" if rest[:1].lower() in "aeiou" else "a"
        return f"Use {article} {rest}." + tail if len(rest.split()) >= 2 else None
    doubt = _doubt(text)
    if doubt is not None:  # "do we even need the wrapper at all?" -> "The wrapper is not needed."
        return _not_needed(doubt.group("rest"), tail)
    m = _PROPOSAL.match(text)
    if not m or _ASKED_OF_IT.match(text):
        # ("shouldn't it be called, since ...?": what "it" is was said before)
        return None
    rest = m.group("rest").strip()
    first, _, more = rest.partition(" ")
    if first.lower() in _GERUNDS:
        rest = f"{_GERUNDS[first.lower()]} {more}".strip()
    elif first.lower().endswith("ing"):
        return None  # a form this cannot turn into an order with confidence
    for pat, repl in _FIRST_PERSON:
        rest = pat.sub(repl, rest)
    rest = rest.rstrip(" ?.")
    words = rest.split()
    if len(words) < 2 or words[1].lower() in _POINTER:
        # "can we drop it?", "how about we move this to X?": what it proposes is in the turn
        # before
        return None
    return capital(rest) + "." + tail


def doubts(question: str) -> bool:
    """Whether a question doubts that something is needed ("Do we even need X at all?"): a
    "yes" to it keeps X, where a "yes" to a proposal takes the proposal."""
    return _doubt(split_note(question.strip())[0].partition("?")[0] + "?") is not None


def _doubt(asked: str) -> re.Match[str] | None:
    """A question's doubt that something is needed ("do we need a migration?" asks, no doubt)."""
    m = _NEED_DOUBT.match(asked)
    return m if m is not None and (m.group("before") or m.group("after")) else None


def _not_needed(what: str, tail: str) -> str | None:
    """The rule a doubt proposes: what it doubts is not needed (None when that only points
    back: "do we need this at all?")."""
    what = what.strip().rstrip(" ?.")
    if what.split(" ", 1)[0].lower() in _POINTER or (len(what.split()) < 2 and "`" not in what):
        return None
    for pat, repl in _FIRST_PERSON:
        what = pat.sub(repl, what)
    if what.lower().startswith("to "):
        return f"There is no need {what}." + tail
    return capital(what) + " is not needed." + tail


# where an agent's answer is cut into sentences (an end mark and blanks, or a line break)
_ANSWER_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def outcome(answer: str | None, reply: str | None, acted: bool = False) -> str:
    """What became of a proposal, from the agent's messages before the user's next turn
    (`answer`), whether it went on working then (`acted`) and that next turn (`reply`):
    `argued` when the agent's answer opens against it (or the user then drops it), `taken` when
    the answer takes it or the agent went on to work without a word against it, `unknown` when
    the session ends there."""
    said = _ANSWER_SENTENCES.split((answer or "").strip())
    dropped = reply is not None and _DROPPED.match(reply.strip()) is not None
    # an answer against it says so first ("However, ...", "That would break ..."); further on,
    # "would cause" is as likely a check the agent makes before it follows the proposal
    if _PUSHBACK.search(said[0]) or (dropped and answer and _PUSHBACK.search(answer)):
        return "argued"
    if any(_TAKEN.match(s.strip()) for s in said if s.strip()):
        return "taken"
    return "taken" if acted else "unknown"


_CODE_SPAN = re.compile(r"`([^`\n]{3,80})`")


# what the agent will use, right before the code span ("I can use `X`", "let me switch to `X`")
_USE_BEFORE = re.compile(
    r"\b(?:use|using|add|adding|switch(?:ing)? to|go(?:ing)? with|rely on|call(?:ing)?|with"
    r"|replace \w+ with|(?:change|move|rename|set|turn) (?:it|this|that|them) (?:to|into)"
    r"|implement(?:ing)?|creat(?:e|ing)|writ(?:e|ing))"
    r"(?:\s+(?:the|a|an))?(?:\s+[\w.'\-]+){0,3}\s+$",
    re.IGNORECASE,
)
_NOT_BEFORE = re.compile(
    r"\b(?:won'?t|will not|don'?t|do not|not|never|shouldn'?t|instead of|rather than|avoid"
    r"|leave|stop)\b",
    re.IGNORECASE,
)


def taken_code(answer: str | None, avoid: tuple[str, ...] = ()) -> str | None:
    """The code an agent's answer takes up when it opens by agreeing ("You're right. I can use
    `json.Decoder.DisallowUnknownFields()`."): in its first two sentences, the code span right
    after a verb of use with no negation before it ("I won't use `requests`" takes nothing),
    that is none of `avoid` (what was rejected); or None."""
    said = [x for x in _ANSWER_SENTENCES.split((answer or "").strip()) if x.strip()][:2]
    if not said or not _TAKEN.match(said[0].strip()) or _PUSHBACK.search(said[0]):
        return None
    for sentence in said:
        for m in _CODE_SPAN.finditer(sentence):
            before = sentence[: m.start()]
            code = m.group(1)
            if (
                _USE_BEFORE.search(before)
                and not _NOT_BEFORE.search(before)
                and not any(code in a or a in code for a in avoid if a)
            ):
                return code
    return None


# what a sentence that states a rule or a fact holds: a modal, a rule word or a negation
_RULE_SAID = re.compile(
    r"\b(?:" + MODALS + r"|never|always|only|instead|not|don'?t|doesn'?t|can'?t)\b", re.I
)
# the people of a conversation: a sentence that names them speaks to the moment
_PEOPLE = re.compile(r"\b(?:i|i'?m|i'?ll|i'?ve|me|my|you|your|you'?re|we|us|our|let'?s)\b", re.I)
# a rule that points back ("This should not be changed, only ...") or speaks to a person
_WEAK_FORM = re.compile(
    r"^(?:it|this|that|these|those|they)\b|\b(?:i|me|my|you|your|you'?re)\b", re.I
)
RESTATED_WITHIN = 3  # sentences of the agent's answer, after the one that takes the rule


def restated(rule: str, answer: str | None) -> str | None:
    """The agent's own statement of a rule the user said in a form that points back or speaks to
    a person, when its answer opens by taking it ("This should not be changed, only the
    `--local-dev` flag should install the wrapper" answered "You're absolutely right! Let me fix
    that. The default `enable` should use the binary, and only `enable --local-dev` should
    install the wrapper."): written from the pair, the rule names its subject. None when the
    rule reads well alone or no sentence of the answer restates it (two content words shared,
    a rule word, no person, no question, not the agent's next step)."""
    core = split_note(rule.strip())[0]
    if not answer or not _WEAK_FORM.search(core):
        return None
    said = [s.strip() for s in _ANSWER_SENTENCES.split(answer.strip()) if s.strip()]
    if not said or not _TAKEN.match(said[0]):
        return None
    theirs = content(core)
    for s in said[1 : 1 + RESTATED_WITHIN]:
        if not 6 <= len(s.split()) <= 40 or s.endswith(("?", ":")):
            continue
        if _NARRATION.match(s) or _PEOPLE.search(s) or not _RULE_SAID.search(s):
            continue
        if len(content(s) & theirs) >= 2:
            return s
    return None


def is_question(text: str) -> bool:
    """Whether a memory text holds a question."""
    core = re.sub(r"\s*\([^()]*\)", "", text.strip())  # (its notes in brackets aside)
    return bool(re.search(r"\?(?:\s|$)", core) or _ASKED_WITHOUT_MARK.match(core))


# a question typed without its mark: "Can we use prompt toolkit's completer for the files."
_ASKED_WITHOUT_MARK = re.compile(
    r"^(?:can|could|should|shall|would|do|does|did)(?:n'?t| not)? (?:we|you|i)\b", re.I
)


# a sentence whose subject only points back ("It must happen in flush.", "This breaks the
# build.") and that names nothing itself; or that has no subject at all, opening with its verb
# in the third person ("Never executes the defaulting logic.")
_POINTS_BACK = re.compile(r"^(?:it|this|that|these|those|they|he|she)\b", re.I)
# an effect whose cause is the sentence before, whatever it names ("This is why the test fails
# only on CI."), or an order about what the turn before showed ("Set that up on the base
# model", "Avoid that in a useEffect")
_WHY_BEFORE = re.compile(r"^(?:this|that)(?:'s| is| was) (?:exactly |precisely )?why\b", re.I)
# (an order of a few words: a longer one carries its own reason, "Change that to not be
# strict, we don't want to play catch up with new hook types")
_ORDER_ON_BEFORE = re.compile(
    r"^(?:set|put|move|do|make|keep|use|avoid|change|fix|add|remove|handle|call|run|wrap|leave"
    r"|apply|revert|drop|delete|rename|split|merge|test) (?:it|that|this|them|those|these)\b",
    re.I,
)
ORDER_ON_BEFORE_WORDS = 10
# ... or a short order, kept or forbidden, on something only pointed at ("Do not mess with its
# border.", "Don't change it."), naming nothing a reader could find and saying nothing more (a
# second clause chooses a way: "Remove it completely, no need to deprecate it.")
_POINTED_ORDER = re.compile(
    r"^(?:(?:do not|don'?t|never|always|please|just)\s+)*[a-z]+(?:\s+[a-z]+){0,2}?\s+"
    # (its, it, them; or this, that, these, those ending the order: "files that are generated",
    # "in this repo" and "check that the lockfile is committed" name their thing)
    r"(?:(?:it|its|them|their)\b[^,;:]*|(?:this|that|these|those)\W*)$",
    re.I,
)
POINTED_ORDER_WORDS = 8
# a way whose alternative is in the sentence before ("Instead, accumulate the cost in the
# session."): what it replaces is lost with it
_INSTEAD_OF_BEFORE = re.compile(r"^(?:(?:but|so|and|or)\s+)?instead\b(?!\s+of\b)", re.I)
# what the sentence is about is in the one before: it ends on a word pointing back ("Ensure the
# model info agrees with that."), opens as the rest of a sentence ("That you'll need to pass
# ..."), or as a passive verb with no subject ("Be called, since it's in finally.")
_ENDS_POINTING_BACK = re.compile(
    r"\b(?:with|to|like|as|from|about|than|on|for) (?:that|this|those|these)\W*$", re.I
)
_REST_OF_A_SENTENCE = re.compile(
    r"^(?:that (?:you|we|i|it|they)(?:'ll| will| need| should| can| must)\b|be \w+(?:ed|en)\b)",
    re.I,
)
# a condition or a consequence of what the sentence before said, with no rule of its own ("Only
# if it is part of the repo.", "Then I don't have to repeat the check everywhere.")
_CONDITION_OF_BEFORE = re.compile(
    # (a condition alone, "if" or "when" and its clause to the full stop, with no rule word:
    # "Unless asked never push to main." and "Only in production do we ..." have their rule)
    r"^(?:(?:but|and)\s+)?(?:(?:only|except) (?:if|when)|unless)\b"
    r"(?![^,;:.!?]*\b(?:never|always|must|should|do not|don'?t)\b)[^,;:.!?]*(?:[.!?]|$)",
    re.I,
)
_CONSEQUENCE_OF_BEFORE = re.compile(
    # (after any openers: "Ok, then we won't need it", "Any ideas: then we can drop the shim")
    r"^(?:(?:" + CHAT_OPENERS + r"|" + _ASKS_VIEW + r"|sure|great|good|cool|right|perfect|nice)"
    r"\b[\s,:;!.?\u2014-]*)*"
    r"(?:(?:and|so)\s+)?then,? (?:i|we|you|it|they|that)(?:'ll| will| won'?t| don'?t| do not"
    r"| no longer| can(?:not|'t)?| could| would| need not| wouldn'?t)\b",
    re.I,
)
_NO_SUBJECT = re.compile(
    r"^(?:(?:never|always|only|also|still|just|then|now|silently|actually)\s+)?"
    r"(?!(?:as|is|was|has|does|his|its|this|thus|plus|unless|perhaps|sometimes|always|besides"
    r"|whereas|towards|afterwards|yes|less|across|various|previous|numerous|focus|alias)\b)"
    r"[a-z]{2,}[^s\W]s\s+(?:the|a|an|its|their|all|any|every|no)\b",
    re.I,
)


def lost_subject(text: str) -> bool:
    """Whether a memory's text opens without a subject of its own: a word pointing back to a
    sentence it does not hold, where it names nothing (no code, file, flag or product) a reader
    could anchor it to, or its verb with no subject at all."""
    text = text.strip()
    if _NO_SUBJECT.match(text):
        return True
    return bool(_POINTS_BACK.match(text)) and not SPECIFIC.search(text)


def cause_before(text: str) -> bool:
    """Whether a memory's text states an effect whose cause is the sentence before it ("This is
    why the test fails only on CI."), a way whose alternative is there ("Instead, X"), what it is
    about ("... agrees with that."), or orders what to do with what the turn before showed
    ("Avoid that in a useEffect"), whatever it names. (Not a cue of the lesson model, which was
    fitted with `lost_subject` alone.)"""
    text = text.strip()
    said = split_note(text)[0]  # (without the writer's own note on it)
    return bool(
        _WHY_BEFORE.match(text)
        or _INSTEAD_OF_BEFORE.match(text)
        or _ENDS_POINTING_BACK.search(said)
        or _REST_OF_A_SENTENCE.match(text)
        or _CONDITION_OF_BEFORE.match(text)
        or consequence_of_before(text)
        or (_ORDER_ON_BEFORE.match(text) and len(text.split()) <= ORDER_ON_BEFORE_WORDS)
        or (
            _POINTED_ORDER.match(said)
            and len(said.split()) <= POINTED_ORDER_WORDS
            and not SPECIFIC.search(said)
        )
    )


def consequence_of_before(text: str) -> bool:
    """Whether a sentence opens as the consequence of the one before it ("Then I don't have to
    repeat the check everywhere."); read on the words as said, since `plain` drops the "then"."""
    return _CONSEQUENCE_OF_BEFORE.match(text.strip()) is not None


# where a statement is about the code as it is now, one place of one file: code moves, so a
# later session reads a line number as noise ("unused variable x at line 485", "on line 31")
_LINE_OF_CODE = re.compile(
    r"\b(?:at|on|in|near|see)\s+lines?\s+\d+\b|\blines?\s+\d+\s*[-\u2013]\s*\d+\b", re.I
)
# a doubt or an impression without the rule it would lead to ("I'm not sold this works")
_DOUBT = re.compile(
    r"^(?:i'?m|i am) not (?:sold|sure|convinced)\b|^i (?:doubt|don'?t think (?:this|that|it))\b"
    r"|^not sure (?:this|that|it|if|whether)\b",
    re.I,
)
# a word that makes it a rule after all ("I'm not sure why, but the tests must run in UTC")
_RULE_WORD = re.compile(r"\b(?:" + MODALS + r"|never|always)\b", re.I)
# (said anywhere in a turn typed in lowercase, these make it a rule: "add tests for the parser.
# they must not hit the network")
_SAID_TO_HOLD = re.compile(
    r"\b(?:never|always|must not|mustn'?t|should not|shouldn'?t|do not|don'?t)\b", re.I
)
# a wish for the task at hand ("would be great if we can validate this", "it'd be nice to")
_WISH = re.compile(
    r"\b(?:would|it'?d|that'?d) be (?:great|nice|good|cool|awesome|helpful) (?:if|to)\b", re.I
)


# the state of one failure now ("The test is failing because the path isn't stored"): the fix
# that follows makes it false; the lesson, if any, is the cause as a rule
_FAILING_NOW = re.compile(
    r"^(?:the|this|that)\s+(?:[\w`.-]+\s+){0,2}(?:tests?|build|check|ci|job|pipeline|lint|step)"
    r"\s+(?:is|are|keeps?)\s+(?:still\s+)?failing\b",
    re.I,
)


def one_off(text: str) -> str | None:
    """Why a candidate is about the moment rather than a lasting rule, or None: it points at a
    line of the code as it is, voices a doubt with no rule in it, or wishes for something done
    in this task."""
    if _LINE_OF_CODE.search(text):
        return "about one line of the code as it is now, not a lasting rule"
    if _DOUBT.match(text.strip()) and not _RULE_WORD.search(text):
        return "a doubt, not a rule"
    if _WISH.search(text):
        return "a wish for this task, not a rule"
    if _FAILING_NOW.match(text.strip()):
        return "the state of a failure now, not a lesson"
    return None


# the speaker's next step, told as it is taken ("I need to check where the registry is", "Looking
# at the test file, I can see ...", "One concern: I'll verify ...")
_NARRATION = re.compile(
    r"^(?:[\w ]{1,24}:\s+)?(?:(?:now|first|next|then|so|ok(?:ay)?),?\s+)?(?:looking at\b"
    r"|i(?:'ll| will| need to| have to| can see| see| am going to|'m going to| want to"
    r"| also need to)\b)",
    re.I,
)
# the speaker telling what its change does or will do ("This change adds the `paginate`
# parameter ...", "To fix this, we need to modify the `RepoMap` class ...", "These changes make
# ...", "In `test_x`, we've added ...", "First, we need to import ..."): the edit is in the code,
# the sentence is its story
_EDIT_VERBS = (
    r"(?:modify|add|update|change|remove|replace|refactor|create|move|rename|implement|import"
    r"|adjust|edit|introduce|wrap|extend|make)"
)
_CHANGE_TOLD = re.compile(
    r"^(?:(?:first|next|then|finally|now|so|also|additionally|lastly|you'?re right|good (?:point"
    r"|catch)|ok(?:ay)?|alright|i see)[,.!]?\s+)*(?:(?:in|inside|within|for) [^,]{1,80},\s*)?(?:"
    r"(?:this|these|my|the (?:new|updated|modified|revised|above|following|proposed))"
    r"(?: [\w`-]+){0,2}? (?:change|changes|edit|edits|update|updates|modifications?"
    r"|implementation|approach|version|patch|diff|solution|refactor(?:ing)?)\b"
    r"|to (?:fix|address|resolve|implement|add|support|handle|make|include|achieve|accomplish"
    r"|solve|enable|avoid|prevent|ensure|update|change|get|allow|do)\b[^,]{0,160},\s*(?:we|i|you)"
    r"(?:'ll| will| (?:also )?need to| must| should| can| have to| want to)\b"
    r"|this (?:new )?(?:test|code|function|method|class) will\b"
    # what the tests just written check ("This test ensures that ...", "Both tests mock ...",
    # "Finally, it asserts that ...")
    r"|(?:(?:this|these|both)(?: new| updated| modified)?|the (?:new|updated|modified)) tests?"
    # (named: "The new test `TestInstall_KeepsUserHooks` verifies that ...")
    r"(?: `[^`\n]{1,120}`| (?-i:[Tt]est_?[A-Z0-9_]\w{0,120}|[a-z]\w*_\w+|[a-z]+[A-Z]\w*))?"
    r" (?:ensures?|verif(?:y|ies)|checks?|asserts?|confirms?|makes? sure|mocks?)\b"
    r"|it (?:asserts|verifies|checks) that\b"
    # the version just written told ("In this corrected version, ...", "The functionality
    # remains the same, but ...")
    r"|in (?:this|the) (?:corrected|updated|revised|modified|new|fixed|final) (?:version|code)\b"
    r"|the (?:functionality|behaviou?r|logic|rest) (?:remains|stays) (?:the same|unchanged)"
    r"[,;] but\b"
    # what the change is expected to do ("This should resolve the `TypeError` ...")
    r"|(?:this|these|that)(?: change| changes| fix| edit)? (?:should|will|would) (?:now )?"
    r"(?:resolve|fix|address|solve|correct|make the|ensure|prevent|handle)\b"
    r"|(?:we|i)(?:'ve| have)? (?:just |also )?(?:added|updated|modified|changed|removed|replaced"
    r"|refactored|introduced|created|moved|renamed|implemented|wrapped|adjusted|made)\b"
    r"|(?:we|i) (?:also )?(?:will |'ll )?" + _EDIT_VERBS + r"\b"
    # the speaker's own plan as an order ("Modify the test to remove the check ...")
    r"|(?:let'?s (?:also )?" + _EDIT_VERBS + r"|(?:modify|update|change|edit|adjust) the)\b)",
    re.I,
)
_EDIT_NEEDED = re.compile(
    r"\b(?:(?:we|i) (?:also |then |first )?(?:need to|will need to|have to|should)"
    r"|(?:we|i|you) (?:may|might) (?:also )?need to|(?:we|i) (?:don'?t|do not) need to)"
    r" (?:make (?:any )?(?:further |more |other )?(?:changes|modifications) |"
    + _EDIT_VERBS
    + r"\b)",
    re.I,
)
# a line of a tool's output pasted into the conversation ("│ line 31: field retry not found ...
# failed with exit code 1"): evidence, not a lesson
_OUTPUT_LINE = re.compile(
    r"^[\u2502\u2503|>\u00bb]|\bexit (?:code|status) \d+\b|^\W*(?:error|fatal|panic):"
    # a stack's frames: "(anonymous) @ polyfills.js:12", "at render (app.js:41:7)"
    r"|@ [\w./\\-]+\.\w+:\d+|\bat [\w.$<>]+ \([^)]*:\d+(?::\d+)?\)|\(anonymous\)",
    re.I,
)
# the state of the work at the moment ("X still exists but is now only called from Y", "we still
# need the shim", "the issue is now that ..."): true of this session's code, not of a later one
_MOMENT_STATE = re.compile(
    r"\b(?:still|anymore|any more|at the moment|so far|for now|(?:is|are) now|now only|temporarily)\b",
    re.I,
)
# a sentence that answers the one before it ("However, that is not what happens: ...")
_ANSWERS = re.compile(r"^(?:however|but|that said|instead|still|yet|otherwise)\b", re.I)


# a work order to the agent: the task of the moment ("add a discount field and make sure the
# tests pass", "please fix the failing test", "can you update the changelog", "finally do that
# to the exporter too")
_REQUEST = re.compile(
    r"^(?:(?:please|pls|now|ok(?:ay)?|so|finally|also|then|and|next)[,]?\s+)*(?:(?:can|could|would"
    r"|will) you|i (?:want|need) you to|help me|go ahead and|do (?:that|this|the same|it)\b|(?:add|fix|update|implement|create|write|make|change|remove"
    r"|refactor|rename|move|run|check|look|investigate|review|build|set up|setup|migrate|bump"
    r"|upgrade|delete|clean up|split|merge|rebase|commit|push|open|finish|continue|test|undo|revert"
    r"|scrap|ditch|discard|forget|next up"
    r"|document|summari[sz]e|explain)\b)",
    re.I,
)


def is_request(text: str) -> bool:
    """Whether a sentence orders the task at hand rather than states a rule: a work order with
    no rule word ("always", "never", "must", "should", ...) in it, after its openers of
    conversation ("Great, now finally do that to X too")."""
    text = plain(text)
    # (what a turn typed in lowercase says after the order is the order's spec: "Make a
    # polling subclass. it should override tool_output")
    return bool(_REQUEST.match(text)) and not (
        _RULE_WORD.search(typed_lowercase(text)[0]) or _SAID_TO_HOLD.search(text)
    )


# a guess read off an error, not a cause found ("Based on the error message, it appears there's
# a conflict ...", "The error message suggests that the test fails because ...")
_GUESS = re.compile(
    r"\b(?:it (?:appears|seems|looks like)|(?:appears|seems) to be|(?:suggests|indicates)"
    r"(?: that)?|i suspect|(?:is|are) (?:probably|likely)|might be|may be|could be)\b",
    re.I,
)


def is_output(text: str) -> bool:
    """Whether a sentence is a line of a tool's output pasted into the conversation."""
    return _OUTPUT_LINE.search(text.strip()) is not None


# ... or what it just made does ("The `get_head()` method we added will handle ...", "The
# changes in the REPLACE section address ...")
_MADE_HERE = re.compile(
    r"\b(?:we|i)(?:'ve| have)? just (?:added|introduced|created|wrote|made)\b"
    r"|^the \S+(?: \w+){0,3} (?:we|i)(?:'ve| have)? (?:just )?(?:added|introduced|created|wrote)\b"
    r"[^.]*\b(?:will|should|now|already)\b"
    r"|^the changes? (?:in|to|made|above|below)\b[^.]{0,80}\b(?:address|fix|resolve|ensure|make|add"
    r"|remove)(?:s|es)?\b",
    re.I,
)


# ... or what the code it just wrote does, told step by step ("If a `ValueError` is raised, we
# catch it and add an error message", "The method takes a file name as an argument, checks ...")
_CODE_TOLD = re.compile(
    r"\bwe (?:then |now |also )?(?:catch|raise|iterate|loop|append|initiali[sz]e|convert|wrap"
    r"|skip|return|pass|store) (?:it|them|over)\b"
    r"|^the (?:new |updated )?(?:method|function|helper) (?:takes|accepts|receives|iterates"
    r"|loops)\b",
    re.I,
)
# (a consequence said with it makes it a finding: "The `Cache` class overrides `__eq__` but not
# `__hash__`, so instances break in sets")
_CONSEQUENCE = re.compile(
    r"\bbut not\b|\bbecause\b|, so\b|\bwhich means\b|\bcaus(?:es|ing)\b|\bbreak(?:s|ing)?\b"
    r"|\bfail(?:s|ing)?\b",
    re.I,
)


# ... or what it will do at one place of the code it names, a way given up said with it ("In the
# `blame` function, instead of getting the current files, we should get ..."): its next edit,
# unless said to hold always ("In `routes.py` we must always check the token")
_AT_A_PLACE_WE_WILL = re.compile(
    r"^(?:in|inside|within) (?:the )?`[^`\n]{1,80}`(?: (?:function|method|class|file|module"
    r"|component|handler|test|hook))?,\s*instead of [^,;]{1,120},\s*(?:we|i)(?:'ll| will"
    r"| should| need to)\b(?!.*\b(?:always|never|every)\b)",
    re.I,
)


def tells_an_edit(text: str) -> bool:
    """Whether a sentence tells what the speaker's change does or is about to do ("This change
    adds ...", "To fix this, we need to modify ...", "Modify the test to ...")."""
    text = text.strip()
    return bool(
        _CHANGE_TOLD.match(text)
        or _EDIT_NEEDED.search(text)
        or _MADE_HERE.search(text)
        or _AT_A_PLACE_WE_WILL.match(text)
        or (_CODE_TOLD.search(text) and not (_CONSEQUENCE.search(text) or _RULE_WORD.search(text)))
    )


def unanchored(text: str) -> str | None:
    """Why a sentence picked alone from a message (not by a rule that read its context) cannot
    stand alone as a memory, or None: it narrates the speaker's next step, answers the sentence
    before it, is a line of a tool's output, tells the state of the work at the moment or is a
    checklist of results."""
    text = text.strip()
    if _NARRATION.match(text):
        return "the speaker's next step, not a lesson"
    if tells_an_edit(text):
        return "the story of an edit, not a lesson"
    if _GUESS.search(text):
        return "a guess, not a cause found"
    if _ANSWERS.match(text):
        return "an answer to the sentence before it"
    if is_output(text):
        return "a line of a tool's output, not a lesson"
    if _MOMENT_STATE.search(text):
        return "the state of the work at the moment, not a lesson"
    if "\u2705" in text or "\u2714" in text:
        return "a checklist of results, not a lesson"
    return None
