"""The JSON-RPC 2.0 engine: request rules, batches, concurrency, cancellation, shutdown.

Done by hand rather than with jsonrpcserver: its batch handling answers one bad item with a
single -32600 (the spec wants one response per item), its jsonschema check costs ~70% of a
request, and it puts exception text into replies.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import msgspec

from reos_memory import errors as derr
from reos_memory.interfaces import rpc
from reos_memory.interfaces.jsonrpc.framing import FrameReader, FrameWriter, Malformed, Oversized
from reos_memory.interfaces.registry import MethodSpec, MethodTable
from reos_memory.interfaces.rpc import RequestId
from reos_memory.json_types import JSONObject
from reos_memory.logs import Log

if TYPE_CHECKING:
    from reos_memory.interfaces.services import Services

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_MISSING = object()

Deliver = Callable[[JSONObject | None], None]


class StopServing(Exception):
    """Raised by the signal handler to leave a blocking read of stdin."""


class RequestContext:
    """What a handler may use besides its params: the app, cancellation and progress."""

    def __init__(
        self, server: Server, req_id: RequestId, method: str, progress_token: object
    ) -> None:
        self.server = server
        self.app: Services = server.app
        self.id = req_id
        self.method = method
        self.progress_token = progress_token
        self.cancelled = threading.Event()

    def check_cancelled(self) -> None:
        """Raise Cancelled if the client asked to stop this request (call between steps)."""
        if self.cancelled.is_set():
            raise derr.Cancelled(f"request {self.id!r} was cancelled")

    def progress(self, done: int, total: int | None, message: str = "") -> None:
        """Send a `$/progress` notification if the request carried a progress_token."""
        if self.progress_token is not None:
            self.server.notify(
                "$/progress",
                {"token": self.progress_token, "done": done, "total": total, "message": message},
            )


class _Batch:
    """Collects the responses of one batch and sends them together when the last one is in."""

    def __init__(self, server: Server, n: int) -> None:
        self.server = server
        self.left = n
        self.responses: list[JSONObject] = []
        self.lock = threading.Lock()

    def deliver(self, resp: JSONObject | None) -> None:
        with self.lock:
            if resp is not None:
                self.responses.append(resp)
            self.left -= 1
            done = self.left == 0
        if done and self.responses:
            self.server.send(self.responses)


class Server:
    """Reads frames, runs requests concurrently, writes replies in the client's framing.

    The order of the connection is causal: every request except `inline` ones starts only after
    the last `write` or `pipeline` request received before it has finished, so a client that
    pipes create-then-search sees its own write. Reads sent before a write do not wait for it,
    and nothing waits for `heavy` jobs (their effects appear when they finish).
    """

    def __init__(
        self,
        app: Services,
        registry: MethodTable,
        reader: FrameReader,
        writer: FrameWriter,
        log: Log,
        *,
        read_threads: int = 4,
        heavy_threads: int = 2,
        slow_request_s: float = 1.0,
        max_batch_items: int = 1000,
        max_result_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.app = app
        self.max_batch_items = max_batch_items
        self.max_result_bytes = max_result_bytes
        self.registry = registry
        self.reader = reader
        self.writer = writer
        self.log = log
        self.slow_request_s = slow_request_s
        self.pools = {
            "write": ThreadPoolExecutor(1, thread_name_prefix="rpc-write"),
            # writes that wait on the outside world (an LLM) run here, never on the write thread;
            # they are chained like writes, so one thread is enough
            "pipeline": ThreadPoolExecutor(1, thread_name_prefix="rpc-pipeline"),
            "read": ThreadPoolExecutor(read_threads, thread_name_prefix="rpc-read"),
            "heavy": ThreadPoolExecutor(heavy_threads, thread_name_prefix="rpc-heavy"),
        }
        self.inflight: dict[tuple[str, RequestId], RequestContext] = {}
        self._inflight_lock = threading.Lock()
        # completion of the newest write/pipeline request: what later requests wait for
        self._barrier: Future[None] | None = None
        # completion of the reads received since that write: the next write waits for them, so
        # a pipelined read never sees a write the client sent after it
        self._reads_since_write: list[Future[None]] = []
        self._outstanding = 0
        self._order = threading.Condition()
        self.stopping = threading.Event()
        self.started = time.monotonic()
        self._served_lock = threading.Lock()
        self._served_n = 0
        self.reading = False

    # -- output ----------------------------------------------------------------------------

    def send(self, message: object) -> None:
        if not self.writer.send(_encoder.encode(message)) and not self.stopping.is_set():
            self.log.warning("client_gone", detail="stdout closed; stopping")
            self.stopping.set()

    def notify(self, method: str, params: JSONObject) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- input -----------------------------------------------------------------------------

    def serve(self) -> None:
        """Handle frames until end of input or a stop request, then drain in-flight work."""
        try:
            self._read_loop()
        except StopServing:
            pass  # a signal that landed after a read, before its `finally` cleared `reading`
        finally:
            self.reading = False
            self.drain()

    def _read_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                self.reading = True  # inside the try: a signal may land on any bytecode
                frame = self.reader.read()
            except StopServing:
                break
            finally:
                self.reading = False
            if frame is None:
                self.log.info("stdin_closed")
                break
            try:
                self.handle_frame(frame)
            except Exception as exc:  # never let one message take the process down
                self.send(self._internal_error("frame_failed", exc, None))

    @property
    def requests_served(self) -> int:
        return self._served_n

    def drain(self) -> None:
        """Stop accepting work and wait for every accepted request to finish and reply."""
        self.stopping.set()
        with self._order:
            # requests still waiting for an earlier write are submitted when it finishes
            while self._outstanding:
                self._order.wait(0.5)
        for pool in self.pools.values():
            pool.shutdown(wait=True)

    def handle_frame(self, frame: bytes | Oversized | Malformed) -> None:
        """Answer one frame: a request, or a batch whose replies are sent together."""
        try:
            msg, bad_text = self._decode(frame)
            if isinstance(msg, list):
                rpc.check_batch(msg, self.max_batch_items)
        except rpc.Refused as refused:
            self.send(refused.reply)
            return
        if isinstance(msg, list):
            batch = _Batch(self, len(msg))
            for item in msg:
                self._handle_one(item, batch.deliver, bad_text)
        else:
            self._handle_one(msg, self._deliver_single, bad_text)

    def _decode(self, frame: bytes | Oversized | Malformed) -> tuple[object, bool]:
        """The frame's JSON value, and whether it holds bad text (invalid UTF-8, a lone
        surrogate: refused per request, naming the field); rpc.Refused when it is not JSON."""
        if isinstance(frame, Oversized):
            raise rpc.Refused(
                rpc.failure(
                    None,
                    rpc.INVALID_REQUEST,
                    f"message of {frame.size} bytes exceeds the limit of {self.reader.max_bytes} bytes",
                    reason="payload_too_large",
                    limit_bytes=self.reader.max_bytes,
                )
            )
        if isinstance(frame, Malformed):
            raise rpc.Refused(
                rpc.failure(
                    None, rpc.PARSE_ERROR, f"Parse error: {frame.detail}", reason="parse_error"
                )
            )
        try:
            return _decoder.decode(frame), False
        except RecursionError:
            raise rpc.Refused(
                rpc.failure(
                    None,
                    rpc.PARSE_ERROR,
                    "Parse error: JSON nested too deeply",
                    reason="parse_error",
                )
            ) from None
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            msg = _lenient_decode(frame)
            if msg is _MISSING:
                raise rpc.Refused(
                    rpc.failure(None, rpc.PARSE_ERROR, f"Parse error: {exc}", reason="parse_error")
                ) from None
            return msg, True

    def _handle_one(self, obj: object, deliver: Deliver, bad_text: bool) -> None:
        """handle_request, with anything it raises answered as this request's -32603: one bad
        item never leaves its batch unanswered (the batch waits for every item's reply)."""
        answered = False

        def once(resp: JSONObject | None) -> None:
            nonlocal answered
            answered = True
            deliver(resp)

        try:
            self.handle_request(obj, once, bad_text)
        except Exception as exc:
            if answered:
                raise  # replied already: the failure is elsewhere (serve() logs it)
            rid = obj.get("id") if isinstance(obj, dict) else None
            rid = rid if rpc.valid_id(rid) else None
            resp = self._internal_error("request_failed", exc, rid)
            deliver(None if isinstance(obj, dict) and "id" not in obj else resp)

    def _deliver_single(self, resp: JSONObject | None) -> None:
        if resp is not None:
            self.send(resp)

    # -- one request -----------------------------------------------------------------------

    def handle_request(self, obj: object, deliver: Deliver, bad_text: bool = False) -> None:
        """Validate one request object and answer it now (errors, inline) or from a pool."""
        try:
            rid, is_notification = rpc.envelope(obj, bad_text)
            assert isinstance(obj, dict)  # the envelope refused anything else
            method = obj["method"]
            spec = rpc.lookup(self.registry, method, rid, is_notification)
            params = rpc.params_of(spec, obj.get("params"), rid, is_notification)
            if self.stopping.is_set() and spec.kind != "inline":
                raise rpc.refused(
                    rid, is_notification, -32013, "the server is shutting down", "shutting_down"
                )
        except rpc.Refused as refused:
            deliver(refused.reply)
            return
        ctx = RequestContext(self, rid, method, getattr(params, "progress_token", None))
        if spec.kind == "inline":
            deliver(self._run(spec, ctx, params, is_notification))
        else:
            self._schedule(spec, ctx, params, is_notification, deliver)

    def _schedule(
        self,
        spec: MethodSpec,
        ctx: RequestContext,
        params: msgspec.Struct,
        is_notification: bool,
        deliver: Deliver,
    ) -> None:
        """Run the request on its kind's pool once the last write or pipeline request received
        before it has finished, and a write once the reads received before it have finished too
        (the connection's causal order: a read sees the writes sent before it and none after)."""
        key = _id_key(ctx.id) if not is_notification else None
        if key is not None:
            with self._inflight_lock:
                self.inflight[key] = ctx
        finished: Future[None] = Future()
        with self._order:
            earlier = [self._barrier]
            if spec.kind in ("write", "pipeline"):
                self._barrier = finished
                earlier += self._reads_since_write
                self._reads_since_write = []
            elif spec.kind == "read":
                if len(self._reads_since_write) >= 64:  # a long run of reads: keep the live ones
                    self._reads_since_write = [f for f in self._reads_since_write if not f.done()]
                self._reads_since_write.append(finished)
            self._outstanding += 1

        def forget() -> None:
            if key is not None:
                with self._inflight_lock:
                    if self.inflight.get(key) is ctx:
                        del self.inflight[key]
            finished.set_result(None)
            with self._order:
                self._outstanding -= 1
                self._order.notify_all()

        def job() -> None:
            try:
                deliver(self._run(spec, ctx, params, is_notification))
            finally:
                forget()

        def submit() -> None:
            try:
                self.pools[spec.kind].submit(job)
            except RuntimeError:  # pool already shut down
                try:
                    deliver(
                        rpc.refused(
                            ctx.id,
                            is_notification,
                            -32013,
                            "the server is shutting down",
                            "shutting_down",
                        ).reply
                    )
                finally:
                    forget()

        _when_done(earlier, submit)

    def _run(
        self, spec: MethodSpec, ctx: RequestContext, params: msgspec.Struct, is_notification: bool
    ) -> JSONObject | None:
        """Execute the handler; its reply (None for a notification), errors mapped to rpc."""
        t0 = time.perf_counter()
        try:
            ctx.check_cancelled()
            result = spec.handler(ctx, params)
            if not is_notification:
                # encoded here, once: the size is known before anything is sent
                result = msgspec.Raw(self._bounded(spec, _encoder.encode(result)))
            resp: JSONObject = {"jsonrpc": "2.0", "id": ctx.id, "result": result}
        except derr.ReosError as exc:
            resp = rpc.domain_failure(ctx.id, exc)
        except Exception as exc:
            resp = self._internal_error("internal_error", exc, ctx.id, method=spec.name)
        self._served(spec, time.perf_counter() - t0)
        return None if is_notification else resp

    def _served(self, spec: MethodSpec, elapsed: float) -> None:
        with self._served_lock:  # served from many threads; += alone is not atomic
            self._served_n += 1
        if elapsed > self.slow_request_s:
            self.log.info("slow_request", method=spec.name, seconds=round(elapsed, 3))

    def _bounded(self, spec: MethodSpec, raw: bytes) -> bytes:
        """The encoded result, or PayloadTooLarge when a read's result exceeds max_result_bytes.

        Only reads are refused: they changed nothing, so the client can ask again for less. A
        write's result is small (it echoes what was written, itself bounded by
        max_message_bytes) and is always sent, since its effects are committed already; so are
        the small fixed results of inline methods (`rpc.discover` included)."""
        if len(raw) <= self.max_result_bytes:
            return raw
        if spec.kind != "read":
            self.log.warning(
                "large_result", method=spec.name, size_bytes=len(raw), limit=self.max_result_bytes
            )
            return raw
        narrow = [f for f in _NARROWING if f in spec.field_names]
        how = ", ".join(_NARROWING[f] for f in narrow) or "a narrower request"
        raise derr.PayloadTooLarge(
            f"the result of {spec.name} is {len(raw)} bytes, over the limit of"
            f" {self.max_result_bytes} bytes (max_result_bytes); ask for less: {how}",
            method=spec.name,
            size_bytes=len(raw),
            limit="max_result_bytes",
            limit_bytes=self.max_result_bytes,
            narrow_with=narrow,
        )

    def _internal_error(
        self, event: str, exc: Exception, rid: RequestId, **log: object
    ) -> JSONObject:
        """Log an unexpected exception with a fresh incident id (and its traceback); the -32603
        reply naming that incident, so a user's report can be matched to the log."""
        incident = uuid.uuid4().hex[:12]
        self.log.error(
            event, incident=incident, error=repr(exc), traceback=traceback.format_exc(), **log
        )
        return rpc.internal_failure(rid, incident)

    def cancel(self, req_id: RequestId) -> bool:
        """Mark an in-flight request as cancelled; False if it is not (or no longer) running."""
        with self._inflight_lock:
            ctx = self.inflight.get(_id_key(req_id))
        if ctx is None:
            return False
        ctx.cancelled.set()
        return True

    def inflight_count(self) -> int:
        with self._inflight_lock:
            return len(self.inflight)


# parameters that make a read's result smaller, named in a payload_too_large reply
_NARROWING = {
    "limit": "a smaller `limit`",
    "cursor": "then the next page with `cursor`",
    "max_results": "a smaller `max_results`",
    "depth": "a smaller `depth`",
    "graph_depth": "a smaller `graph_depth`",
    "max_depth": "a smaller `max_depth`",
    "max_nodes": "a smaller `max_nodes`",
    "formats": "fewer `formats`",
    "include_children": "`include_children: false`",
    "rel_types": "fewer `rel_types`",
    "act_id": "an `act_id` filter",
}


def _when_done(futures: list[Future[None] | None], then: Callable[[], None]) -> None:
    """Call `then` once every one of `futures` is done: now, or on the thread that finishes the
    last of them."""
    waiting = [f for f in futures if f is not None and not f.done()]
    if not waiting:
        then()
        return
    left = [len(waiting)]
    lock = threading.Lock()

    def one_done(_: Future[None]) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            then()

    for f in waiting:
        f.add_done_callback(one_done)


def _id_key(req_id: RequestId) -> tuple[str, RequestId]:
    return (type(req_id).__name__, req_id)


def _lenient_decode(frame: bytes) -> object:
    """Parse JSON that is well-formed except for bad text, so the error can name the field."""
    import json

    try:
        return json.loads(frame.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return _MISSING
