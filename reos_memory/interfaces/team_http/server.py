"""The team server over HTTP (issue 21): JSON-RPC 2.0 at `POST /rpc` and MCP over Streamable
HTTP at `/mcp` (`mcp_endpoint.py`), both with a bearer API key, and `GET /health`. Starlette on
uvicorn; stateless, so N processes can serve one database.

The tenant comes only from the key: a request without a valid key gets HTTP 401 and nothing
runs. A key over its rate, or an address over its rate of failed authentications, gets HTTP 429
with `Retry-After` and nothing runs (`limits.py`: the limits are per process). The methods are
registered in `registry.py` by the modules beside this one."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import signal
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from types import FrameType
from typing import TYPE_CHECKING

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from reos_memory import __version__
from reos_memory.errors import (
    DatabaseUnavailable,
    Forbidden,
    ReosError,
    published,
)
from reos_memory.interfaces import rpc
from reos_memory.interfaces.openrpc import build_document, encoded, plain
from reos_memory.interfaces.team_http.limits import RateLimiter, retry_after
from reos_memory.interfaces.team_http.mcp_endpoint import TeamMcp
from reos_memory.interfaces.team_http.registry import registry
from reos_memory.interfaces.team_http.ui import TeamUI
from reos_memory.json_types import JSONObject
from reos_memory.logs import quiet_repeats
from reos_memory.team.actions import Action
from reos_memory.team.keys import KeyRefused, VerifiedKey
from reos_memory.team.team_service import Caller, TeamService

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

MAX_BODY_BYTES = 1 << 20
MAX_BATCH_ITEMS = 100
MAX_DEPTH = 32  # nesting of arrays and objects in a body (the methods' params need 5)
HEADER_TIMEOUT_S = 10.0  # default: to send a request's headers (a slow trickle holds a socket)
# default: connections one client address may hold open at once (a trusted proxy's are not
# counted); an outside attack opened 20,400 from one address until the server had no files left
MAX_CONNECTIONS_PER_ADDRESS = 256
DEFAULT_RATE_LIMIT = 50.0  # requests a second per key (and failed authentications per address)


@cache
def openrpc_document() -> JSONObject:
    """The team server's OpenRPC document, by the local service's generator."""
    info = {
        "title": "reos-memory team server",
        "version": __version__,
        "description": "JSON-RPC 2.0 at POST /rpc with Authorization: Bearer <API key>",
    }
    meanings = {c.code: c.meaning for c in published()}
    return plain(build_document(registry, info=info, meanings=meanings))


@cache
def discovered() -> msgspec.Raw:
    """The document as `rpc.discover` answers it, encoded once."""
    return encoded(openrpc_document())


class TeamHttp:
    """The ASGI app of one server process around one TeamService."""

    def __init__(
        self, svc: TeamService, log: FilteringBoundLogger, rate_limit: float = DEFAULT_RATE_LIMIT
    ) -> None:
        self.svc = svc
        self.log = log
        # None: no limit (--rate-limit 0); the burst is two seconds' worth
        self.per_key = RateLimiter(rate_limit, 2 * rate_limit) if rate_limit > 0 else None
        self.failed_auth = RateLimiter(rate_limit, 2 * rate_limit) if rate_limit > 0 else None
        self.mcp = TeamMcp(svc, log, self._mcp_key, MAX_BODY_BYTES)
        routed = Starlette(
            routes=[
                Route("/health", self.health, methods=["GET"]),
                Route("/rpc", self.rpc, methods=["POST"]),
                Route("/mcp", self.mcp),  # an ASGI app: the SDK answers each HTTP method
                # the web UI: sign in with a key, the pages its role allows
                *TeamUI(svc, self.verify, self._limit, self._audit).routes(),
            ],
            lifespan=lambda app: self.mcp.running(),
        )
        self.app: ASGIApp = _quiet_on_hang_up(routed, log)

    async def health(self, request: Request) -> Response:
        if await run_in_threadpool(self.svc.healthy):
            return JSONResponse({"status": "ok", "database": "ok"})
        return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)

    async def rpc(self, request: Request) -> Response:
        key = await self.authenticate(request)
        if isinstance(key, Response):
            return key
        # the body is read and parsed only within the key's rate, and a body that is no
        # request costs a token too: a flood of them from one key is refused unread
        limited = self._limit(key, 1, take=False)
        if limited is not None:
            return limited
        message = await _read_json(request)
        if isinstance(message, Response):
            self._limit(key, 1)
            return message
        # each request of a batch counts; a refused batch (empty, too long) runs none: one
        items = len(message) if isinstance(message, list) else 0
        limited = self._limit(key, items if 0 < items <= MAX_BATCH_ITEMS else 1)
        if limited is not None:
            return limited
        if isinstance(message, list):
            try:
                rpc.check_batch(message, MAX_BATCH_ITEMS)
            except rpc.Refused as refused:
                return _reply(refused.reply)
            replies = [r for r in [await self._one(key, item) for item in message] if r is not None]
            return _reply(replies) if replies else Response(status_code=204)
        reply = await self._one(key, message)
        return _reply(reply) if reply is not None else Response(status_code=204)

    async def authenticate(self, request: Request) -> VerifiedKey | Response:
        """The verified key of a request, else its 401, 429 or 503. Each failed attempt takes a
        token of the client address's bucket; an address with none left is refused before its
        key is looked at, so a flood of bad keys never reaches the database."""
        auth = request.headers.get("authorization", "")
        scheme, _, presented = auth.partition(" ")
        return await self.verify(request, presented if scheme.lower() == "bearer" else "")

    async def verify(self, request: Request, presented: str) -> VerifiedKey | Response:
        """A presented key (from the Authorization header, or the web UI's cookie or sign-in
        form) checked under the same failed-authentication limit; else its 401, 429 or 503."""
        address = request.client.host if request.client else "unknown"
        if self.failed_auth is not None and (wait := self.failed_auth.wait(address)):
            self.log.info("failed_authentications_limited", address=address)
            return _rate_limited(wait, "too many failed authentications from this address")
        if not presented.strip():
            return self._refused(address, "an API key is required: Authorization: Bearer <key>")
        try:
            return await run_in_threadpool(self.svc.authenticate, presented.strip())
        except KeyRefused as exc:
            self.log.info("key_refused", why=exc.why, path=request.url.path, address=address)
            if exc.row is not None:  # a key of an org: that org's admins see the attempt
                await self._audit(
                    exc.row.org_id, exc.row.key_id, exc.row.team_id, "team/refused",
                    why=f"key {exc.why}", path=request.url.path, address=address,
                )  # fmt: skip
            return self._refused(address, "the API key was refused")
        except Exception as exc:  # the database cannot check keys: retry later, nothing ran
            incident = getattr(exc, "incident", None) or uuid.uuid4().hex[:12]
            self.log.exception("authentication_failed", incident=incident, error=repr(exc))
            return JSONResponse(
                {"error": "unavailable", "message": "try again later", "incident": incident},
                status_code=503,
                headers={"Retry-After": "1"},
            )

    async def _mcp_key(self, request: Request) -> VerifiedKey | Response:
        """/mcp's check: the key as for /rpc, and one request of its rate."""
        key = await self.authenticate(request)
        if isinstance(key, Response):
            return key
        return self._limit(key, 1) or key

    async def _audit(
        self,
        org_id: str,
        key_id: str,
        team_id: str | None,
        method: Action,
        request_id: str | None = None,
        **detail: str,
    ) -> None:
        """An attempt into its org's audit log (sampled: `TeamService.audit_attempt`); a
        database that cannot take it costs the attempt nothing more than a log line."""
        rid = request_id or uuid.uuid4().hex
        try:
            await run_in_threadpool(
                self.svc.audit_attempt, org_id, key_id, team_id, method, rid, **detail
            )
        except Exception as exc:  # (the refusal itself stands)
            self.log.warning("audit_failed", method=method, key_id=key_id, error=repr(exc))

    def _refused(self, address: str, message: str) -> Response:
        if self.failed_auth is not None:
            self.failed_auth.take(address)
        return _unauthorized(message)

    def _limit(self, key: VerifiedKey, requests: int, *, take: bool = True) -> Response | None:
        """A 429 when `key` is over its rate for this many requests (nothing of them runs);
        `take`: spend the tokens when it is not (else only look)."""
        if self.per_key is None:
            return None
        spend = self.per_key.take if take else self.per_key.wait
        if not (wait := spend(key.key_id, requests)):
            return None
        self.log.info("rate_limited", key_id=key.key_id, requests=requests, wait_s=round(wait, 3))
        return _rate_limited(wait, f"API key {key.key_id} is over its rate limit")

    async def _one(self, key: VerifiedKey, obj: object) -> JSONObject | None:
        """The reply to one request (None for a notification): the envelope, method and params
        checked as the stdio server checks them (`interfaces/rpc.py`), the handler on a worker
        thread."""
        try:
            rid, notification = rpc.envelope(obj, no_nul=True)  # (PostgreSQL's text keeps none)
            assert isinstance(obj, dict)  # (the envelope refuses anything else)
            method = obj["method"]
            spec = rpc.lookup(registry, method, rid, notification)
            params = rpc.params_of(spec, obj.get("params"), rid, notification)
        except rpc.Refused as refused:
            return refused.reply
        request_id = uuid.uuid4().hex
        caller = Caller(key=key, request_id=request_id)
        try:
            result = await run_in_threadpool(spec.handler, (self.svc, caller), params)
        except ReosError as exc:
            if isinstance(exc, DatabaseUnavailable):  # retryable, but the operator should know
                self.log.warning(
                    "database_unavailable", incident=exc.incident, method=method,
                    key_id=key.key_id, error=repr(exc.__cause__),
                )  # fmt: skip
            reply = rpc.domain_failure(rid, exc)
            if isinstance(exc, Forbidden):
                await self._audit(
                    key.org_id, key.key_id, key.team_id, "team/refused", request_id,
                    why="forbidden", called=method,
                )  # fmt: skip
        except Exception as exc:  # a bug: logged with an incident id, never shown to the client
            incident = uuid.uuid4().hex[:12]
            self.log.exception(
                "internal_error", incident=incident, method=method, key_id=key.key_id,
                error=repr(exc),
            )  # fmt: skip
            reply = rpc.internal_failure(rid, incident)
        else:
            reply = {"jsonrpc": "2.0", "id": rid, "result": result}
        return None if notification else reply


