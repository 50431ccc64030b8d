"""SQL read from other tools' own databases (opencode's `opencode.db`), never written: opened
read-only without creating anything beside them (`readonly_sqlite`), and a database that is
locked or not (yet) of the expected schema reads as nothing new (the caller reads it again next
time)."""

from __future__ import annotations

import sqlite3
from typing import Any

from reos_memory.store import readonly_sqlite

# opencode's `message` and `part` rows (with their session's directory and parent, and a
# part's message) updated after :t (or at :t too when :at), up to :until, oldest first, by kind
# and id within the same time
_OPENCODE_ROWS = """
SELECT src, id, session_id, parent_id, directory, t_created, t_updated, data, message FROM (
  SELECT 0 AS src, m.id AS id, m.session_id AS session_id, s.parent_id AS parent_id,
         s.directory AS directory, m.time_created AS t_created, m.time_updated AS t_updated,
         m.data AS data, NULL AS message
    FROM message m LEFT JOIN session s ON s.id = m.session_id
   WHERE m.time_updated >= :lo AND m.time_updated <= :until
  UNION ALL
  SELECT 1, p.id, p.session_id, s.parent_id, s.directory, p.time_created, p.time_updated,
         p.data, m.data
    FROM part p LEFT JOIN message m ON m.id = p.message_id LEFT JOIN session s
      ON s.id = p.session_id
   WHERE p.time_updated >= :lo AND p.time_updated <= :until
)
ORDER BY t_updated, src, id
LIMIT :n
"""


def opencode_rows(path: str, t: int, at: bool, until: int, n: int) -> list[tuple[Any, ...]]:
    """The rows of an opencode database updated after time `t` (ms; at `t` too when `at`) up
    to `until`, oldest first, by kind and id at the same time: about `n` of them, never part of
    a time's rows: all those of the last time read are there. Each is (src 0 = message / 1 =
    part, id, session id, parent session id, directory, time created, time updated, data JSON,
    message data JSON)."""
    try:
        conn = readonly_sqlite.connect(path, timeout=1)
    except (OSError, sqlite3.Error):
        return []
    try:
        conn.execute("BEGIN")  # both queries see the same commits
        lo = t if at else t + 1
        rows = list(conn.execute(_OPENCODE_ROWS, {"lo": lo, "until": until, "n": n}).fetchall())
        if len(rows) < n:
            return rows
        # the batch may end within the last time's rows: all of them, however many
        last = rows[-1][6]
        rows = [r for r in rows if r[6] != last]
        args = {"lo": last, "until": last, "n": -1}
        return rows + list(conn.execute(_OPENCODE_ROWS, args).fetchall())
    except sqlite3.Error:
        return []  # locked, or not (yet) opencode's schema
    finally:
        conn.close()
