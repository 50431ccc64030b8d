"""JSON-RPC over HTTP to a team server (`POST /rpc`, `Authorization: Bearer <key>`).

Every call is bounded: a connect and a read timeout, and at most `max_retries` more attempts on
HTTP 503 and 429, each after the server's `Retry-After` (capped) and never past the caller's
deadline. What goes wrong comes back as one of three kinds, because each asks for something
else: `down` (no answer, or not now: keep the write and try later), `refused_key` (HTTP 401: no
write can succeed until the key is fixed), `bad_request` (the server answered and refused this
request: retrying the same bytes cannot help). The key is sent in a header and never logged."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from reos_memory.llm.client import shown_url
from reos_memory.squirrel.team_api import TeamMethod

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
Kind = Literal["down", "refused_key", "bad_request"]

# JSON-RPC errors that say "not now" rather than "not this": internal error (a bug or an outage
# behind the server), storage busy, shutting down, the server's database unavailable
TRANSIENT_CODES = frozenset({-32603, -32002, -32013, -32016})
_KEY_ID = re.compile(r"^rmk_([0-9a-f]{8,64})_")


class TeamCallError(Exception):
    """A call that did not give a result; `kind` says what to do about it."""

    def __init__(
        self,
        kind: Kind,
        message: str,
        *,
        code: int | None = None,
        data: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.data = data or {}
        self.retry_after = retry_after


@dataclass(frozen=True)
class ClientSettings:
    url: str
    connect_timeout_s: float = 3.0
    read_timeout_s: float = 15.0
    max_retries: int = 2
    max_retry_wait_s: float = 10.0  # the longest Retry-After honoured


def key_id_of(key: str) -> str:
    """The public id in a key `rmk_<key_id>_<secret>` (what the server lists keys by); a key of
    another shape is known by a short digest, never by itself."""
    m = _KEY_ID.match(key)
    if m:
        return m.group(1)
    import hashlib

    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()[:16]


class TeamClient:
    """Calls the team server's methods with one API key."""

    def __init__(
        self, settings: ClientSettings, key: str, transport: httpx.BaseTransport | None = None
    ) -> None:
        import httpx  # here, not at import: it costs ~0.2 s of every start-up (hooks, sqrl)

        self.settings = settings
        self.endpoint = settings.url.rstrip("/") + "/rpc"
        self.server = shown_url(settings.url.rstrip("/"))  # how the cache and logs name it
        self.key_id = key_id_of(key)
        self._http = httpx.Client(
            timeout=httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s),
            headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
            transport=transport,
            follow_redirects=False,
        )
        self._ids = 0

    def call(
        self, method: TeamMethod, params: Any, result: type[T], *, deadline: float | None = None
    ) -> T:
        """The result of one method as `result`; TeamCallError otherwise. `deadline` is a
        `time.monotonic()` after which no attempt starts and no attempt waits."""
        raw = self.call_raw(method, params, deadline=deadline)
        try:
            return msgspec.convert(raw, result, strict=False)
        except msgspec.ValidationError as exc:
            raise TeamCallError("down", f"{method}: unexpected result ({exc})") from None

    def call_raw(self, method: TeamMethod, params: Any, *, deadline: float | None = None) -> Any:
        """The result of one method as decoded JSON (for replies kept as they came)."""
        self._ids += 1
        body = msgspec.json.encode(
            {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        )
        reply = self._post(body, deadline)
        if not isinstance(reply, dict) or ("result" not in reply and "error" not in reply):
            raise TeamCallError("down", f"{method}: the server's reply is not JSON-RPC")
        err = reply.get("error")
        if err is not None:
            raise _rpc_error(method, err)
        return reply["result"]

    def _post(self, body: bytes, deadline: float | None) -> Any:
        import httpx

        s = self.settings
        for attempt in range(s.max_retries + 1):
            left = s.read_timeout_s if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise TeamCallError("down", "no time left to reach the team server")
            timeout = httpx.Timeout(
                min(left, s.read_timeout_s), connect=min(left, s.connect_timeout_s)
            )
            try:
                resp = self._http.post(self.endpoint, content=body, timeout=timeout)
            except httpx.HTTPError as exc:
                raise TeamCallError("down", f"{self.server}: {type(exc).__name__}") from None
            if resp.status_code in (429, 503):
                wait = _retry_after(resp.headers.get("retry-after"), s.max_retry_wait_s)
                late = deadline is not None and time.monotonic() + wait >= deadline
                if attempt == s.max_retries or late:
                    raise TeamCallError(
                        "down", f"{self.server}: HTTP {resp.status_code}", retry_after=wait
                    )
                time.sleep(wait)
                continue
            return self._decode(resp)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _decode(self, resp: httpx.Response) -> Any:
        status = resp.status_code
        if status == 401:
            raise TeamCallError("refused_key", f"{self.server}: the API key was refused (401)")
        if status >= 500:
            raise TeamCallError("down", f"{self.server}: HTTP {status}")
        if status == 204:
            return None
        if status >= 400:
            raise TeamCallError("bad_request", f"{self.server}: HTTP {status}", code=status)
        try:
            return msgspec.json.decode(resp.content)
        except msgspec.DecodeError:
            raise TeamCallError("down", f"{self.server}: a reply that is not JSON") from None

    def close(self) -> None:
        self._http.close()


def _rpc_error(method: str, err: Any) -> TeamCallError:
    if not isinstance(err, dict):
        return TeamCallError("down", f"{method}: a malformed error reply")
    code = err.get("code")
    message = str(err.get("message", ""))[:500]
    data = err.get("data") if isinstance(err.get("data"), dict) else {}
    kind: Kind = "down" if code in TRANSIENT_CODES else "bad_request"
    return TeamCallError(kind, f"{method}: {message}", code=code, data=data)


def _retry_after(value: str | None, cap: float) -> float:
    """Seconds from a Retry-After header (delta-seconds; a date or junk counts as 1 s)."""
    try:
        wait = float(value) if value is not None else 1.0
    except ValueError:
        wait = 1.0
    return min(max(wait, 0.0), cap)