def _reply(body: object) -> Response:
    """A JSON-RPC reply or batch of replies, results encoded by msgspec as they are (Structs,
    or a document already encoded)."""
    return Response(msgspec.json.encode(body), media_type="application/json")


async def _read_json(request: Request) -> object:
    """The parsed body, else its 413 (over MAX_BODY_BYTES, declared or streamed) or its JSON-RPC
    parse error."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _too_large()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return _too_large()
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return JSONResponse(
            rpc.failure(None, rpc.PARSE_ERROR, f"Parse error: {exc}", reason="parse_error")
        )
    except RecursionError:  # (nested deeper than the parser goes: thousands of levels)
        message = None
    else:
        if not _too_deep(message, MAX_DEPTH):
            return message
    return JSONResponse(
        rpc.failure(
            None,
            rpc.PARSE_ERROR,
            f"Parse error: arrays and objects nested deeper than {MAX_DEPTH} levels",
            reason="parse_error",
            limit=MAX_DEPTH,
        )
    )


def _too_deep(value: object, limit: int) -> bool:
    """Whether arrays and objects nest in `value` deeper than `limit` (walked without
    recursion, stopping at the first too deep)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        items: Iterable[object]
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if depth > limit:
            return True
        stack.extend((x, depth + 1) for x in items if isinstance(x, (dict, list)))
    return False


