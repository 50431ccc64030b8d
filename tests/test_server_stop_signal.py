"""A stop signal may land on any bytecode of the read loop: wherever it lands, serve() returns
normally (the process then exits 0), never with a traceback."""

from __future__ import annotations

import inspect
import sys

from reos_memory.interfaces.jsonrpc.server import Server, StopServing
from reos_memory.logs import setup_logging
from tests.spec_server import registry


class EndOfInput:
    max_bytes = 1 << 20

    def read(self):
        return None


class Sink:
    def send(self, data: bytes) -> bool:
        return True


def _line_of(code, text: str) -> int:
    lines, first = inspect.getsourcelines(code)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_a_signal_landing_in_the_read_loops_finally_stops_cleanly():
    server = Server(None, registry, EndOfInput(), Sink(), setup_logging("warning"))
    loop = getattr(Server, "_read_loop", Server.serve)
    target = _line_of(loop, "self.reading = False")
    fired = []

    def tracer(frame, event, arg):
        if frame.f_code is loop.__code__:
            if event == "line" and frame.f_lineno == target and not fired:
                fired.append(True)
                server.stopping.set()
                raise StopServing()  # what the signal handler raises while `reading` is True
            return tracer
        return tracer if event == "call" else None

    sys.settrace(tracer)
    try:
        server.serve()  # returns: no StopServing escapes
    finally:
        sys.settrace(None)
    assert fired and server.stopping.is_set() and server.reading is False
