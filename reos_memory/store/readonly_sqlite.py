"""Other tools' own SQLite databases (opencode's `opencode.db`, Cursor's `state.vscdb`) opened
read-only through the standard library, writing nothing beside them.

SQLite opens a WAL-mode database read-only (`mode=ro`) by creating its `-wal` and `-shm` files
when they are not there, even if nobody else has it open. A WAL database without its `-wal`
(its last connection closed and checkpointed it) is therefore opened `immutable`: nothing is
created and nothing locked. One with a `-wal` (its agent has it open) is opened plainly
read-only, which reads the commits still in the `-wal` through the `-shm` that is there.
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote


def is_wal(path: str) -> bool:
    """Whether the database's header says WAL mode (read and write versions 2; raises
    OSError)."""
    with open(path, "rb") as f:
        header = f.read(20)
    return len(header) == 20 and header[18] == 2


def connect(path: str, timeout: float = 0.5) -> sqlite3.Connection:
    """A read-only connection to `path` that writes nothing beside it (raises OSError or
    sqlite3.Error)."""
    flags = "mode=ro"
    if is_wal(path) and not os.path.exists(path + "-wal"):
        flags += "&immutable=1"
    uri = f"file:{quote(os.path.abspath(path))}?{flags}"
    return sqlite3.connect(uri, uri=True, timeout=timeout)