def _rate_limited(wait_s: float, message: str) -> Response:
    seconds = retry_after(wait_s)
    return JSONResponse(
        {"error": "rate_limited", "message": message, "retry_after": int(seconds)},
        status_code=429,
        headers={"Retry-After": seconds},
    )


def _unauthorized(message: str) -> Response:
    return JSONResponse(
        {"error": "unauthorized", "message": message},
        status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="reos-memory"'},
    )


def _too_large() -> Response:
    return JSONResponse(
        {"error": "payload_too_large", "message": f"the body is over {MAX_BODY_BYTES} bytes"},
        status_code=413,
    )


def _quiet_on_hang_up(app: ASGIApp, log: FilteringBoundLogger) -> ASGIApp:
    """`app`, with a client that hangs up before its request's body came whole (or is cut off
    for being slow) logged as one line: starlette raises ClientDisconnect from the handler that
    was reading it, which uvicorn logs as a crash with its traceback."""

    async def quiet(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        except ClientDisconnect:
            client = scope.get("client") or ("unknown", 0)
            log.info("client_hung_up", path=scope.get("path"), address=str(client[0]))

    return quiet


def serve(
    svc: TeamService,
    host: str,
    port: int,
    log: FilteringBoundLogger,
    rate_limit: float = DEFAULT_RATE_LIMIT,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    trusted_proxies: list[str] | None = None,
    max_per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
) -> None:
    """Serve until SIGTERM or SIGINT (uvicorn's handlers: in-flight requests finish first).
    `trusted_proxies`: the addresses whose X-Forwarded-For names the client; none by default
    (uvicorn trusts 127.0.0.1's, which let any local process pick the address its failed keys
    are counted against). `max_per_address`: connections one other address may hold open."""
    import uvicorn

    # (a flood of connections, or of clients hanging up on /mcp, must not fill the disk with
    # the same traceback)
    quiet_repeats(("asyncio", "mcp.server.streamable_http"))

    config = uvicorn.Config(
        TeamHttp(svc, log, rate_limit).app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",  # the MCP transport's task group
        server_header=False,
        http=_header_timed_protocol(
            header_timeout_s, log, max_per_address, frozenset(trusted_proxies or [])
        ),
        # no WebSocket: the server serves none, and an upgrade would hand the connection to
        # another protocol object, out of the per-address count
        ws="none",
        proxy_headers=bool(trusted_proxies),
        forwarded_allow_ips=",".join(trusted_proxies or []) or None,
    )
    _open_files_to_hard_limit()
    server = _server_class()(config)
    log.info("team_server_listening", host=host, port=port)
    server.run()


def _header_timed_protocol(
    timeout_s: float,
    log: FilteringBoundLogger | None = None,
    max_per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
    trusted: frozenset[str] = frozenset(),
) -> type:
    """uvicorn's HTTP/1.1 protocol with time limits for each request: a connection that has not
    sent its request line and headers `timeout_s` after it opened (or after its previous
    response), or then its whole body `timeout_s` after its headers, is closed. uvicorn bounds
    idle keep-alive time only: a body trickled forever held its socket (an outside attack held
    20,000 that way, no key needed, until the server ran out of files). And one client address
    (not a trusted proxy's) holds at most `max_per_address` connections open: one more is
    closed at once, so a flood from one address cannot take every file the server may open."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    held: dict[str, int] = {}  # open connections by client (one event loop: no lock)
    exempt = _proxies(trusted)
    told: dict[str, float] = {}  # when a refusal was last logged, by address (once a minute)

    class HeaderTimedProtocol(H11Protocol):
        _due: asyncio.TimerHandle | None = None  # the headers', then the body's deadline
        _body_due = False  # the deadline running is the body's
        _address: str | None = None  # counted in `held`
        _refused = False  # closed at once: one connection too many from its address

        # uvicorn's own override narrows asyncio's BaseTransport to Transport (and ignores this
        # in its source the same way); this one only adds to it
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            peer = transport.get_extra_info("peername")
            address = _client_of(str(peer[0])) if isinstance(peer, tuple) and peer else None
            if address is not None and not exempt(address):
                if held.get(address, 0) >= max_per_address:
                    self._refused = True
                    transport.close()
                    now = time.monotonic()
                    if log is not None and now - told.get(address, -60.0) >= 60.0:
                        if len(told) > 1000:
                            told.clear()
                        told[address] = now
                        log.warning("too_many_connections", address=address, limit=max_per_address)
                    return
                held[address] = held.get(address, 0) + 1
                self._address = address
            super().connection_made(transport)
            self._expect()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not None and self.cycle is not cycle:  # a request's headers came
                self._body_due = self.cycle.more_body
                if self._body_due:
                    self._expect()
                else:
                    self._came()
            elif self._body_due and self.cycle is not None and not self.cycle.more_body:
                self._body_due = False  # (its body came whole)
                self._came()

        def on_response_complete(self) -> None:
            cycle = self.cycle
            super().on_response_complete()  # (it starts a pipelined request already read)
            if self.cycle is cycle:  # (none started: the next one's headers are awaited)
                self._expect()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return  # (closed in connection_made: uvicorn never saw it)
            if self._address is not None:
                left = held.get(self._address, 1) - 1
                if left > 0:
                    held[self._address] = left
                else:
                    held.pop(self._address, None)
                self._address = None
            self._came()
            super().connection_lost(exc)

        def _expect(self) -> None:
            self._came()
            self._due = self.loop.call_later(timeout_s, self._too_slow)

        def _came(self) -> None:
            if self._due is not None:
                self._due.cancel()
                self._due = None

        def _too_slow(self) -> None:
            self._due = None
            if self._body_due and self.flow.read_paused:
                # the app has not read what came (uvicorn stops reading beyond 64 KiB until it
                # does): the wait is the server's, not the client's
                self._due = self.loop.call_later(timeout_s, self._too_slow)
                return
            if not self.transport.is_closing():
                self.transport.close()

    return HeaderTimedProtocol


def _client_of(address: str) -> str:
    """Who a connection is counted against: its IPv4 address, or its IPv6 /64 (one host
    is given a whole /64 and may bind any address of it)."""
    if ":" not in address:
        return address
    try:
        return str(ipaddress.IPv6Network(f"{address.split('%')[0]}/64", strict=False))
    except ValueError:
        return address


def _proxies(trusted: frozenset[str]) -> Callable[[str], bool]:
    """Whether a client (`_client_of`) is a trusted proxy: an address or network given to
    --trusted-proxy (as uvicorn reads them for X-Forwarded-For; `*` trusts every one)."""
    if "*" in trusted:
        return lambda _client: True
    nets = []
    for t in trusted:
        try:
            nets.append(ipaddress.ip_network(t, strict=False))
        except ValueError:
            continue  # (a Unix socket's name, say: never a TCP peer)

    def exempt(client: str) -> bool:
        try:
            ip = ipaddress.ip_network(client, strict=False)
        except ValueError:
            return False
        return any(ip.version == n.version and ip.subnet_of(n) for n in nets)  # type: ignore[arg-type]

    return exempt


def _open_files_to_hard_limit() -> None:
    """Raise this process's limit of open files to the hard limit (systemd's soft default,
    1,024, is four clients' worth of connections)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn re-raises a captured SIGTERM after its shutdown (the process then dies of the
        signal); here the stop a signal asks for is the normal end: exit status 0."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            def stop(signum: int, frame: FrameType | None) -> None:
                if self.should_exit:
                    self.force_exit = True
                self.should_exit = True

            old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
            try:
                yield
            finally:
                for s, h in old.items():
                    signal.signal(s, h)

    return Server
