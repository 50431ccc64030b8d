"""Connections to the team database, the versions it runs, and the tenant of a transaction."""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql

from reos_memory.errors import DatabaseUnavailable

# The role the team server's connections act as: it owns no table and cannot bypass row-level
# security (created by migrations/team/0001_tenancy.sql).
SERVER_ROLE = "reos_team_server"
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Timeouts:
    """How long one database call of the server may take. A statement over `statement_ms`, or a
    lock wait over `lock_ms`, is cancelled by PostgreSQL and its transaction rolled back, so a
    slow query or a row another session holds costs a request a bounded time instead of a
    worker thread and a pooled connection for as long as the holder likes. A session idle
    inside a transaction for longer than `statement_ms` is ended by the server: the server's own
    transactions never pause between statements that long unless its process is stuck."""

    statement_ms: int = 5000
    lock_ms: int = 1000

    def __post_init__(self) -> None:
        if self.statement_ms < 1 or self.lock_ms < 1:
            raise ValueError("database timeouts are whole milliseconds >= 1")

    def configure(self, conn: psycopg.Connection) -> None:
        """Session defaults for a pooled connection (its calls outside a tenant transaction,
        such as /health's ping, are bounded too), and the timeouts every tenant or key-lookup
        transaction on it sets, whoever opens it."""
        _CONFIGURED[conn] = self
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false),"
            " set_config('lock_timeout', %s, false),"
            " set_config('idle_in_transaction_session_timeout', %s, false)",
            (str(self.statement_ms), str(self.lock_ms), str(self.statement_ms)),
        )


DEFAULT_TIMEOUTS = Timeouts()
# connection -> the timeouts its pool configured it with (a connection dropped from its pool
# leaves this table with it)
_CONFIGURED: weakref.WeakKeyDictionary[psycopg.Connection, Timeouts] = weakref.WeakKeyDictionary()


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
def _server_transaction(
    conn: psycopg.Connection, setting: str, value: str, timeouts: Timeouts | None
) -> Iterator[psycopg.Connection]:
    """One transaction as the server role with `setting` and the timeouts set for it only
    (`set_config(..., true)` is `SET LOCAL`); one round trip besides the role. No `timeouts`:
    the ones `conn` was configured with (`Timeouts.configure`), else the defaults."""
    timeouts = timeouts or _CONFIGURED.get(conn, DEFAULT_TIMEOUTS)
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(SERVER_ROLE)))
        conn.execute(
            "SELECT set_config(%s, %s, true), set_config('statement_timeout', %s, true),"
            " set_config('lock_timeout', %s, true)",
            (setting, value, str(timeouts.statement_ms), str(timeouts.lock_ms)),
        )
        yield conn


@contextmanager
def tenant_transaction(
    conn: psycopg.Connection, org_id: str, timeouts: Timeouts | None = None
) -> Iterator[psycopg.Connection]:
    """One transaction as the server role, seeing only the rows of `org_id` (row-level security
    keyed by `reos.org_id`, set for this transaction only), each statement and lock wait
    bounded by `timeouts`."""
    with _server_transaction(conn, "reos.org_id", org_id, timeouts):
        yield conn


@contextmanager
def key_lookup_transaction(
    conn: psycopg.Connection, key_id: str, timeouts: Timeouts | None = None
) -> Iterator[psycopg.Connection]:
    """One transaction as the server role that can read only the API key `key_id` (before its
    org is known: the `authenticate` policy), bounded by `timeouts`."""
    with _server_transaction(conn, "reos.key_id", key_id, timeouts):
        yield conn


@contextmanager
def retryable_failures(timeouts: Timeouts) -> Iterator[None]:
    """Turn a timeout, a lost or unobtainable connection, or a deadlock into DatabaseUnavailable
    (with a new incident id for the log), chained to the driver's error. A timeout or a
    deadlock rolled the transaction back; a connection lost before its commit was answered did
    too, except in the instant of the commit itself (the one case where a retried write may
    apply twice unless it carries an idempotency key)."""
    try:
        yield
    except psycopg.errors.QueryCanceled as exc:
        raise _unavailable(f"did not answer within {timeouts.statement_ms} ms") from exc
    except psycopg.errors.LockNotAvailable as exc:
        raise _unavailable(
            f"could not lock what the request needs within {timeouts.lock_ms} ms"
        ) from exc
    except psycopg.errors.TransactionRollback as exc:
        raise _unavailable("rolled the request back for a concurrent one") from exc
    except psycopg.OperationalError as exc:  # no connection within the pool's wait, or lost
        raise _unavailable("could not be reached") from exc


def _unavailable(what: str) -> DatabaseUnavailable:
    return DatabaseUnavailable(
        f"the team database {what}; try again", incident=uuid.uuid4().hex[:12]
    )
