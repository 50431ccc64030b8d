"""What a user tells an agent about how to work, in the user's own words.

People rarely say "always X" or "from now on Y". They answer what the agent just did: they
disagree ("that is not correct, we don't gitignore the whole folder"), propose another way as a
question ("why not adding .entire/.gitignore?", "can we use our logging framework?"), or state
what should happen ("the cli should handle that automatically, not you"). This module finds
those sentences and keeps them, cleaned, with the sentence that explains them.

A message is read with its situation: a reply to a rejected tool call or a message typed while
the agent worked is a correction by nature; the first request of a task is a task, so only
norms said to last ("always", "never", "from now on", "in this repo", "every commit") count there:
its "make sure ...", "ensure ...", "use X instead of Y" and "I want ..." say how this task is done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reos_memory.squirrel.text.prose import clip, sentences, typed_lowercase, words

MAX_CHARS = 420
# a message opening an episode is its task; a short one may still be a correction that the
# episode cutter took for a new task ("let's not leave all the tests to the very end")
SHORT_REQUEST = 20


@dataclass(frozen=True)
class Instruction:
    text: str
    kind: str  # preference | guard | invariant
    polarity: int  # -1: a prohibition
    durable: bool  # said as a lasting rule (always, never, everywhere, make sure)
    cue: str  # which rule found it, for the episode's record


# a lasting norm, in any message
_NORM = re.compile(
    r"\b(?:always|never|from now on|going forward|make sure|ensure|everywhere|by default"
    r"|in (?:this|our) (?:repo|project|codebase)|(?:we|you) (?:must|should)(?: not|n't)?"
    r"|must(?: not|n't)?|should(?: not|n't)? (?:be|use|never|always|handle|only|not|just|go|live|stay)"
    r"|prefer|rather than|instead of|keep (?:each|every|all)|(?:each|every) (?:commit|change|step|time)"
    # a constraint to hold ("the CLI has to keep working on Go 1.21")
    r"|(?:has|have|needs?) to (?:keep|stay|remain)"
    # what each of a kind needs, where all of a kind go ("every new model needs a schema
    # entry", "all user facing strings go through the i18n files")
    r"|(?:every|each|all|any) [\w -]{1,40}? (?:needs?|requires?|goes|go|lives?|belongs?)"
    r" (?:an?|the|at least|through|in|into|under|to)"
    # what the team does to all of a kind ("we squash merge everything")
    r"|^(?:\w+\W+){0,2}we (?!need|have|want|should|must|can|could|will|tried)[a-z]+(?: [a-z]+)?"
    r" (?:everything|every|all)"
    # a statement with a prohibition after it ("we pin every version, don't leave it as >=")
    r"|, (?:so |and )?(?:don'?t|do not|never) (?!worry|bother|mind|care)\w+)\b"
)
# a document pasted into the turn, not the user's words: a page's links and front matter
# ("... [ask for help](/docs/support.html) ... --- parent: Troubleshooting"), its tags
_PASTED_DOC = re.compile(
    r"\[[^\]\n]+\]\((?:/|https?:|\.\.?/)[^)\s]*\)|</?(?:doc|document|file|context)>"
    r"|(?:^|\s)---\s+[a-z_]+:\s"
)
# a user turn the agent wrote: a plan accepted into a new context
_AGENT_WRITTEN = re.compile(r"^\s*(?:implement the following plan|here is the plan)\b", re.I)
_PLEASE = re.compile(r"\bplease\b")
# disagreement with what the agent did or said
_DISAGREE = re.compile(
    r"(?:^(?:no|nope|nah)\b[,.!]?|\b(?:is|was|that'?s|this is|it'?s) not (?:correct|right|true|what)"
    r"|\bisn'?t (?:correct|right|true)|\bthat'?s (?:wrong|incorrect)|\bwrong\b"
    r"|\bi did(?:n'?t| not) (?:say|ask|want)|\bnot you\b|\bshouldn'?t be\b|\bshould not be\b"
    r"|\bmakes? no sense\b|\bmade (?:it|that) up\b|\bmake (?:it|that) up\b|\bdoesn'?t work\b"
    r"|\bnot (?:needed|necessary|what i)\b|\bno need\b|\bwe don'?t\b|\bwe do not\b"
    r"|\bi don'?t (?:want|think|like)\b|\bi do not want\b|\bnot sold\b|\bi (?:would|'d) not\b)"
)
# a report of how things stand, which opens a task ("the export still looks wrong on windows",
# "login doesn't work"), not a disagreement with the agent
_STATUS = re.compile(
    r"\b(?:(?:still|also) )?(?:looks?|seems?|is|are|was|were|gets?|comes? out) (?:still |all )?wrong\b"
    r"|\bdoesn'?t work\b"
)
# another way, proposed as a question or a suggestion
_PROPOSE = re.compile(
    r"^(?:(?:but|and|so|hmm+|emm+|ok(?:ay)?|well|also|question)\W+)*(?:"
    r"why (?:not|are we not|aren'?t we|don'?t we|do we not|not just|are we)"
    r"|can'?t (?:we|you)|can (?:we|u) (?:use|just|not|provide|keep|reuse|have)|can you (?:use|just)"
    r"|could (?:we|you) (?:use|just|have|keep|reuse)"
    r"|what about|how about|is there (?:no|not|any|another|a better|other)"
    r"|are we (?:missing|doing|using|not)|do we (?:need|have|really)|shouldn'?t (?:we|it|this)"
    r"|let'?s (?:not|just|use|keep|stick|avoid|go with|rather)"
    r"|i (?:would|'d) (?:rather|prefer|like)|i (?:want|expect)|we (?:want|need|should|use|prefer)"
    r"|please|remember to|remove it|rather|instead|use |(?:don'?t|do not) (?!worry|bother|mind|care)"
    r"|never |always |only )"
)
_NEGATIVE = re.compile(
    r"\b(?:never|don'?t|do not|shouldn'?t|should not|must not|mustn'?t|no need to|not you|let'?s not"
    r"|stop|avoid|did not say|didn'?t say|did not ask|didn'?t ask|we don'?t|we do not)\b"
)
# what a task is done by, not a rule: "make sure the tests pass", "ensure it still builds"
_ACCEPTANCE = re.compile(
    r"\b(?:make sure|ensure|check|verify)(?: that)? (?:the |all (?:the )?|our )?(?:tests?|specs?|build"
    r"|lint(?:er)?|ci|checks?|it|everything|nothing|the code)(?: \w+)? (?:still )?(?:pass(?:es)?"
    r"|work(?:s)?|succeeds?|compiles?|builds?|breaks?|(?:is|are|stays?) green|runs?"
    r"|cover(?:s)?|exercises?)\b"
    # ... or what this work did, pointed at ("ensure it is not called", "make sure they exist",
    # "ensure it picked up the new function")
    r"|\b(?:make sure|ensure|check|verify) (?:that )?(?:it|they|this|these|those)\b"
)
# work asked for now: "we need to update the changelog", "you have to rerun it"
_TASK_LEAD = r"^(?:(?:ok(?:ay)?|so|and|also|now|then|next)\W+)*"  # ("ok so we need to ...")
_TODO = re.compile(
    _TASK_LEAD + r"(?:we|you|i) (?:(?:still|also|first|then) )?"
    r"(?:need to|have to|gotta|should|must|want to|will need to)\s+(?!not\b|never\b|always\b)\w+"
)
_PLEASE_DO = re.compile(_TASK_LEAD + r"please\s+\w+")
_CONTRAST = re.compile(r"\b(?:instead|rather than|not|never|only|no longer|don'?t|without)\b")
# a norm meant to outlast the task it is said in
_LASTING = re.compile(
    r"\b(?:always|never|from now on|going forward|everywhere|by default|in general|whenever"
    r"|in (?:this|our|the) (?:repo|repository|project|codebase|team|crate|monorepo|workspace|org"
    r"|company)|(?:each|every) (?:commit|change"
    r"|pr|pull request|time|step|file|test|function|module))\b"
)
_DURABLE = re.compile(r"\b(?:always|never|from now on|going forward|everywhere|make sure|ensure)\b")
# the next sentence explains the one before ("... since that is the stable link")
_EXPLAINS = re.compile(
    r"^(?:since|because|as |that'?s why|that is why|so (?:that|we)|otherwise|especially"
    r"|e\.g\.|i\.e\.|which|this (?:is|way|makes|means)|it (?:should|would|is|makes))",
    re.I,
)
# this sentence points back at the one before ("This shouldn't be a thing.")
_POINTS_BACK = re.compile(r"^(?:this|that|it|they|these|those)\b(?! is (?:a|the) )", re.I)
# only about the moment: consent, thanks, process steps of this task
_MOMENT = re.compile(
    r"^(?:yes|yep|yeah|ok(?:ay)?|sure|thanks?|thank you|great|perfect|cool|nice|lgtm|looks good"
    r"|go ahead|continue|proceed|do it|sounds good)\b"
    r"(?!.*\b(?:but|should|instead|don'?t|not|always|never|every|must)\b)",
    re.I,
)
_INFO_QUESTION = re.compile(
    r"^(?:(?:also|and|but|so|ok(?:ay)?)\W+)?(?:what|where|when|which|who|how (?:do|does|did|is|are|can)"
    r"|why (?:does|did|is|was)\b(?! (?:it|this|that) not\b)"
    r"|what'?s|did (?:we|you)|is (?:that|this|it) because|do we also|have (?:we|you)"
    r"|can you (?:do a|search|check|look|explain|tell|show)|can we double check)\b",
    re.I,
)
_TENTATIVE = re.compile(
    r"\b(?:i wonder|wondering|somehow|not sure|i'?ll take it from here|shouldn'?t be (?:too |that )?"
    r"(?:hard|difficult|a problem|an issue|much))\b"
)
# a way proposed in passing ("I think we can just change --local-dev to ...")
_WE_COULD = re.compile(
    r"\b(?:we|you)\b(?: \w+)? (?:can|could|should|would|need to|have to) (?:just |simply |also )?\w+"
)
# an order: the sentence opens with a verb of doing
_IMPERATIVE = re.compile(
    r"^(?:(?:no|ok(?:ay)?|please|just|and|but|so|then)\W+)*(?:use|add|remove|fix|keep|make|put|move"
    r"|rename|delete|revert|change|write|run|test|try|avoid|go|do|don'?t|only|stop|skip|leave"
    r"|split|merge|update|create|call|return|prefer|drop|replace|reuse|rewrite|wrap|inline"
    r"|extract|document|mention|ask|check)\b"
)


def find(text: str, situation: str) -> list[Instruction]:
    """The instructions in one user message. `situation`: `rejection` (the user's reason for
    rejecting a tool call), `queued` (typed while the agent worked), `reply` (a turn answering
    the agent) or `request` (the first request of a task)."""
    if _AGENT_WRITTEN.match(text):
        return []
    task = situation == "request" and states_task(text)
    sents = [part for s in sentences(text) for part in typed_lowercase(s)]
    out: list[Instruction] = []
    used: set[int] = set()
    for i, s in enumerate(sents):
        if i in used:
            continue
        low = s.lower()
        if len(words(s)) < 4 or _MOMENT.match(low) or s.count("`") > 8 or _PASTED_DOC.search(s):
            continue
        if _INFO_QUESTION.match(low) or _TENTATIVE.search(low):
            continue  # asking, or thinking aloud: not telling
        cue = _cue(low, situation, task)
        if cue is None:
            continue
        start, end = i, i + 1
        if _POINTS_BACK.match(s) and i > 0 and i - 1 not in used:
            start = i - 1
        while end < len(sents) and end - start < 3 and _EXPLAINS.match(sents[end]):
            end += 1
        used.update(range(start, end))
        said = clip(" ".join(sents[start:end]), MAX_CHARS)
        negative = bool(_NEGATIVE.search(low))
        durable = bool(_DURABLE.search(low))
        out.append(
            Instruction(
                text=said,
                kind=(
                    "guard"
                    if negative and _imperative_no(low)
                    else "invariant"
                    if cue == "fact"
                    else "preference"
                ),
                polarity=-1 if negative else 1,
                durable=durable,
                cue=cue,
            )
        )
    return out


# work asked for now in any situation, unless said to last: the work's acceptance ("make sure
# it works"), one more case of it ("... for the list command as well", "... too"), something
# to be made ("there should be a test for the rebase case")
_MORE_OF_THE_TASK = re.compile(
    r"\b(?:as well|too)\W*$|^there (?:should|needs? to) be (?:an?|one|some)\b"
    # said of this work by name: "the retry count in this PR should be 5", "for now"
    r"|\b(?:in|for) this (?:pr|pull request|change|branch|commit|diff|ticket|task|patch)\b"
    r"|\bfor now\b|\b(?:yet|right now|for the moment)\W*$"
    r"|\bfor (?:this|that)\b(?! (?:kind|sort|type|reason|purpose|matter)\b)"
    # a change to a thing of this work wished for: "I want the summary to show the count"
    r"|^i (?:want|need|'d like|would like) (?:the|this|that|it|these|those)\b"
    # what the user meant by the last request: "i wanted the error mapped to a 404"
    r"|^(?:(?:no|nope|nah|ok(?:ay)?|sorry|well|so|and|but)\W+)*i (?:wanted|meant|mean|asked for"
    r"|was asking)\b"
)
# ... or ordered: "make the function return an error instead", "rename it to --output" (on
# rejecting a call, the same words say what the user chose instead of it: "fix the test, the
# code is right")
_CHANGE_ORDER = re.compile(
    r"^(?:(?:no|ok(?:ay)?|please|just|and|but|so|then|now)\W+)*(?:make|change|rename|move|add"
    r"|remove|delete|update|fix|refactor|rewrite|split|merge|extract|inline|replace|separate"
    r"|turn|convert|revert|undo|scrap|ditch|drop|restore|redo) (?:the|this|that|these|those|it|them)\b"
)


# ... or something to make, in a turn after the task's request (aider's users type each next
# piece of work as an order: "Add a paginate param to cmd_diff", "Mock RepoMap and ensure it is
# not called", after an undo too): the work itself, unless it chooses between ways ("instead",
# "only", "don't", "not the X"), gives a reason or is said to last
_MAKE_ORDER = re.compile(
    r"^(?:(?:no|ok(?:ay)?|please|just|and|but|so|then|now|also)\W+)*(?:add|make|create|write"
    r"|implement|build|mock|generate|plot|draw|show|print|include|refactor|have|accumulate|catch"
    r"|call|pass|emit|raise|return|put|accept|offer|store|save|send|set|log|give|allow|support"
    r"|change|rename|move|update|replace)\b"
)
_CHOICE = re.compile(
    r"\b(?:instead|rather|don'?t|do not|never|only|not (?:a|an|the|in|on|to|by|via|with|from)"
    r"|no longer|without|prefer|always)\b"
)
_REASON = re.compile(
    r"\b(?:because|since|so that|otherwise)\b|, (?:the|it|that|this) (?:is|are|was|'s)\b"
)


# a report of trouble now, which is the task ("the login screen is crashing on android 13",
# "pytest is picking up the wrong settings", "the tests fail in CI with ...", "you're skipping
# the first row now"), not a rule
_TROUBLE = re.compile(
    r"\b(?:(?:is|are|was|were|keeps?)\s+(?:still\s+)?(?:crashing|failing|hanging|throwing|erroring"
    r"|timing out|breaking)|(?:crash|fail|hang|throw|error)(?:s|ed)?\s+(?:in|on|with|when|locally"
    r"|again)|stack ?trace|traceback|(?:is|are|was|were)\s+(?:still\s+)?(?:hitting|picking up"
    r"|skipping|ignoring|returning|showing|using)\s+the\s+wrong|you(?:'re|\s+are)\s+(?:still\s+)?"
    r"\w+ing\b[^.]*\bnow)\b",
    re.IGNORECASE,
)
# what the user sees now, pointed at: "This happens even on wide screens", "Same problem if the
# app runs as an API", "Notice it got the filename wrong"
_OBSERVED = re.compile(
    r"^(?:(?:no|nope|nah|but|and|also|yeah|well|hmm+|ok(?:ay)?|so)\W+)*"
    r"(?:(?:this|that|it) (?:still |also )?(?:happens|occurs)|same (?:problem|issue|thing|error"
    r"|bug)|notice (?:that |how )?(?:it|this|that|they))\b",
    re.IGNORECASE,
)


# an order at one place of the code, named as code ("in cmd_diff catch `ValueError` when you
# set it", "in `test_cache_options` make sure RepoMap() is called with refresh"): this work's
# detail (a place of a kind, "in tests, use the fake clock", is a rule's scope)
_AT_ONE_PLACE = re.compile(
    r"^(?:(?:no|ok(?:ay)?|and|but|so|then|now|also)\W+)*in (?:the )?`?(?:[a-z][a-z0-9]*_[a-z0-9_]*"
    # (a folder's name is a place of a kind: "in unit_tests use the fake clock")
    r"[a-z0-9](?<!tests)(?<!specs)(?<!fixtures)(?<!utils)(?<!helpers)|\w+\(\))`?"
    r"(?: (?:function|method|test|class))?,? "
)
# (said to last by a norm word: "in `routes.py` every endpoint needs an auth decorator")
_NORM_WORD = re.compile(r"\b(?:must|should|every|each|all|needs? to|ha(?:ve|s) to)\b")


def asked_now(text: str) -> bool:
    """Whether a sentence of the user's asks for work now (its acceptance, more of it, what
    the last request meant, an order at one named place of the code) or reports what is seen
    now, and says nothing to last: the reading
    `find` gives every situation, for the user's sentences picked another way."""
    return _asks_now(text.lower().strip())


