"""SQL for `reos-memory dump` and `load`: the user's data as JSON Lines, and back.

A dump is one line of JSON per record, read from one snapshot of the database:

* line 1, the header: `{"type": "header", "format": "reos-memory-dump", "format_version": 1,
  "reos_memory_version", "schema_version", "embedding_model", "embedding_dimensions",
  "created_at", "counts": {record type: rows}}`;
* one line per row: `{"type": <record type>, "rowid": <n>, "row": {column: value}}` (no `rowid`
  for tables without one). Values are stored as SQLite holds them (JSON columns such as
  `properties` or `events_json` stay text, byte for byte); a BLOB is `{"$base64": "..."}`;
* the last line, the trailer: `{"type": "end", "records": <n>, "counts": {...}, "sha256": <hex>}`,
  the hash of every byte before it, so a truncated or edited dump is refused.

Only what the user wrote is dumped. Derived data is not: vectors (recomputed on load with the
configured embedder, the dump records which model made the old ones), keyword indexes (kept by
triggers), change logs, the model record and the migration record (migrations run first).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import apsw
import msgspec

from reos_memory.errors import ReosError
from reos_memory.models import now_iso
from reos_memory.store.connection import Database, _end, fetch, scalar

FORMAT = "reos-memory-dump"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Table:
    record: str  # the record's `type` in the dump
    name: str
    rowid: bool = True  # keep rowids: pages (cursors) and insertion order depend on them
    skip: tuple[str, ...] = ()  # derived columns, recomputed on load


# In load order (foreign keys are checked at commit anyway).
TABLES = (
    Table("block", "blocks"),
    Table("relationship", "block_relationships"),
    Table("document", "documents"),
    Table("project", "projects"),
    Table("memory", "memories", skip=("embedding",)),
    Table("evidence", "evidence"),
    Table("memory_replacement", "memory_replacements", rowid=False),
    Table("memory_metrics", "memory_metrics"),
    Table("episode", "episodes"),
    Table("session", "squirrel_sessions"),
    Table("session_event", "squirrel_events", rowid=False),
    Table("context_request", "context_requests"),
    Table("memory_injection", "memory_injections", rowid=False),
    Table("project_baseline", "project_baselines"),
    Table("writer_call", "writer_calls"),
    Table("transcript_cursor", "transcript_cursors"),
    # the team cache: which memories mirror a team server (so a loaded database still tells
    # them from the user's own), its pull cursors, and the team writes not yet sent
    Table("team_sync", "team_sync"),
    Table("team_memory", "team_memories"),
    Table("team_outbox_item", "team_outbox"),
)
BY_RECORD = {t.record: t for t in TABLES}

# Tables that are not the user's data: derived, bookkeeping, or SQLite's own. A table in neither
# list fails a test, so a new migration has to decide.
DERIVED = (
    "schema_migrations",
    "embedding_meta",
    "block_embeddings",
    "embedding_changes",
    "memory_embedding_changes",
    "keyword_changes",
)
DERIVED_PREFIXES = ("sqlite_", "blocks_fts", "memories_fts", "block_vectors", "memory_vectors")

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


class DumpError(ReosError):
    """A dump that cannot be loaded (truncated, corrupt, newer) or a database that must not be
    loaded into; nothing was stored."""

    reason = "invalid_dump"


def undumped_tables(conn: apsw.Connection) -> list[str]:
    """Tables of the schema that are neither dumped nor known to be derived."""
    known = {t.name for t in TABLES} | set(DERIVED)
    return sorted(
        n for n in _existing(conn) if n not in known and not n.startswith(DERIVED_PREFIXES)
    )


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in fetch(conn, f'PRAGMA table_info("{table}")')]


def _existing(conn: apsw.Connection) -> set[str]:
    return {r[0] for r in fetch(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def _counts(conn: apsw.Connection, names: list[str]) -> dict[str, int]:
    """Rows of each of the tables `names` that exist."""
    have = _existing(conn)
    return {n: int(scalar(conn, f'SELECT count(*) FROM "{n}"') or 0) for n in names if n in have}


def row_counts(conn: apsw.Connection) -> dict[str, int]:
    """Rows of every dumped table that exists, by record type."""
    by_table = _counts(conn, [t.name for t in TABLES])
    return {t.record: by_table[t.name] for t in TABLES if t.name in by_table}


def tables_with_rows(conn: apsw.Connection) -> dict[str, int]:
    """The user-data tables (dumped ones and vectors) that hold rows: name -> rows."""
    counts = _counts(conn, [t.name for t in TABLES] + ["block_embeddings"])
    return {name: n for name, n in counts.items() if n}


def schema_version(conn: apsw.Connection) -> int:
    if "schema_migrations" not in _existing(conn):
        return 0
    return int(scalar(conn, "SELECT max(version) FROM schema_migrations") or 0)


# -- dump -------------------------------------------------------------------------------------


def _value(v: Any) -> Any:
    if isinstance(v, bytes):
        return {"$base64": base64.b64encode(v).decode()}
    return v


def dump(db: Database, write: Callable[[bytes], Any], version: str) -> dict[str, int]:
    """Write every dumped table as JSON Lines through `write`, all read from one snapshot;
    returns the rows written by record type."""
    conn = db.conn()
    conn.execute("BEGIN")
    try:
        # the first read opens the snapshot (it may wait out a checkpoint or a recovery)
        counts = db.retry(lambda: row_counts(conn))
        meta = dict(fetch(conn, "SELECT key, value FROM embedding_meta"))
        header = {
            "type": "header",
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "reos_memory_version": version,
            "schema_version": schema_version(conn),
            "embedding_model": meta.get("model_id"),
            "embedding_dimensions": int(meta["dimensions"]) if "dimensions" in meta else None,
            "created_at": now_iso(),
            "counts": counts,
        }
        digest = hashlib.sha256()
        records = 0

        def emit(obj: Any) -> None:
            line = _enc.encode(obj) + b"\n"
            digest.update(line)
            write(line)

        emit(header)
        written = dict.fromkeys(counts, 0)
        for t in TABLES:
            if t.record not in counts:
                continue
            cols = [c for c in _columns(conn, t.name) if c not in t.skip]
            select = ", ".join(f'"{c}"' for c in cols)
            if t.rowid:
                sql = f'SELECT rowid, {select} FROM "{t.name}" ORDER BY rowid'
            else:
                sql = f'SELECT {select} FROM "{t.name}"'  # primary key order
            for r in conn.execute(sql):
                rec: dict[str, Any] = {"type": t.record}
                if t.rowid:
                    rec["rowid"] = r[0]
                values = r[1:] if t.rowid else r
                rec["row"] = {c: _value(v) for c, v in zip(cols, values, strict=True)}
                emit(rec)
                written[t.record] += 1
                records += 1
        write(
            _enc.encode(
                {"type": "end", "records": records, "counts": written, "sha256": digest.hexdigest()}
            )
            + b"\n"
        )
    finally:
        _end(conn, "COMMIT")
    return written


# -- load -------------------------------------------------------------------------------------


@dataclass
class Loaded:
    header: dict[str, Any]
    counts: dict[str, int]


def _cell(v: Any, where: str) -> Any:
    if isinstance(v, dict) and set(v) == {"$base64"} and isinstance(v["$base64"], str):
        try:
            return base64.b64decode(v["$base64"], validate=True)
        except ValueError:
            raise DumpError(f"{where}: bad base64") from None
    if v is None or isinstance(v, str | int | float):
        return v
    raise DumpError(f"{where}: a value must be text, a number, null or a BLOB, not {v!r:.60}")


def _check_header(obj: Any, latest_schema: int) -> dict[str, Any]:
    if not isinstance(obj, dict) or obj.get("type") != "header" or obj.get("format") != FORMAT:
        raise DumpError(f"line 1: not a {FORMAT} header: this is not a reos-memory dump")
    fv = obj.get("format_version")
    if not isinstance(fv, int) or fv > FORMAT_VERSION or fv < 1:
        raise DumpError(
            f"line 1: dump format version {fv!r}; this reos-memory reads version {FORMAT_VERSION}"
        )
    sv = obj.get("schema_version")
    if not isinstance(sv, int) or sv > latest_schema:
        raise DumpError(
            f"line 1: the dump has schema version {sv!r}, newer than this reos-memory's"
            f" {latest_schema}: load it with a newer reos-memory"
        )
    return obj


def load(db: Database, lines: Iterable[bytes], latest_schema: int) -> Loaded:
    """Insert a dump into an empty, migrated database in one transaction: all of it, or nothing
    (DumpError naming the line that is wrong, or the database's data when it is not empty)."""

    def tx(conn: apsw.Connection) -> Loaded:
        full = tables_with_rows(conn)
        if full:
            held = ", ".join(f"{n}: {c}" for n, c in full.items())
            raise DumpError(f"the database holds data ({held}); load only into an empty one")
        conn.execute("PRAGMA defer_foreign_keys = ON")  # rows may refer to later rows
        columns = {t.record: set(_columns(conn, t.name)) for t in TABLES}
        statements: dict[tuple[str, tuple[str, ...], bool], str] = {}
        digest = hashlib.sha256()
        header: dict[str, Any] | None = None
        counts: dict[str, int] = {}
        records = 0
        n = 0
        end: dict[str, Any] | None = None
        for n, raw in enumerate(lines, start=1):
            if end is not None:
                if raw.strip():
                    raise DumpError(f"line {n}: data after the end record")
                continue
            try:
                obj = _dec.decode(raw)
            except msgspec.DecodeError:
                raise DumpError(
                    f"line {n}: not valid JSON (the dump is truncated or corrupt)"
                ) from None
            if header is None:
                header = _check_header(obj, latest_schema)
                digest.update(raw)
                continue
            kind = obj.get("type") if isinstance(obj, dict) else None
            if kind == "end":
                end = obj
                continue
            digest.update(raw)
            table = BY_RECORD.get(kind) if isinstance(kind, str) else None
            if table is None:
                raise DumpError(f"line {n}: unknown record type {kind!r}")
            row = obj.get("row")
            if not isinstance(row, dict) or not row:
                raise DumpError(f"line {n}: a {kind} record without its row")
            unknown = (set(row) - columns[table.record]) | (set(row) & set(table.skip))
            if unknown:
                raise DumpError(f"line {n}: {table.name} has no column {sorted(unknown)[0]!r}")
            rowid = obj.get("rowid") if table.rowid else None
            if rowid is not None and not isinstance(rowid, int):
                raise DumpError(f"line {n}: rowid must be an integer")
            cols = tuple(row)
            key = (table.name, cols, rowid is not None)
            sql = statements.get(key)
            if sql is None:
                names = (["rowid"] if rowid is not None else []) + [f'"{c}"' for c in cols]
                sql = (
                    f'INSERT INTO "{table.name}" ({", ".join(names)})'
                    f" VALUES ({', '.join('?' * len(names))})"
                )
                statements[key] = sql
            values = [_cell(row[c], f"line {n}, column {c}") for c in cols]
            try:
                conn.execute(sql, ([rowid] if rowid is not None else []) + values)
            except apsw.ConstraintError as exc:
                raise DumpError(f"line {n}: {table.name} refused the row: {exc}") from None
            counts[table.record] = counts.get(table.record, 0) + 1
            records += 1
        if header is None:
            raise DumpError("the dump is empty")
        if end is None:
            raise DumpError(f"the dump ends at line {n} without its end record: it is truncated")
        if end.get("sha256") != digest.hexdigest():
            raise DumpError("the dump's checksum does not match its content: it is corrupt")
        expected = {k: v for k, v in (end.get("counts") or {}).items() if v}
        if end.get("records") != records or expected != counts:
            raise DumpError(
                f"the end record counts {end.get('records')} records, the dump has {records}"
            )
        broken = fetch(conn, "PRAGMA foreign_key_check")
        if broken:
            t, rowid, parent = broken[0][0], broken[0][1], broken[0][2]
            raise DumpError(
                f"the dump is inconsistent: a row of {t} (rowid {rowid}) refers to a missing"
                f" {parent} row ({len(broken)} such rows)"
            )
        return Loaded(header, counts)

    return db.write(tx)
