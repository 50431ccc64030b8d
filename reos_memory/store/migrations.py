"""Numbered SQL migrations, applied in order, each in one transaction with its record.

Files live in the top-level `migrations/` folder of a checkout and inside the wheel as
`reos_memory/migrations/`. An applied migration is never edited: its checksum is recorded
and a mismatch stops the service before it touches anything.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import apsw

from reos_memory.errors import SchemaError
from reos_memory.store.connection import (
    Database,
    backup_to,
    fetch,
    remove_stale_siblings,
)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def migrations_dir() -> Path:
    """Where the migration files are: inside the installed package, else the checkout."""
    packaged = resources.files("reos_memory") / "migrations"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "migrations"


def load_migrations(directory: Path | None = None) -> list[Migration]:
    """All migration files, ordered by number; gaps or duplicates are a packaging bug."""
    directory = directory or migrations_dir()
    found: list[Migration] = []
    for entry in sorted(os.listdir(directory)):
        m = _NAME.match(entry)
        if m:
            sql = (directory / entry).read_text(encoding="utf-8")
            found.append(Migration(int(m.group(1)), m.group(2), sql))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise SchemaError(f"migration files are not numbered 1..N: {versions}")
    return found


def applied_versions(conn: apsw.Connection) -> dict[int, str]:
    """Version -> checksum of every migration recorded in this database."""
    conn.execute(_BOOKKEEPING)
    return dict(fetch(conn, "SELECT version, checksum FROM schema_migrations"))


def migrate(
    db: Database, migrations: list[Migration] | None = None, *, backup: bool = True
) -> list[int]:
    """Bring the database up to the newest migration; return the versions applied now.

    Safe when several processes start at once: each migration is applied under the write lock
    after re-reading what is applied. Before upgrading a database that already holds data,
    a copy is taken next to it (`<db>.pre-NNNN.bak`) so a bad upgrade can never lose memories.
    """
    migrations = migrations if migrations is not None else load_migrations()
    applied_now: list[int] = []
    backed_up = False
    while True:
        todo = pending(db, migrations)
        if not todo:
            return applied_now
        nxt = todo[0]
        if backup and not backed_up and _has_user_data(db) and db.path != ":memory:":
            _backup(db, f"{db.path}.pre-{nxt.version:04d}.bak")
            backed_up = True

        def apply(conn: apsw.Connection, mig: Migration = nxt) -> bool:
            if mig.version in applied_versions(conn):
                return False  # another process applied it meanwhile
            # apsw runs a script's statements as its cursor is read: a statement that returns
            # rows would leave the rest unrun unless the cursor is read to the end
            conn.execute(mig.sql).fetchall()
            conn.execute(
                "INSERT INTO schema_migrations(version, name, checksum, applied_at)"
                " VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                (mig.version, mig.name, mig.checksum),
            )
            return True

        try:
            done = db.write(apply)
        except apsw.Error as exc:
            current = max(db.read(applied_versions), default=0)
            raise SchemaError(
                f"migration {nxt.version:04d} ({nxt.name}) failed and was rolled back: {exc};"
                f" the database stays at version {current}",
                version=nxt.version,
                database_version=current,
            ) from exc
        if done:
            applied_now.append(nxt.version)


def pending(db: Database, migrations: list[Migration] | None = None) -> list[Migration]:
    """The migrations (by default the shipped ones) this database still lacks, read without
    writing anything (SchemaError when it was written by a newer or different version)."""
    known = {m.version: m for m in (migrations if migrations is not None else load_migrations())}
    return db.read(lambda c: _check_and_pending(c, known))


def _check_and_pending(conn: apsw.Connection, known: dict[int, Migration]) -> list[Migration]:
    exists = fetch(
        conn, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
    )
    applied = dict(fetch(conn, "SELECT version, checksum FROM schema_migrations")) if exists else {}
    check_applied(applied, known)
    return [m for v, m in sorted(known.items()) if v not in applied]


def check_applied(applied: dict[int, str], known: dict[int, Migration], label: str = "") -> None:
    """Refuse a database written by a newer version (migrations this one does not know) or by
    another one (a migration whose file changed); `label` names the database ("team ")."""
    newer = sorted(v for v in applied if v not in known)
    if newer:
        raise SchemaError(
            f"the {label}database has migrations {newer} that this version does not know; "
            "it was written by a newer reos-memory - upgrade this one",
            unknown_versions=newer,
        )
    for version, checksum in applied.items():
        if known[version].checksum != checksum:
            raise SchemaError(
                f"{label}migration {version:04d} differs from the one applied to this database",
                version=version,
            )


# Tables whose rows are the user's memories; a database with none of them needs no backup.
USER_TABLES = ("blocks", "block_relationships", "memories", "episodes")


def _has_user_data(db: Database) -> bool:
    def check(conn: apsw.Connection) -> bool:
        existing = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return any(
            conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchall()
            for t in USER_TABLES
            if t in existing
        )

    return db.read(check)


def _backup(db: Database, target: str) -> None:
    """Copy the whole database to `target` (SQLite's online backup, waiting out other processes'
    locks: `backup_to`). The copy is written under a name of this process's own and renamed when
    complete, so a process killed half-way never leaves a partial file that looks like a backup,
    and processes starting at once never write into each other's copy (the last complete one
    wins)."""
    partial = f"{target}.{uuid.uuid4().hex}.partial"
    remove_stale_siblings(target, ".partial")
    backup_to(db, partial)  # private, and removed again if the copy fails
    os.replace(partial, target)