def _asks_now(low: str, order_too: bool = False) -> bool:
    """`asked_now` of a lowercased sentence; `order_too`: a change ordered to a thing of this
    work ("make the function return ...") counts as well."""
    return bool(
        (
            _ACCEPTANCE.search(low)
            or _MORE_OF_THE_TASK.search(low)
            or (order_too and _CHANGE_ORDER.match(low))
            or _OBSERVED.match(low)
            or (
                _AT_ONE_PLACE.match(low)
                and not (_CHOICE.search(low) or _REASON.search(low) or _NORM_WORD.search(low))
            )
        )
        and not _LASTING.search(low)
    )


def pasted_doc(text: str) -> bool:
    """Whether a sentence of the user's turn comes from a document pasted into it."""
    return _PASTED_DOC.search(text) is not None


def reports_trouble(text: str) -> bool:
    """Whether the user's sentence reports trouble of the moment (the task), not a rule."""
    return _TROUBLE.search(text) is not None or _OBSERVED.match(text) is not None


# where an order to make something goes on to describe the thing made ("add a committer param,
# which makes every commit message start with X", "add another case and make sure the flag is
# false"): a norm word there is the thing's spec or the work's acceptance, not a rule
_MADE_THING_SPEC = re.compile(
    r",? (?:which|that) (?:causes|makes|means|lets|will|should)\b|\band (?:make sure|ensure|check)\b"
)


