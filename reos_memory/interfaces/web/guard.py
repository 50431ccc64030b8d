"""What keeps a loopback web UI to the one person it was started for (issue 22).

A page on any site the user visits can make the browser send requests to 127.0.0.1, and a DNS
name that resolves there (DNS rebinding) makes them same-origin in the browser's eyes; any
other user of the machine can connect to the port. So, as Jupyter does:

* a random token, in the URL `sqrl ui` prints once, is exchanged on the first request for a
  session (`sessions.py`): the cookie (HttpOnly, SameSite=Strict) holds a random session id,
  never the token, because a browser sends 127.0.0.1's cookies to every port; every request
  needs a live session or the token;
* the `Host` header must name the address the server listens on (a rebinding name does not);
* a request that changes anything must come from a page of this server (`Origin`) and carry the
  CSRF token of its form (`check_form`);
* no CORS headers, a strict Content-Security-Policy (every script and style from the package),
  no framing, no caching.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from urllib.parse import parse_qsl, quote, urlencode

from reos_memory.interfaces.web.sessions import MAX_SESSIONS, Sessions

# ASGI's scope and messages: each value is narrowed where it is read (the server that makes
# them follows the ASGI spec: headers are [name, value] byte strings, the query string bytes)
Scope = MutableMapping[str, object]
Message = MutableMapping[str, object]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "reos_ui"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # not no-referrer: with it, browsers send `Origin: null` on the UI's own form posts
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
SAFE_METHODS = {"GET", "HEAD"}


class Refused(Exception):
    """A request the guard turns away: its HTTP status and a reason said to the client."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Guard:
    """The secrets and the addresses of one UI server."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        # cookies are per host, not per port: each UI server has its own name
        self.cookie = f"{COOKIE}_{port}"
        self.origins = {f"http://{h}" for h in self.hosts}
        # the forms' token: derived, so it never needs storing, and not the access token itself
        self.csrf = hmac.new(self.token.encode(), b"csrf", hashlib.sha256).hexdigest()
        # (one person, one grant: every browser of theirs keeps its session)
        self.sessions: Sessions[bool] = Sessions(max_per_grant=MAX_SESSIONS)

    def url(self, path: str = "/") -> str:
        """The address to open: the only place the token is shown."""
        return f"http://127.0.0.1:{self.port}{path}?{urlencode({'token': self.token})}"

    def valid_token(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode(), self.token.encode()
        )


def _header(scope: Scope, name: bytes) -> str | None:
    headers = scope.get("headers", [])
    if not isinstance(headers, Iterable):
        raise TypeError("the ASGI scope's headers are not [name, value] pairs")
    for k, v in headers:
        if k == name:
            return bytes(v).decode("latin-1")
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    for part in raw.split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v
    return None


class SecurityHeaders:
    """Every response of `app` with the UI's security headers; a page may narrow one for itself
    (the graph picture's CSP names the hashes of its own inline script and style)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if not isinstance(headers, Iterable):
                    raise TypeError("an ASGI message's headers are not [name, value] pairs")
                own = {bytes(k).lower() for k, _ in headers}
                message["headers"] = [*headers, *[(k, v) for k, v in HEADERS if k not in own]]
            await send(message)

        await self.app(scope, receive, with_headers)


class GuardMiddleware:
    """Every HTTP request through the guard; every response with its headers."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        try:
            redirect = self._admit(scope)
        except Refused as exc:
            await _plain(send, exc.status, exc.reason)
            return
        if redirect is not None:
            session = self.guard.sessions.begin(True)
            await _redirect_with_cookie(send, redirect, self.guard.cookie, session)
            return

        await SecurityHeaders(self.app)(scope, receive, send)

    def _admit(self, scope: Scope) -> str | None:
        """Refused, or None to serve, or the URL to send the browser to with its cookie set."""
        g = self.guard
        if _header(scope, b"host") not in g.hosts:
            raise Refused(403, "unexpected Host header: open the address sqrl ui printed")
        query_string = scope.get("query_string", b"")
        if not isinstance(query_string, (bytes, bytearray, memoryview)):
            raise TypeError("the ASGI scope's query string is not a byte string")
        query = dict(parse_qsl(bytes(query_string).decode("latin-1")))
        if "token" in query:
            if not g.valid_token(query["token"]):
                raise Refused(403, "wrong token: open the address sqrl ui printed")
            rest = {k: v for k, v in query.items() if k != "token"}
            # never "//host" or "/\\host" (another site), and always plain ASCII
            path = "/" + quote(str(scope["path"]).lstrip("/\\"))
            return path + (f"?{urlencode(rest)}" if rest else "")
        if not g.sessions.get(_cookie(scope, g.cookie)):
            raise Refused(403, "no access token: open the address sqrl ui printed")
        if scope["method"] not in SAFE_METHODS and _header(scope, b"origin") not in g.origins:
            raise Refused(403, "a change must come from a page of this server (Origin)")
        return None


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, location: str, name: str, session: str) -> None:
    cookie = f"{name}={session}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", location.encode("latin-1")),
        (b"set-cookie", cookie.encode("latin-1")),
        *HEADERS,
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
