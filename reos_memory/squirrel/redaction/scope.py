"""Redaction across the events of one session: a value found once is redacted everywhere.

A password typed in a URL (``postgres://app:Tr0ub4dor-be3n@db``) is found by the URL rule; the
same password in the user's next sentence ("don't put Tr0ub4dor-be3n in the Makefile") has no
frame a rule could see. A `SecretScope` remembers every value redacted in a session's events and
redacts it wherever else it shows, in this ingest and in the session's later ones. It also reads
across the seam of two adjacent events, where a key split over two messages is whole.

The values live in process memory only (never stored): a bounded map from session to the values
seen, so a session fed one event at a time (hooks) keeps its values between calls. Every
memory derived from the session's episodes is written from the redacted events, so it cannot hold
a value the episode lost.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

from reos_memory.squirrel.redaction.engine import PLACEHOLDER_RE, find_secrets, redact_found

__all__ = ["SecretScope", "peek_scope", "redact_events", "scope_for"]

# a value shorter than this is too likely to be an ordinary word to replace everywhere
MIN_VALUE = 6
MAX_VALUES = 512  # per session
MAX_VALUE_CHARS = 4096
MAX_SESSIONS = 256
SEAM = 300  # characters read on each side of two events' seam
# kinds of the rules that read a name and its value, not a token's own form
NAMED_KINDS = frozenset(
    {"password", "env_secret", "bearer", "basic_auth", "aws_secret_key", "dense_secret_words"}
)
_TOKEN_RE = re.compile(r"[^\s\"'`<>]+(?<!:)")
# a word, not half of a random string (which holds digits or both cases all but by chance)
_WORD_RE = re.compile(r"[A-Z]?[a-z]{4,}")


class SecretScope:
    """The secret values found so far in one session, and the redaction that uses them."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}  # value -> kind
        self.tail = ""  # the end of the last event's main text, for a key split across events
        self._lock = threading.Lock()

    def redact(self, text: str) -> str:
        """`text` redacted by the rules, remembering what they found, then of every value seen."""
        out, found = redact_found(text)
        if found:
            self._learn(found)
        return self._known(out)

    def seam(self, text: str | None) -> None:
        """Read the seam between the previous event's main text and this one's; remember a key
        split across it (both halves). Call once per event, in order, with its main text."""
        if not text:
            return
        prev = self.tail
        self.tail = text[-SEAM:]
        if not prev or prev[-1] in _NOT_TOKEN_END:
            return
        head = _first_chunk(text[:SEAM])
        if len(head) < 4:
            return
        tail = _last_chunk(prev)
        # a token cut in two leaves token characters on both sides, 20 or more in all
        if len(tail) < 4 or len(tail) + len(head) < 20:
            return
        joined = tail + head
        for kind, s, e in find_secrets(joined):
            # a token cut in two: provider or random-string findings only, made of token
            # characters on both sides (a named value running on into the next message is not)
            if not s < len(tail) < e or kind in NAMED_KINDS:
                continue
            parts = (joined[s : len(tail)], joined[len(tail) : e])
            if not all(_TOKEN_RE.fullmatch(p) for p in parts):
                continue
            if any(_WORD_RE.fullmatch(p) for p in parts):
                continue  # an id, then "message" at the start of the next event: two things
            with self._lock:
                for part in parts:
                    if len(part) >= MIN_VALUE and len(self.values) < MAX_VALUES:
                        self.values.setdefault(part, kind)

    def known(self, text: str) -> str:
        """`text` with every value seen so far in the session redacted."""
        return self._known(text)

    def known_value(self, value: Any) -> Any:
        """Every string in JSON-like `value` with the values seen so far redacted."""
        if isinstance(value, str):
            return self._known(value)
        if isinstance(value, dict):
            return {k: self.known_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.known_value(v) for v in value]
        return value

    def _learn(self, found: tuple[tuple[str, str], ...]) -> None:
        with self._lock:
            for kind, value in found:
                v = value.strip()
                if (
                    MIN_VALUE <= len(v) <= MAX_VALUE_CHARS
                    and not PLACEHOLDER_RE.search(v)
                    and len(self.values) < MAX_VALUES
                ):
                    self.values.setdefault(v, kind)

    def _known(self, text: str) -> str:
        if not self.values or not text:
            return text
        # longest first: a value that contains another is replaced whole
        for v in sorted(self.values, key=len, reverse=True):
            if v in text:
                text = text.replace(v, f"[REDACTED:{self.values[v]}]")
        return text


_NOT_TOKEN_END = frozenset(" \t\r\n.,;:!?)]}>\"'`")
_CHUNK_RE = re.compile(r"[^\s\"'`<>()\[\]{},;]*")
_CHUNK_START_RE = re.compile(r"[\"'`]?([^\s\"'`<>()\[\]{},;]*)")


def _last_chunk(text: str) -> str:
    """The run of token-like characters `text` ends with (after trailing blanks)."""
    rev = text.rstrip()[::-1]
    m = _CHUNK_RE.match(rev)
    return "" if m is None else m.group()[::-1]


def _first_chunk(text: str) -> str:
    """The run of token-like characters `text` starts with (an opening quote skipped)."""
    m = _CHUNK_START_RE.match(text.lstrip())
    return "" if m is None else m.group(1)


_SCOPES: OrderedDict[str, SecretScope] = OrderedDict()
_SCOPES_LOCK = threading.Lock()


def peek_scope(session_key: str) -> SecretScope | None:
    """The scope of a session if this process has one."""
    with _SCOPES_LOCK:
        return _SCOPES.get(session_key)


def scope_for(session_key: str) -> SecretScope:
    """The scope of a session (kept for the MAX_SESSIONS sessions used last)."""
    with _SCOPES_LOCK:
        scope = _SCOPES.get(session_key)
        if scope is None:
            scope = _SCOPES[session_key] = SecretScope()
            while len(_SCOPES) > MAX_SESSIONS:
                _SCOPES.popitem(last=False)
        else:
            _SCOPES.move_to_end(session_key)
        return scope


def redact_events(texts: list[str]) -> list[str]:
    """Texts of adjacent events redacted together: rules, split keys, values seen anywhere."""
    scope = SecretScope()
    for t in texts:
        scope.seam(t)
        scope.redact(t)
    return [scope.redact(t) for t in texts]