def _just_the_work(low: str) -> bool:
    """Whether an order chooses no way over another, gives no reason and says nothing to last."""
    return not (_CHOICE.search(low) or _LASTING.search(low) or _REASON.search(low))


def _spec_of_an_order(low: str) -> bool:
    """Whether an order to make something carries a norm word only in the description of the
    thing made ("every" there says what the thing does), and chooses no way anywhere ("... that
    should never hit the network" does) and gives no reason before it."""
    if not _MAKE_ORDER.match(low):
        return False
    m = _MADE_THING_SPEC.search(low)
    if m is None:
        return False
    return _just_the_work(low[: m.start()]) and not _CHOICE.search(low, m.start())


# a fact of the project said outright: its subject a thing of the project (not a person, not a
# pointer back), a verb of how it is, and a word of scope or contrast ("the API is versioned in
# the URL, not a header", "CSS goes in the module files, no global stylesheets")
_FACT = re.compile(
    r"^(?:(?:fyi|btw|also|and|just so you know|note)\W+)*(?!(?:i|you|it|this|that|these|those|he"
    r"|she|they|we|there|here|what|which|who|why|how|if|when|so|but|and|or|maybe|yes|no|ok|my"
    r"|your)\b)(?:the |our |all |every |each )?[\w`./@-]+(?: [\w`./@-]+){0,3} (?:(?:is|are)"
    # ("is" only with what is done to it: "is versioned in the URL", not "is not a link")
    r"(?: only| always| never)? (?:\w{2,}ed|built|run|kept|written|set|made|sent|read|shown|done by"
    r"|taken from|hidden)|lives?|goes|go|runs?|uses?|speaks?|talks?|reads?|follows?|belongs?"
    r"|comes? from|needs?|has to|have to|must)\b"
)
# (one person's, or a pointer: "the ticket is assigned to Maria, not me", "all of them use ...")
_PERSONAL = re.compile(r"\b(?:my|me|i(?![./]))\b|^(?:all|both|none|each|some) of\b")
# (a pick, a plan or a question after the statement: "..., let's go with that", "..., is that
# expected", "..., can you check")
_THEN_ASKED = re.compile(
    r",\s*(?:let'?s|lets|go with|is (?:that|this|it)|are (?:they|those|these)|can you|could you"
    r"|should (?:i|we)|do you|any idea)\b"
)
# ... or what the team does, said of itself ("we keep components dumb here", "we write error
# messages lowercase with no trailing period", "in this crate we avoid async in the core")
_WE_DO = re.compile(
    r"^(?:(?:fyi|btw|also|and|just so you know|note|in (?:this|our) \w+)\W+)*we (?:(?:usually"
    r"|also|generally|typically|normally) )?(?:keep|write"
    r"|use|avoid|deploy|run|put|store|squash|prefer|follow|review|pin|name|test|ship|release|merge"
    r"|rebase|reprocess|build|publish|version|tag|log|format|lint)\b"
    # (of a thing named, not a pointer back; the team's, not one person's: "we run it here",
    # "we build the image here on my laptop" are about the moment)
    r"(?! (?:it|this|that|them|these|those)\b)"
)
_SCOPE = re.compile(
    r", not\b|\bnot (?:a|an|the|in|on|to|by|via|with|from)\b|\bonly\b|\bno \w|\bevery\b"
    r"|\bnever\b|\balways\b"
)
_HERE = re.compile(r"\bhere\b")  # (of what the team does: "we keep components dumb here")
# (a subject of a kind, not of one thing: "all ...", "each ..." ("every" is a word of scope),
# or a bare plural with a norm or a verb of how things are: "base images have to come from the
# internal registry", "integration tests need docker running locally")
_QUANTIFIED = re.compile(
    r"^(?:all|each) |^(?:(?:fyi|btw|also|and|note)\W+)*(?!(?:the|this|that|these|those|its"
    r"|their|his|her|my|your|users|people|customers|we|they)\b)(?:[a-z][\w-]* ){0,2}[a-z][\w-]*"
    r"[^s\W]s (?:(?:need to|have to|can'?t|cannot)(?! be\b)|follow|live|go|come from|belong|need(?! to\b)"
    r"|use|run|talk|speak)\b"
)
# (... not the state of this work or a pick among options: "the migration is done, not the
# seeding", "the second one is better")
_NOW = re.compile(
    r"\b(?:now|still|currently|anymore|at the moment|yet|again|broken|failing|fails|failed"
    r"|crash\w*|wrong|error(?! (?:messages?|handling|codes?|types?|pages?|responses?))|bug|(?:is|are) (?:done|finished|complete|ready|better|worse|fine|good"
    r"|ok|okay|correct|right|nicer|cleaner|simpler|applied|merged|deployed|fixed|pushed|committed"
    r"|created|removed|deleted|updated|added|installed|released|resolved|reverted|landed|shipped"
    r"|left)|(?:first|second|third|last|other|next|previous|new|old) (?:one|version|option"
    r"|approach|way|solution)|option [a-z0-9]|once|twice|today|tomorrow|tonight|yesterday"
    r"|this (?:sprint|week|release|time))\b"
)


