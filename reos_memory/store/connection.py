"""One SQLite file shared by threads and processes: WAL, busy handling, explicit transactions.

apsw autocommits and its `with conn:` is a savepoint, so every transaction here is spelled out:
writes run inside `BEGIN IMMEDIATE` (the write lock is taken up front, so a transaction never
fails half-way with SQLITE_BUSY), reads inside `BEGIN` (one consistent snapshot).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import apsw

from reos_memory.errors import StorageBusy
from reos_memory.private_files import check_database_owned

T = TypeVar("T")


@functools.cache
def vec_extension_path() -> str:
    """sqlite-vec's loadable extension, found without importing the package (which loads numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("sqlite-vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


Connection = apsw.Connection

_BUSY = (apsw.BusyError, apsw.LockedError)


Reader = Callable[[Callable[[apsw.Connection], Any]], Any]  # Database.read


def fetch(conn: apsw.Connection, sql: str, args: Any = ()) -> list[Any]:
    """All rows of a query, loosely typed (apsw's row types are a wide union)."""
    return conn.execute(sql, args).fetchall()


def scalar(conn: apsw.Connection, sql: str, args: Any = ()) -> Any:
    """The first column of the first row, or None."""
    rows = conn.execute(sql, args).fetchall()
    return rows[0][0] if rows else None


def create_private(path: str) -> bool:
    """Create `path` as an empty file readable by its owner only (0600), and its directory, if
    missing, as 0700; True when the file was created. SQLite gives a database's -wal and -shm
    files the database's own permissions, so they are private too. An existing file is left as
    it is (its owner chose its mode)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        os.makedirs(parent, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def remove_stale_siblings(path: str, suffix: str, older_than_s: float = 3600.0) -> None:
    """Delete `<path>.*<suffix>` files older than `older_than_s`: half-written copies left by
    processes killed while writing them (each writer uses a random name of its own)."""
    folder, name = os.path.split(path)
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder or "."):
            if entry.name.startswith(name + ".") and entry.name.endswith(suffix):
                with contextlib.suppress(OSError):
                    if now - entry.stat().st_mtime > older_than_s:
                        os.unlink(entry.path)


def backup_to(db: Database, target: str, pages_per_step: int = 4096) -> int:
    """A consistent copy of the database at `target` (a new, private file), taken while other
    connections and processes keep reading and writing (SQLite's online backup); the pages
    copied. A step that meets a lock waits and goes on; writes made meanwhile by this process's
    connection are picked up, others' restart the copy (SQLite's rule), which the loop finishes."""
    if not create_private(target):
        raise FileExistsError(target)
    dest = apsw.Connection(target)
    pages = -1
    try:
        with dest.backup("main", db.conn(), "main") as b:
            while not b.done:
                db.retry(lambda: b.step(pages_per_step))
            pages = int(b.page_count)
    except apsw.Error as exc:
        raise OSError(f"the copy failed: {exc}") from exc
    finally:
        dest.close()
        if pages < 0:
            os.unlink(target)  # never leave a half copy that looks like a backup
    return pages


def _end(conn: apsw.Connection, statement: str) -> None:
    """End the open transaction, if SQLite has not already ended it, while an error is on its
    way out: a failing ROLLBACK or COMMIT here must never replace that error."""
    if conn.get_autocommit():
        return  # SQLite rolled back on its own (a full disk, an I/O error) or fn ended it
    with contextlib.suppress(apsw.Error):
        conn.execute(statement)


class Database:
    """A database file plus one connection per thread that uses it."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout_ms: int = 5000,
        lock_wait_s: float = 60.0,
        synchronous: str = "NORMAL",
        cache_kib: int = 4096,
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.lock_wait_s = lock_wait_s
        self.synchronous = synchronous.upper()
        self.cache_kib = cache_kib
        self._local = threading.local()
        self._all: list[apsw.Connection] = []
        self._all_lock = threading.Lock()
        self._closed = False
        if path != ":memory:":
            create_private(path)
            check_database_owned(path)  # (one another user made first: refused)

    # -- connections -----------------------------------------------------------------------

    def connect(self) -> apsw.Connection:
        """Open a new connection with the service's pragmas and sqlite-vec loaded."""
        conn = apsw.Connection(self.path)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        conn.enable_load_extension(True)
        conn.load_extension(vec_extension_path())
        conn.enable_load_extension(False)
        self.retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchall())
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute(f"PRAGMA cache_size = -{int(self.cache_kib)}")
        conn.execute("PRAGMA temp_store = MEMORY")
        return conn

    def conn(self) -> apsw.Connection:
        """This thread's connection, opened on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect()
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    # -- transactions ----------------------------------------------------------------------

    def write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn(conn)` in one BEGIN IMMEDIATE transaction; all of it commits or none does."""
        conn = self.conn()
        self.retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            result = fn(conn)
        except BaseException:
            _end(conn, "ROLLBACK")
            raise
        try:
            self.retry(lambda: conn.execute("COMMIT"))
        except BaseException:
            _end(conn, "ROLLBACK")
            raise
        return result

    def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn(conn)` on one consistent snapshot of the database.

        `fn` runs again when the database is busy (WAL recovery): it must not leave anything
        behind that a second run would trip over.
        """
        conn = self.conn()
        conn.execute("BEGIN")
        try:
            result = self.retry(lambda: fn(conn))
        except BaseException:
            _end(conn, "COMMIT")
            raise
        conn.execute("COMMIT")
        return result

    def retry(self, op: Callable[[], T]) -> T:
        """Retry `op` while another process holds the lock, up to `lock_wait_s` in all.

        busy_timeout already waits inside SQLite; this outer loop covers the cases it does not
        (WAL recovery, a checkpoint in progress) so that "database is locked" never reaches a
        client unless the other process holds the lock for the whole budget.
        """
        deadline = time.monotonic() + self.lock_wait_s
        delay = 0.002
        while True:
            try:
                return op()
            except _BUSY as exc:
                if time.monotonic() >= deadline:
                    raise StorageBusy(
                        "the database stayed locked by another process",
                        waited_s=self.lock_wait_s,
                    ) from exc
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.1)

    # -- lifecycle -------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Fold the WAL back into the database file (best effort; other processes may read)."""
        with contextlib.suppress(apsw.Error):
            self.conn().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(apsw.Error):
                conn.close()
        self._local = threading.local()
        self._closed = True
