"""Connections to the team database, the versions it runs, and the tenant of a transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

# The role the team server's connections act as: it owns no table and cannot bypass row-level
# security (created by migrations/team/0001_tenancy.sql).
SERVER_ROLE = "reos_team_server"
CONNECT_TIMEOUT_S = 10


def connect(url: str) -> psycopg.Connection:
    """An autocommit connection: each unit of work opens its own `conn.transaction()`."""
    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)


def server_version_num(conn: psycopg.Connection) -> int:
    """PostgreSQL's version as an integer: 180006 for 18.6, 160004 for 16.4."""
    row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
    assert row is not None
    return int(row[0])


def pgvector_versions(conn: psycopg.Connection) -> tuple[str | None, str | None]:
    """(installed in this database, available to install) versions of pgvector, None if not."""
    row = conn.execute(
        "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
        " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def ensure_database(conn: psycopg.Connection, name: str) -> bool:
    """Create database `name` on this server unless it exists; True when created now."""
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
        return False
    try:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.DuplicateDatabase:
        return False  # another process created it meanwhile
    return True


@contextmanager
def tenant_transaction(conn: psycopg.Connection, org_id: str) -> Iterator[psycopg.Connection]:
    """One transaction as the server role, seeing only the rows of `org_id` (row-level security
    keyed by `reos.org_id`, set for this transaction only)."""
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(SERVER_ROLE)))
        conn.execute("SELECT set_config('reos.org_id', %s, true)", (org_id,))
        yield conn


@contextmanager
def key_lookup_transaction(conn: psycopg.Connection, key_id: str) -> Iterator[psycopg.Connection]:
    """One transaction as the server role that can read only the API key `key_id` (before its
    org is known: the `authenticate` policy)."""
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(SERVER_ROLE)))
        conn.execute("SELECT set_config('reos.key_id', %s, true)", (key_id,))
        yield conn