def _cue(low: str, situation: str, task: bool) -> str | None:
    if _asks_now(low, order_too=situation != "rejection"):
        return None
    if _spec_of_an_order(low) or (situation == "request" and _tool_for_the_task(low)):
        return None
    if situation == "rejection" and _MAKE_ORDER.match(low) and _just_the_work(low):
        return None
    if low.rstrip().endswith("?"):
        # a question tells only when it proposes a way ("why not ...?", "can't we ...?")
        return "proposal" if _PROPOSE.match(low) else None
    if _NORM.search(low):
        # in a task's request, "make sure the tests pass" is how this task is done, not a rule,
        # and in the long request that states a task so are "ensure that parsing is strict" and
        # "use X instead of Y", unless said to last
        if situation == "request" and task and not _LASTING.search(low):
            return None
        return "norm"
    if situation == "request" and len(low.split()) > SHORT_REQUEST:
        return None  # a task's own details are not rules
    if (_TODO.match(low) or _PLEASE_DO.match(low)) and not (
        _LASTING.search(low) or _CONTRAST.search(low)
    ):
        # "we need to update the changelog", "please fix my unit test": work asked for now
        return None
    if (
        _DISAGREE.search(low)
        and not (situation == "request" and _STATUS.search(low))
        and not reports_trouble(low)
    ):
        return "disagreement"
    if (
        _PROPOSE.match(low)
        # ("I want the errors to name the key", in the request stating a task, is the task)
        and (not task or _LASTING.search(low) or _CONTRAST.search(low))
    ) or (situation != "request" and _PLEASE.search(low) and len(low.split()) >= 8):
        return "proposal"  # (a short "please update the docs" is a task, not a way of working)
    if situation != "request" and _states_a_fact(low):
        return "fact"
    if situation == "rejection" and low.startswith(("let's", "lets ")):
        return "proposal"
    if situation in ("rejection", "queued") and (_IMPERATIVE.match(low) or _WE_COULD.search(low)):
        # an order given on rejecting a call, or typed mid-work, steers the agent
        return situation
    return None


