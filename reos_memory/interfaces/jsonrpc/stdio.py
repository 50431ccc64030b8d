"""`reos-memory serve`: the JSON-RPC server on stdin/stdout, in the one stdio process lifecycle."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable
from types import FrameType

from reos_memory.config import Config
from reos_memory.interfaces import stdio_process
from reos_memory.interfaces.jsonrpc.methods import load_all
from reos_memory.interfaces.registry import MethodTable
from reos_memory.interfaces.services import Services
from reos_memory.json_types import JSONObject
from reos_memory.logs import Log


def run_jsonrpc(config: Config, open_app: Callable[[Log], Services]) -> int:
    """Serve JSON-RPC on stdin/stdout until end of input, SIGTERM or the parent's death."""
    return stdio_process.run(
        config,
        open_app,
        load_all,
        functools.partial(_serve, config),
        command="serve",
        greeting=(
            f"JSON-RPC 2.0 on stdin/stdout, database {config.db}\n"
            'Type one request per line, e.g. {"jsonrpc":"2.0","id":1,"method":"memory/stats"}'
            " - Ctrl-D quits."
        ),
    )


def _serve(
    config: Config,
    app: Services,
    registry: MethodTable,
    stdio: stdio_process.Stdio,
    log: Log,
    stopped: JSONObject,
) -> None:
    from reos_memory.interfaces.jsonrpc.framing import FrameReader, FrameWriter
    from reos_memory.interfaces.jsonrpc.server import Server, StopServing

    reader = FrameReader(os.fdopen(stdio.proto_in, "rb"), config.max_message_bytes)
    server = Server(
        app,
        registry,
        reader,
        FrameWriter(stdio.proto_out, reader),
        log,
        read_threads=config.read_threads,
        heavy_threads=config.heavy_threads,
        max_batch_items=config.max_batch_items,
        max_result_bytes=config.max_result_bytes,
    )

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal", signal=signal.Signals(signum).name)
        server.stopping.set()
        if server.reading:
            raise StopServing()  # leaves the blocking read of the input

    stdio_process.on_stop_signals(on_signal)
    try:
        server.serve()
    finally:
        stopped["requests"] = server.requests_served
