"""Rule 4 in chat: "my password is hunter2!", "the api key is <random>"."""

from __future__ import annotations

import re

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.names import name_info
from reos_memory.squirrel.redaction.randomness import randomish
from reos_memory.squirrel.redaction.values import (
    NEXT_WORD_RE,
    has_digit_or_symbol,
    is_placeholder,
    token_literal,
)

_PROSE_NAMES = ("password", "passphrase", "passcode", "pwd", "key", "token", "secret")
_PROSE_TAIL_RE = re.compile(
    r"(?i)(?:[ \t]+(?:for|of)(?:[ \t]+\S{1,40}){1,3}?)?"
    r"[ \t]+(?:is|was)[ \t]+(?:now[ \t]+|still[ \t]+)?"
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"'`]{1,200})"
)

# "the password 'Tr0ub4dor-9' is for staging", 'use token "<value>" for the bot': the value
# quoted right after the name
# (typographic quotes too: a memory added as text is not read with typed ones)
_PROSE_NEXT_QUOTED_RE = re.compile(
    r"[ \t]+(?:(?P<q>[\"'`])(?P<value>[^\"'`\n]{1,200})(?P=q)"
    r"|\u2018(?P<single>[^\u2019\n]{1,200})\u2019|\u201c(?P<double>[^\u201d\n]{1,200})\u201d)"
)

# "wandb api key - '...'": a name in words, a dash, then the value quoted
_PROSE_QUOTED_RE = re.compile(r"[ \t]+-[ \t]+(?P<value>\"[^\"\s]{1,200}\"|'[^'\s]{1,200}')")


def prose_at(text: str, start: int, end: int, spans: list[Span]) -> None:
    """ "my password is hunter2!" and "the api key is <random>" in chat messages."""
    name = text[start:end].lower()
    if name.endswith("passwd") and name.isalpha() and not name.endswith("htpasswd"):
        # (a word of a sentence only with its value quoted: "log in with passwd '...'")
        if (q := _PROSE_NEXT_QUOTED_RE.match(text, end)) is not None:
            _quoted_next(q, True, spans, phrase=False)
        return
    if not name.endswith(_PROSE_NAMES):
        return
    if name.endswith("key") and not (
        name_info(name) is not None
        or text[max(0, start - 8) : start]
        .lower()
        .endswith(("api ", "access ", "secret ", "private "))
    ):
        return  # a key of another kind: "the cache key is user:42"
    is_password = name.endswith(("password", "passphrase", "passcode", "pwd"))
    m = _PROSE_TAIL_RE.match(text, end)
    quoted_after = m is None and (m := _PROSE_QUOTED_RE.match(text, end)) is not None
    if m is None and name.isalpha() and (q := _PROSE_NEXT_QUOTED_RE.match(text, end)):
        # (a name in words, not a constant's: `#define ERR_BAD_PASSWORD "Incorrect password"`)
        _quoted_next(q, is_password, spans, phrase=name.endswith("passphrase"))
        return
    if m is None:
        if is_password:
            nxt = NEXT_WORD_RE.match(text, end)
            if nxt is not None:
                v = nxt.group(1).rstrip(".,;:!?)\"'`")
                if randomish(v, 8) and has_digit_or_symbol(v) and not is_placeholder(v):
                    spans.append(Span(nxt.start(1), nxt.start(1) + len(v), P_NAMED, "password"))
        return
    vs, ve = m.span("value")
    value = m.group("value")
    if value[0] in "\"'`":
        vs, ve, value = vs + 1, ve - 1, value[1:-1]
        # '"token is " + token' closes a string literal rather than quoting a value
        ok = value == value.strip() and not is_placeholder(value)
    else:
        stripped = value.rstrip(".,;:!?)")
        ve -= len(value) - len(stripped)
        value = stripped
        ok = is_password and has_digit_or_symbol(value) and not is_placeholder(value)
    if not is_password:
        # after a dash only an issued token's shape is the secret ("api token - 'user:1234'")
        ok = token_literal(value) if quoted_after else randomish(value, 12)
    if ok and value:
        spans.append(Span(vs, ve, P_NAMED, "password" if is_password else "env_secret"))


# a passphrase of words, diceware's way ("correct horse battery staple"): lowercase words only
# (a label or a message of the UI has capitals or punctuation: "the password 'Not set' shows")
_WORDS_PHRASE_RE = re.compile(r"[a-z]{2,}(?: [a-z]{2,}){2,9}")
MIN_PHRASE_CHARS = 12


def _quoted_next(q: re.Match[str], is_password: bool, spans: list[Span], *, phrase: bool) -> None:
    """A value quoted right after a secret's name in words: a password's when it has a digit or
    a symbol or reads random, or is a passphrase of lowercase words (a quoted label, "the
    password 'Submit' button", stays), any value after "passphrase" (`phrase`); a key's or a
    token's when it is shaped like an issued token."""
    group = next(g for g in ("value", "single", "double") if q.group(g) is not None)
    value = q.group(group)
    if value != value.strip() or is_placeholder(value):
        return
    words_phrase = (
        is_password
        and len(value) >= MIN_PHRASE_CHARS
        and (phrase or _WORDS_PHRASE_RE.fullmatch(value) is not None)
    )
    if words_phrase:
        spans.append(Span(q.start(group), q.end(group), P_NAMED, "password"))
        return
    if " " in value:
        return  # (a value of words is a label or a message: "the password 'Not set' shows")
    if is_password:
        ok = has_digit_or_symbol(value) or randomish(value, 8)
    else:
        ok = token_literal(value) or randomish(value, 12)
    if ok:
        kind = "password" if is_password else "env_secret"
        spans.append(Span(q.start(group), q.end(group), P_NAMED, kind))