def _states_a_fact(low: str) -> bool:
    """Whether a sentence states a fact of the project (`_FACT` with a word of scope or a
    subject of a kind) or what the team does (`_WE_DO` with a word of scope or "here"), or
    either said to last; not an order, and not about the moment, one person or a question."""
    fact = _FACT.match(low) is not None
    we_do = _WE_DO.match(low) is not None
    if not (fact or we_do):
        return False
    scoped = (
        (fact and (_SCOPE.search(low) or _QUANTIFIED.match(low)))
        or (we_do and (_SCOPE.search(low) or _HERE.search(low)))
        or _LASTING.search(low)
    )
    return bool(
        scoped
        and not (_IMPERATIVE.match(low) or _MAKE_ORDER.match(low))
        and not (_NOW.search(low) or _PERSONAL.search(low) or _THEN_ASKED.search(low))
    )


def states_task(text: str) -> bool:
    """Whether a message that opens an episode is long enough to state its task: a short one may
    answer the agent's turn before the cut."""
    return len(text.split()) > SHORT_REQUEST


# a tool put to one use, in the short request that opens a task ("use rich to make the prompt
# green", "use cog to emit the list into the toml"): how this task is done
_TOOL_FOR_THE_TASK = re.compile(
    r"^(?:(?:please|just|now|ok(?:ay)?)\W+)*use \S+(?: \S+){0,2} to (?!be\b)\w+"
)


def _tool_for_the_task(low: str) -> bool:
    """Whether a sentence of the request that opens a task puts a tool to the task's use, in
    one clause (after a comma may come its reason: "use pnpm to install, npm breaks the lock"),
    choosing no way over another and saying nothing to last."""
    return bool(_TOOL_FOR_THE_TASK.match(low) and "," not in low and _just_the_work(low))


def said_to_last(text: str) -> bool:
    """Whether a sentence says its norm outlasts the task ("always", "from now on", "in this
    repo", "every commit", ...)."""
    return bool(_LASTING.search(text.lower()))


def _imperative_no(low: str) -> bool:
    """A prohibition said as one ("never ...", "don't ...", "no, I did not say commit")."""
    return bool(_PROHIBITION.match(low) or _NOT_SAID.search(low))


_PROHIBITION = re.compile(
    r"^(?:no\W+)?(?:please\s+)?(?:never|don'?t|do not|stop|avoid|let'?s not)\b"
)
_NOT_SAID = re.compile(r"\bi did(?:n'?t| not) (?:say|ask)\b")
