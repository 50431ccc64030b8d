"""Message framing on a byte stream: newline-delimited JSON or LSP `Content-Length:` headers.

The framing is detected from the first bytes a client sends and replies use the same one.
"""

from __future__ import annotations

import os
import threading
from typing import BinaryIO

NDJSON = "ndjson"
LSP = "lsp"


class Oversized:
    """Stands for a message longer than the limit; its bytes were read and dropped."""

    def __init__(self, size: int) -> None:
        self.size = size


class Malformed:
    """Stands for a frame whose headers could not be understood."""

    def __init__(self, detail: str) -> None:
        self.detail = detail


Frame = bytes | Oversized | Malformed


class FrameReader:
    """Reads one message at a time; `read()` returns None at end of input."""

    def __init__(self, stream: BinaryIO, max_bytes: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.mode: str | None = None

    def read(self) -> Frame | None:
        while True:
            line = self.stream.readline(self.max_bytes + 1)
            if not line:
                return None
            if self.mode is None:
                if not line.strip():
                    continue
                head = line.lstrip()[:15].lower()
                self.mode = (
                    LSP if head.startswith((b"content-length:", b"content-type:")) else NDJSON
                )
            if self.mode == LSP:
                return self._read_lsp(line)
            if len(line) > self.max_bytes and not line.endswith(b"\n"):
                return Oversized(len(line) + self._drain_line())
            if line.strip():
                return line

    def _drain_line(self) -> int:
        dropped = 0
        while True:
            chunk = self.stream.readline(1 << 16)
            dropped += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return dropped

    def _read_lsp(self, first: bytes) -> Frame | None:
        length: int | None = None
        line = first
        while True:
            text = line.strip()
            if not text:
                if length is None:
                    # blank lines between frames are tolerated
                    line = self.stream.readline(1 << 16)
                    if not line:
                        return None
                    continue
                break
            name, _, value = text.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    return Malformed(f"bad Content-Length header: {value.strip()[:40]!r}")
                if length < 0:
                    return Malformed("negative Content-Length")
            line = self.stream.readline(1 << 16)
            if not line:
                return None
        if length > self.max_bytes:
            remaining = length
            while remaining:
                chunk = self.stream.read(min(remaining, 1 << 16))
                if not chunk:
                    break
                remaining -= len(chunk)
            return Oversized(length)
        body = self.stream.read(length)
        if body is None or len(body) < length:
            return None
        return body


class FrameWriter:
    """Writes whole messages to a file descriptor; safe to call from any thread."""

    def __init__(self, fd: int, reader: FrameReader) -> None:
        self.fd = fd
        self.reader = reader
        self._lock = threading.Lock()
        self.broken = False

    def send(self, payload: bytes) -> bool:
        """Write one message; False once the other end has gone away."""
        if self.reader.mode == LSP:
            data = b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        else:
            data = payload + b"\n"
        with self._lock:
            if self.broken:
                return False
            view = memoryview(data)
            try:
                while view:
                    n = os.write(self.fd, view)
                    view = view[n:]
            except (BrokenPipeError, OSError):
                self.broken = True
                return False
        return True
