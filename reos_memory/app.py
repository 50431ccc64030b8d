"""The one place that reads configuration and wires the service together."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from reos_memory import __version__
from reos_memory.config import Config
from reos_memory.logs import setup_logging
from reos_memory.store import Database
from reos_memory.store.migrations import migrate


class App:
    """What handlers reach through `ctx.app`: the database and the service state."""

    def __init__(self, config: Config, log: Any) -> None:
        self.config = config
        self.log = log
        self.db = Database(
            config.db,
            busy_timeout_ms=config.busy_timeout_ms,
            lock_wait_s=config.lock_wait_s,
            synchronous=config.synchronous,
            cache_kib=config.cache_kib,
        )
        applied = migrate(self.db)
        if applied:
            log.info("migrated", database=config.db, applied=applied)

    def embedder_status(self) -> dict[str, Any]:
        return {
            "backend": "none",
            "status": "disabled",
            "detail": "no embedder is configured; semantic search is off, graph methods work",
        }

    def close(self) -> None:
        self.db.checkpoint()
        self.db.close()


def serve(config: Config) -> int:
    """Serve JSON-RPC on stdin/stdout until end of input, SIGTERM or the parent's death."""
    from reos_memory.rpc.framing import FrameReader, FrameWriter
    from reos_memory.rpc.methods import load_all
    from reos_memory.rpc.server import Server, StopServing

    log = setup_logging(config.log_level)
    # The protocol keeps the real stdout; anything else printed (by us or a library) goes to stderr.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    interactive = stdin.isatty()

    app = App(config, log)
    reader = FrameReader(stdin, config.max_message_bytes)
    server = Server(
        app,
        load_all(),
        reader,
        FrameWriter(proto_fd, reader),
        log,
        read_threads=config.read_threads,
        heavy_threads=config.heavy_threads,
    )

    def on_signal(signum: int, frame: Any) -> None:
        log.info("signal", signal=signal.Signals(signum).name)
        server.stopping.set()
        if server.reading:
            raise StopServing()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, on_signal)
    if config.parent_watch_s > 0:
        _watch_parent(config.parent_watch_s, log)

    if interactive:
        sys.stderr.write(
            f"reos-memory {__version__}: JSON-RPC 2.0 on stdin/stdout, database {config.db}\n"
            'Type one request per line, e.g. {"jsonrpc":"2.0","id":1,"method":"memory/stats"}'
            " - Ctrl-D quits.\n"
        )
        sys.stderr.flush()
    log.info("started", version=__version__, pid=os.getpid(), database=config.db)
    try:
        server.serve()
    finally:
        app.close()
        log.info("stopped", requests=server.requests_served)
    return 0


def _watch_parent(interval: float, log: Any) -> None:
    """Stop when the process that started us is gone, even if it left our stdin open."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                log.info("parent_gone", parent=parent)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
