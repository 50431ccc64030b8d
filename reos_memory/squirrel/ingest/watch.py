"""`sqrl watch`: follow the agents' session roots, ingest what is new, end idle sessions.

One watcher per database (an exclusive lock on `<db>.watch.lock`). Each pass looks at every
session log under the roots, reads only the files whose size or time changed since it last
looked (at start, since their cursor), and then ends the sessions whose files have been idle
longer than the idle time. Memory stays flat: per file it keeps one (size, mtime) pair, and a
file is read in bounded batches.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest import reader
from reos_memory.store import transcripts as transcript_sql

if TYPE_CHECKING:
    from reos_memory.squirrel.facade import Squirrel


ROOTS_REFRESH_S = 60.0


class AlreadyWatching(Exception):
    pass


class WatchLock:
    """An exclusive, non-blocking lock beside the database; released when the process ends."""

    def __init__(self, db_path: str) -> None:
        self.path = db_path + ".watch.lock"
        self._f: IO[str] | None = None

    def __enter__(self) -> WatchLock:
        f = open(self.path, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise AlreadyWatching(
                f"another `sqrl watch` is already following this database (pid {holder})"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._f = f
        return self

    def __exit__(self, *exc: object) -> None:
        if self._f is not None:
            fcntl.flock(self._f, fcntl.LOCK_UN)
            self._f.close()
            self._f = None


@dataclass
class PassReport:
    files_seen: int = 0
    files_read: int = 0
    lines: int = 0
    events: int = 0
    episodes: int = 0
    sessions_ended: int = 0
    errors: list[str] = field(default_factory=list)


class Watcher:
    def __init__(
        self,
        sq: Squirrel,
        roots: list[str],
        *,
        idle_seconds: float,
        progress: Callable[[int, int, tin.FileReport], None] | None = None,
        refresh: Callable[[], list[str]] | None = None,
    ) -> None:
        self.sq = sq
        self.roots = roots
        self.refresh = refresh  # the roots looked for again now and then (the defaults)
        self._refreshed = time.monotonic()
        self.idle_seconds = idle_seconds
        self.progress = progress
        self.stop = threading.Event()
        self._seen: dict[str, tuple[int, int]] = {}  # path -> (size, mtime_ns) when last read
        self._primed = False

    def _prime(self) -> None:
        """Files read to their end before (by an earlier run) need no look now."""
        for c in self.sq.db.read(lambda conn: transcript_sql.all_cursors(conn, limit=1_000_000)):
            self._seen[c.path] = (c.size_seen, -1)  # the size on disk when it was last read
        self._primed = True

    def changed(self) -> list[str]:
        """Session logs that are new or changed since they were last read, oldest first."""
        if not self._primed:
            self._prime()
        out: list[tuple[int, str]] = []
        live = set()
        if self.refresh is not None and time.monotonic() - self._refreshed >= ROOTS_REFRESH_S:
            self.roots = self.refresh()  # an agent installed, a project begun, since the start
            self._refreshed = time.monotonic()
        for path in tin.find([r for r in self.roots if os.path.exists(r)]):
            path = os.path.realpath(path)
            live.add(path)
            try:
                size, mtime = reader.signature(path)
            except OSError:
                continue
            seen = self._seen.get(path)
            if seen is not None and seen[0] == size and seen[1] in (-1, mtime):
                continue
            out.append((mtime, path))
        for gone in set(self._seen) - live:  # deleted files: forget them (memory stays flat)
            del self._seen[gone]
        return [p for _, p in sorted(out)]

    def run_pass(self) -> PassReport:
        rep = PassReport()
        todo = self.changed()
        opts = tin.Options(session_end=False)  # sessions end below, once all their files are in
        for i, path in enumerate(todo):
            if self.stop.is_set():
                break
            try:
                sig = reader.signature(path)
            except OSError:
                continue  # gone since the scan
            try:
                fr = tin.ingest_file(self.sq.ingest_deps, path, opts)
            except Exception as exc:  # one bad file never stops the watcher
                rep.errors.append(f"{path}: {exc}")
                fr = tin.FileReport(path, skipped_reason=str(exc))
            # looked at as it was: read again only once it changes (a bad file is not retried
            # on every pass)
            self._seen[path] = sig
            rep.files_read += 1
            rep.lines += fr.lines
            rep.events += fr.events
            rep.episodes += len(fr.episodes)
            if self.progress is not None:
                self.progress(i + 1, len(todo), fr)
        rep.files_seen = len(self._seen)  # every log known, read now or before
        rep.sessions_ended += self.end_idle()
        return rep

    def end_idle(self) -> int:
        """End the sessions all of whose files have been idle past the idle time."""
        return len(tin.end_idle_sessions(self.sq.ingest_deps, self.idle_seconds))

    def run(self, interval: float, once: bool, log: Callable[[str], None]) -> PassReport:
        total = PassReport()
        while not self.stop.is_set():
            rep = self.run_pass()
            for e in rep.errors:
                log(f"error: {e}")
            if rep.files_read or rep.sessions_ended:
                log(
                    f"read {rep.files_read} file(s): {rep.lines} lines, {rep.events} events,"
                    f" {rep.episodes} episode(s); {rep.sessions_ended} session(s) ended"
                )
            for k in ("files_read", "lines", "events", "episodes", "sessions_ended"):
                setattr(total, k, getattr(total, k) + getattr(rep, k))
            total.files_seen = rep.files_seen
            total.errors.extend(rep.errors[-10:])
            if once:
                break
            self.stop.wait(interval)
        return total


class Progress:
    """A progress bar on a terminal, one plain line per file otherwise."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = 0.0

    def __call__(self, done: int, total: int, rep: tin.FileReport) -> None:
        if self.tty:
            now = time.monotonic()
            if done < total and now - self._last < 0.1:
                return
            self._last = now
            width = 30
            filled = width * done // max(total, 1)
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files"
                + ("\n" if done == total else "")
            )
        elif rep.lines or rep.skipped_reason or rep.ended:
            what = rep.skipped_reason or (
                f"{rep.lines} lines, {rep.events} events, {len(rep.episodes)} episode(s)"
                + (", session ended" if rep.ended else "")
            )
            self.stream.write(f"{done}/{total} {rep.path}: {what}\n")
        self.stream.flush()
