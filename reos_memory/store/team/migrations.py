"""The team database's numbered SQL migrations (`migrations/team/NNNN_name.sql`), applied in
order, each in one transaction with its record, as `store/migrations.py` does for SQLite.

Processes starting at once serialize on a transaction-scoped advisory lock and re-read what is
applied under it; an applied migration is never edited (its checksum is checked)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from reos_memory.errors import SchemaError
from reos_memory.store.migrations import (
    Migration,
    check_applied,
    load_migrations,
    migrations_dir,
)

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
# any constant shared by every process migrating this database ("reos" in ASCII)
_LOCK_KEY = 0x72656F73


def team_migrations_dir() -> Path:
    """`migrations/team/` of the checkout, or of the wheel (`reos_memory/migrations/team`)."""
    return migrations_dir() / "team"


def load_team_migrations(directory: Path | None = None) -> list[Migration]:
    """The team migration files, ordered by number (1..N without gaps)."""
    return load_migrations(directory or team_migrations_dir())


def applied_versions(conn: psycopg.Connection) -> dict[int, str]:
    """Version -> checksum of every migration recorded in this database (none: empty)."""
    exists = conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()
    if not exists or exists[0] is None:
        return {}
    rows = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    return {int(v): str(c) for v, c in rows}


def migrate(conn: psycopg.Connection, migrations: list[Migration] | None = None) -> list[int]:
    """Bring the team database up to the newest migration; return the versions applied now.
    `conn` is an autocommit connection (store/team/connection.py: connect)."""
    known = {m.version: m for m in (migrations or load_team_migrations())}
    applied_now: list[int] = []
    for version in sorted(known):
        mig = known[version]
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                conn.execute(_BOOKKEEPING)
                applied = applied_versions(conn)
                check_applied(applied, known, "team ")
                if version in applied:
                    continue
                conn.execute(mig.sql.encode())  # no parameters: the whole script in one go
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (mig.version, mig.name, mig.checksum),
                )
        except psycopg.Error as exc:
            raise SchemaError(
                f"team migration {version:04d} ({mig.name}) failed and was rolled back: {exc}",
                version=version,
            ) from exc
        applied_now.append(version)
    return applied_now
