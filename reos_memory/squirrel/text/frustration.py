"""How frustrated a user's message sounds: none, mild, moderate or severe.

Frustration in a message that also says it works is capped at "mild" ("holy shit, it works").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

from reos_memory.squirrel.text.phrases import Message, Phrases, as_message
from reos_memory.squirrel.text.prose import wordset
from reos_memory.squirrel.text.success import success

Frustration = Literal["none", "mild", "moderate", "severe"]

FRUSTRATION_ORDER: Final[tuple[Frustration, ...]] = ("none", "mild", "moderate", "severe")

_SEVERE = Phrases(
    "wtf|wth|fuck|fucking|fucked|fucks|fuckin|fck|fcking|fml|shit|shitty|bullshit|damn|damnit"
    "|dammit|damned|goddamn|goddammit|goddamnit|crap|crappy|ffs|omfg|stfu|jfc",
    "bloody hell",
    "what the hell|heck|fuck|fucking",
    "are you kidding|serious|joking|insane|stupid|dumb|even",
    "ridiculous|absurd|unacceptable|pathetic|incompetent|idiot|idiots|idiotic|stupid|hopeless",
    # "useless" alone is often about code ("drop the useless import")
    "this|that|it is useless",
    "you're|so|completely|totally|utterly useless",
    "you are useless",
    "i give up",
    "i'm|im giving up",
    "i am giving up",
    "giving up",
    "for the last|hundredth|millionth time",
    "what's|whats wrong with you",
    "what is wrong with you",
)
_MODERATE = Phrases(
    "third|3rd|fourth|4th|fifth|5th|sixth|6th|tenth|nth time",
    "how many times",
    "why does|do|is|are|did|would|will|won't|doesn't|isn't|can't ... keep|keeps|again|still|always",
    "keep|keeps failing|breaking|crashing|happening|doing|getting|making|adding|removing|ignoring"
    "|changing|saying|going|trying|forgetting|using|deleting|reverting|undoing",
    "you keep|always|never",
    "come on",
    "seriously|ugh|ughh|ughhh|argh|arghh|sigh|jeez|geez|omg",
    "i already|just told|said|asked",
    "i told you",
    "as i said|told|mentioned",
    "again and again",
    "over and over",
    "not again",
    "same error|problem|issue|thing again",
)
MILD = Phrases(
    "hm|hmm|hmmm|hmmmm|hmph|nope|meh",
    "that's|thats|it's wrong",
    "is|was|still|all|completely|totally wrong",
    "that's|thats|it's|this's not right|correct|it|what|quite",
    "that|it|this is|was not right|correct|what|quite",
    "not right|correct|quite",
    "still not|doesn't|isn't|won't|can't|didn't|broken|getting|seeing|wrong|erroring|red|fail*"
    "|crash*",
    "still the|a|an same|error|issue|problem|bug",
    "still does|is not",
    "still no",
    "try|do|run it|this|that again",
    "try again",
    "it|that|this|which doesn't|didn't|isn't|wasn't|won't|can't ... work*|help*|fix*|chang*"
    "|compil*|build*|run*|pass*",
    "it|that|this|which does|did|is|was not work*|help*|fix*|chang*|compil*|build*|run*|pass*",
    "same error|problem|issue|failure|result|thing",
    "no luck",
    "not what i",
    "that|you broke",
)
_CAPS_WORD = re.compile(r"[A-Z][A-Z']*[A-Z](?![a-z0-9_])")
_UPPER_PAIR = re.compile(r"[A-Z][A-Z]")
_ACRONYM_TEXT = (
    "API URL URI JSON HTTP HTTPS SQL CSS HTML CLI CI CD PR PRS UI UX DB AWS GCP SDK JWT SSH "
    "TLS SSL YAML TOML XML CSV PDF LLM MCP RPC REST ENV PATH TODO FIXME README OK LGTM ASAP "
    "FYI IMO IIRC EOF GPU CPU RAM OS VM ID IDS UUID NPM TS JS JSX TSX PY MD ORM CRUD DNS IP "
    "TCP UDP GUI IDE VS VSCODE MVP QA DX SRE AI ML NLP GET POST PUT PATCH DELETE HEAD UTF UTC "
    "PST EST MB GB KB TB SHA MD5 OAUTH CORS CSRF XSS SSO SAML LDAP S3 EC2 RDS K8S GH AM PM "
    "NOTE WIP BTW TL DR TLDR INFO DEBUG WARN WARNING TRACE I A"
)
_ACRONYMS = wordset(_ACRONYM_TEXT)


def _shouting(prose: str, tokens: list[str]) -> bool:
    if not _UPPER_PAIR.search(prose):
        return False
    caps = [word for word in _CAPS_WORD.findall(prose) if word not in _ACRONYMS]
    if "STOP" in caps or len(caps) >= 3:
        return True
    # two capitalised words are shouting only when they are most of the message ("NOT WORKING")
    return len(caps) == 2 and len(tokens) <= 3


def _frustration(message: Message) -> Frustration:
    prose, tokens, vocabulary = message.edges, message.tokens, message.vocabulary
    if (
        "!!!" in prose
        or "?!?" in prose
        or "!?!" in prose
        or _SEVERE.search(tokens, vocabulary)
        or _shouting(prose, tokens)
    ):
        level: Frustration = "severe"
    elif (
        "!!" in prose
        or "?!" in prose
        or "!?" in prose
        or "???" in prose
        or _MODERATE.search(tokens, vocabulary)
    ):
        level = "moderate"
    elif MILD.search(tokens, vocabulary):
        level = "mild"
    else:
        return "none"
    if level != "mild" and success(message):
        return "mild"  # relief, not anger: "holy shit, it works"
    return level


def frustration(text: str) -> Frustration:
    """Rule-based frustration level of one user message: none, mild, moderate or severe."""
    return _frustration(as_message(text))


def combine_frustration(levels: Iterable[Frustration]) -> Frustration:
    """The highest of several frustration levels ("none" for no levels)."""
    highest = 0
    for level in levels:
        highest = max(highest, FRUSTRATION_ORDER.index(level))
    return FRUSTRATION_ORDER[highest]
