"""Server-side sessions of the web UIs: the cookie holds a random session id, never the secret
that opened the session (the local UI's access token, the team UI's API key).

Cookies are scoped by host, not by port: a browser sends the UI's cookie to any other server
on 127.0.0.1 it visits. What such a server reads is a session id, worthless on /rpc, ended at
sign-out, when its key is revoked (the team UI checks the key on every request), at its
expiry and when the process ends (sessions live in its memory only). One grant (one API key)
holds at most MAX_PER_GRANT sessions and one owner (an org) MAX_PER_OWNER, their oldest ended
first; when MAX_SESSIONS are live a new one is refused, never made by ending someone else's."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

SESSION_TTL_S = 12 * 3600.0  # a session ends this long after it began, used or not
MAX_SESSIONS = 10_000  # live sessions of all grants; beyond, a new one is refused
MAX_PER_GRANT = 20  # sessions of one grant (one key's browsers); beyond, its oldest ends
MAX_PER_OWNER = 1_000  # sessions of one owner's grants (an org's keys); beyond, its oldest end


class SessionsFull(Exception):
    """MAX_SESSIONS sessions are live: no new one until some end."""


class Sessions(Generic[T]):
    """Sessions by random id, each holding what it grants (`T`); ids are kept hashed."""

    def __init__(
        self,
        ttl_s: float = SESSION_TTL_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
        max_per_grant: int = MAX_PER_GRANT,
        max_per_owner: int = MAX_PER_OWNER,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.max_per_grant = max_per_grant
        self.max_per_owner = max_per_owner
        self.clock = clock
        self._mutex = threading.Lock()
        # by the id's digest, in order of beginning: (grant, ends at, owner)
        self._by_hash: OrderedDict[bytes, tuple[T, float, object]] = OrderedDict()

    def begin(self, grant: T, owner: object = None) -> str:
        """A new session granting `grant`; its id (for the cookie: shown nowhere else). The
        grant's oldest session ends beyond MAX_PER_GRANT, and its owner's (an org, for the team
        UI's keys) beyond MAX_PER_OWNER; SessionsFull when MAX_SESSIONS are live (expired ones
        are dropped first)."""
        sid = secrets.token_urlsafe(32)
        with self._mutex:
            now = self.clock()
            for same, cap in (
                (lambda g, o: g == grant, self.max_per_grant),
                (lambda g, o: owner is not None and o == owner, self.max_per_owner),
            ):
                theirs = [h for h, (g, _, o) in self._by_hash.items() if same(g, o)]
                for h in theirs[: max(0, len(theirs) - cap + 1)]:
                    del self._by_hash[h]  # (the oldest first)
            if len(self._by_hash) >= self.max_sessions:
                for h in [h for h, (_, ends, _) in self._by_hash.items() if now >= ends]:
                    del self._by_hash[h]
            if len(self._by_hash) >= self.max_sessions:
                raise SessionsFull(f"{self.max_sessions} sessions are live")
            self._by_hash[_digest(sid)] = (grant, now + self.ttl_s, owner)
        return sid

    def get(self, sid: str | None) -> T | None:
        """What the live session `sid` grants; None for an unknown, ended or expired one."""
        if not sid:
            return None
        h = _digest(sid)
        with self._mutex:
            found = self._by_hash.get(h)
            if found is None:
                return None
            grant, ends, _ = found
            if self.clock() >= ends:
                del self._by_hash[h]
                return None
            return grant

    def end(self, sid: str | None) -> None:
        """End the session `sid` (sign-out); nothing for an unknown one."""
        if sid:
            with self._mutex:
                self._by_hash.pop(_digest(sid), None)


def _digest(sid: str) -> bytes:
    """How a session id is kept: its SHA-256 (a dump of the process shows no usable id, and
    dictionary lookups by digest reveal nothing by their timing)."""
    return hashlib.sha256(sid.encode()).digest()
