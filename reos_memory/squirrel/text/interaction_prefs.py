"""How the user wants the assistant to talk and act: concise answers, no apologies or emojis,
a reply language, asking before destructive steps or commits, asking when unsure."""

from __future__ import annotations

import re

# Interaction preferences: (pattern, slug, kind, may stand alone). The first match wins. "May
# stand alone": a plain "be concise" or "ask before deleting files" is a standing request, while a
# plain "explain your changes" is usually about the task at hand.
_PREF_SLUGS: tuple[tuple[re.Pattern[str], str, str, bool], ...] = (
    (
        re.compile(
            r"\bask\b.*\bbefore\b.*\b(?:delet|remov|drop|overwrit|wip|rm\b|destroy|force|reset"
            r"|rewrit|truncat|destructive|irreversible)"
            r"|\b(?:delet|remov|drop|overwrit|wip|destroy|force[- ]push|truncat|rm\s+-rf)\w*\b.*"
            r"\b(?:without|unless)\b.*\b(?:ask|permission|confirm|approv|check)"
        ),
        "ask_before_destructive",
        "guard",
        True,
    ),
    (
        re.compile(
            r"\bask\b.*\bbefore\b.*\b(?:commit|push|merg)"
            r"|\b(?:commit|push|merg)\w*\b.*\b(?:without|unless|until)\b.*"
            r"\b(?:ask|permission|confirm|approv|tell|say|i\s)"
        ),
        "ask_before_commit",
        "guard",
        True,
    ),
    (
        re.compile(
            r"\bask\b.*\b(?:when|if|whenever)\b.*\b(?:unsure|uncertain|not\s+sure|in\s+doubt"
            r"|unclear|ambiguous|don'?t\s+know)|\b(?:unsure|uncertain|not\s+sure|in\s+doubt"
            r"|unclear|ambiguous)\b.*\bask\b|\bclarifying\s+questions?\b"
        ),
        "ask_when_uncertain",
        "preference",
        True,
    ),
    (
        re.compile(
            r"\b(?:concise|terse|brief|succinct|(?<![-.])verbose(?!\s*(?:[=(:]|args?\b|arguments?\b"
            r"|params?\b|parameters?\b|flags?\b|options?\b|mode\b|level\b|logging\b))|wordy|long-?winded|shorter\s+(?:answers"
            r"|responses|replies)|short\s+(?:answers|responses|replies)|to\s+the\s+point|essays?"
            r"|walls?\s+of\s+text|long\s+explanations?|keep\s+(?:it|answers|responses|replies"
            r"|your\s+(?:answers|responses|replies))\s+(?:short|brief))\b"
        ),
        "concise",
        "preference",
        True,
    ),
    (re.compile(r"\bapologi[sz]\w*|\bsay(?:ing)?\s+sorry\b"), "apologies", "preference", True),
    # (with a word of use or of doing without: "the one with the emoji" says nothing of them)
    (
        re.compile(
            r"\b(?:no|without|stop|avoid|never|don'?t|do not|skip|use|using|add|include)\b"
            r"[^.]{0,20}\bemojis?\b"
        ),
        "emoji",
        "preference",
        True,
    ),
    (
        re.compile(
            r"\b(?:reply|respond|answer|talk|write|speak)\w*\b.*\bin\s+(?:english|german|french"
            r"|spanish|italian|portuguese|dutch|polish|russian|japanese|chinese|korean)\b"
        ),
        "reply_language",
        "preference",
        False,
    ),
    (re.compile(r"\bsummar(?:y|ies|ize|ise|izing|ising)\b"), "summaries", "preference", False),
    (
        re.compile(
            r"\b(?:explain|walk\s+me\s+through)\b.*\b(?:changes?|reasoning|plan|approach)\b"
        ),
        "explain_changes",
        "preference",
        False,
    ),
    (re.compile(r"\bask\b.*\bbefore\b"), "", "guard", True),
    (re.compile(r"\bexplain\b"), "", "preference", False),
    (
        re.compile(
            r"\bask(?:ing)?\b.*\b(?:permission|confirmation|approval)\b"
            r"|\bask(?:ing)?\s+(?:me\s+)?(?:whether|if)\s+(?:you\s+should|to)\b"
        ),
        "ask_for_confirmation",
        "preference",
        False,
    ),
)
_ARTIFACT_RE = re.compile(
    r"\b(?:commit\s+messages?|code|comments?|docstrings?|files?|readme|docs|changelog|logs?"
    r"|variables?|functions?|tests?|pr|pull\s+requests?|descriptions?|ui|output|errors?)\b"
)
# Every word one of the interaction patterns needs: a clause without any of them skips them all.
INTERACTION_HINT_RE = re.compile(
    r"ask|concise|terse|brief|succinct|verbose|wordy|winded|short|point|essay|wall|explanation"
    r"|apologi|sorry|emoji|reply|respond|answer|talk|speak|summar|explain|walk\s+me|your"
    r"|permission|confirm|unsure|uncertain|doubt|unclear|ambiguous|clarif|english|german|french"
)
_INTERACTION_RE = re.compile(
    r"\b(?:your\s+(?:answers?|responses?|replies|messages?|explanations?|tone)|talk\s+to\s+me"
    r"|when\s+you\s+(?:respond|reply|answer))\b"
)


def interaction(low: str) -> tuple[str, str, bool] | None:
    """(slug, kind, may stand alone) for a clause about how the assistant talks or acts."""
    if not INTERACTION_HINT_RE.search(low):
        return None
    for rx, slug, kind, alone in _PREF_SLUGS:
        if rx.search(low):
            if kind == "preference" and slug != "ask_when_uncertain" and _ARTIFACT_RE.search(low):
                return None
            return slug, kind, alone
    if _INTERACTION_RE.search(low):
        return "", "preference", False
    return None
