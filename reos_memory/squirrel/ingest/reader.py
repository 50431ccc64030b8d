"""Reading a session log from a byte offset: complete lines only, plain or zstd-compressed.

A line is consumed only when it ends in a newline, or when it is the file's last line and is a
whole JSON value (an agent still writing leaves a partial line, which is read next time). The
offset counts bytes of the (decompressed) content, so it means the same after a restart.
A file whose first bytes changed, or that shrank, was rewritten: its cursor starts over.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

HEAD_BYTES = 4096
READ_SIZE = 1 << 20
MAX_LINE = 64 << 20  # a longer line is skipped as malformed (agents write a few MB at most)


@dataclass(frozen=True)
class Head:
    sha256: str
    size: int  # bytes hashed


def head(path: str, size: int = HEAD_BYTES) -> Head:
    """The hash of a log's first bytes (decompressed): its identity for the cursor, the same
    whether Codex keeps the rollout plain or compressed."""
    with _open(path, 0) as f:
        data = b""
        while len(data) < size:
            chunk = f.read(size - len(data))
            if not chunk:
                break
            data += chunk
    return Head(hashlib.sha256(data).hexdigest(), len(data))


def same_head(path: str, expected: Head) -> bool:
    return head(path, expected.size) == expected


def compressed(path: str) -> bool:
    return path.endswith(".zst")


def _open(path: str, offset: int) -> IO[bytes]:
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if not compressed(path):
        f.seek(offset)
        return f
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(f, closefd=True)
    left = offset
    while left > 0:  # a compressed stream cannot seek: skip what was read before
        chunk = reader.read(min(left, READ_SIZE))
        if not chunk:
            break
        left -= len(chunk)
    return reader  # type: ignore[return-value]


@dataclass
class Line:
    end: int  # offset just after this line
    data: bytes | None  # None: a line too long to keep (counted as malformed)


def lines(path: str, offset: int, max_bytes: int) -> Iterator[Line]:
    """Complete lines from `offset`, about `max_bytes` of them (at least one line)."""
    with _open(path, offset) as f:
        buf = b""
        pos = offset  # offset of buf[0]
        skipping = False
        read = 0
        while True:
            chunk = f.read(READ_SIZE)
            if not chunk:
                break
            buf += chunk
            start = 0
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                end = pos + nl + 1
                if skipping:
                    skipping = False
                    yield Line(end, None)
                else:
                    yield Line(end, buf[start:nl])
                read += nl + 1 - start
                start = nl + 1
            buf = buf[start:]
            pos += start
            if len(buf) > MAX_LINE:
                pos += len(buf)
                buf = b""
                skipping = True
            if read >= max_bytes:
                return
        if buf and not skipping and _whole_json(buf):
            yield Line(pos + len(buf), buf)


def _whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except Exception:  # not JSON, bad UTF-8, nested too deep
        return False
    return True


# a database's commits go to its write-ahead log first (`<db>-wal`): the main file's size and
# time change only at a checkpoint
_DATABASES = (".db", ".vscdb", ".sqlite")


def signature(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of a log as it changes when written: a SQLite database's with its
    write-ahead log's (a commit may touch only that). Raises OSError when the log is gone."""
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    if path.endswith(_DATABASES):
        try:
            wal = os.stat(path + "-wal")
        except OSError:
            return size, mtime
        size, mtime = size + wal.st_size, max(mtime, wal.st_mtime_ns)
    return size, mtime


def last_write(path: str) -> float:
    """When a log was last written (its write-ahead log counts for a database), in seconds."""
    return signature(path)[1] / 1e9


def size_on_disk(path: str) -> int:
    return os.stat(path).st_size


SUFFIXES = (".jsonl", ".jsonl.zst")


def is_transcript(name: str) -> bool:
    # compaction runs of Claude Code 2.x are the model summarising the session: not work
    return name.endswith(SUFFIXES) and not name.startswith("agent-acompact-")


def find(paths: Iterable[str], also: Callable[[str], bool] | None = None) -> list[str]:
    """Session logs under the given files and directories, oldest first: JSONL logs, and the
    files `also` recognises (logs of other shapes, by their name and place)."""
    found: list[tuple[float, str]] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in files:
                    if is_transcript(name) or (also is not None and also(os.path.join(root, name))):
                        full = os.path.join(root, name)
                        try:
                            found.append((os.stat(full).st_mtime, full))
                        except OSError:
                            continue
        elif os.path.exists(p):
            found.append((os.stat(p).st_mtime, p))
    return [p for _, p in sorted(found)]
