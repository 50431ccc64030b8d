"""The life of a process that serves one protocol on stdin/stdout (`serve`: JSON-RPC, `mcp`: MCP).

Claims stdio (the protocol gets private descriptors; fd 0 reads /dev/null and fd 1 writes to
stderr, so nothing else - a library, a child process - can read the input or write to the
output), sets up the JSON logs on stderr, opens the App through the opener it is given (an
interface never builds one), starts the model after the protocol's own imports, watches the parent,
greets a terminal, serves, and always closes the App. End of input, SIGTERM, SIGINT or SIGHUP (or
the parent's death, which sends SIGTERM) stops serving; the exit code is 0, or 1 when the database
cannot be opened.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol, TypeVar

from reos_memory import __version__
from reos_memory.config import Config
from reos_memory.errors import ReosError
from reos_memory.json_types import JSONObject
from reos_memory.logs import Log, setup_logging

# the signals that stop serving; the parent watch sends SIGTERM too
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT) + (
    (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()
)


class Served(Protocol):
    """What the process serves: the App (start loads the model in the background)."""

    def start(self) -> None: ...

    def close(self) -> None: ...


AppT = TypeVar("AppT", bound=Served)
Loaded = TypeVar("Loaded")


class Stdio:
    """The protocol's private descriptors, and what the process saw before claiming them."""

    def __init__(self, proto_in: int, proto_out: int, interactive: bool) -> None:
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.interactive = interactive


def claim_stdio() -> Stdio:
    """Private descriptors for the protocol; fd 0 reads /dev/null and fd 1 writes to stderr."""
    interactive = sys.stdin.isatty()
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # anything printed (by us or a library) goes to stderr
    return Stdio(proto_in, proto_out, interactive)


def watch_parent(interval: float, log: Log, parent: int) -> None:
    """Stop when `parent`, the process that started us, is gone, even if it left our stdin open."""

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                log.info("parent_gone", parent=parent)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def on_stop_signals(handler: Callable[[int, FrameType | None], None]) -> None:
    """Run `handler` (in the main thread) on each of STOP_SIGNALS."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)


def run(
    config: Config,
    open_app: Callable[[Log], AppT],
    load: Callable[[], Loaded],
    serve: Callable[[AppT, Loaded, Stdio, Log, JSONObject], None],
    *,
    command: str,
    greeting: str,
    **started: object,
) -> int:
    """Serve one protocol until it stops; the exit code.

    `open_app(log)` opens the App; `load()` runs before the model starts loading (the protocol's
    imports: both would wait on the GIL), and its value goes to `serve(app, loaded, stdio, log,
    stopped)`, which blocks until serving is over and fills `stopped`, the fields of the last log
    line. `greeting` is the line a terminal gets (stdin a TTY) after the version."""
    parent = os.getppid()  # now: a parent that dies while the App opens is noticed too
    log = setup_logging(config.log_level)
    stdio = claim_stdio()
    try:
        app = open_app(log)
    except ReosError as exc:
        sys.stderr.write(f"reos-memory {command}: {exc.message}\n")
        return 1
    stopped: JSONObject = {}
    try:
        loaded = load()
        app.start()
        if config.parent_watch_s > 0:
            watch_parent(config.parent_watch_s, log, parent)
        if stdio.interactive:
            sys.stderr.write(f"reos-memory {__version__}: {greeting}\n")
            sys.stderr.flush()
        log.info("started", version=__version__, pid=os.getpid(), database=config.db, **started)
        serve(app, loaded, stdio, log, stopped)
    finally:
        app.close()
        log.info("stopped", **stopped)
    return 0
