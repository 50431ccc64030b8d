"""The team server's database (issue 21, foundation): the embedded PostgreSQL and its
migrations, on one real embedded PostgreSQL with pgvector started for this module."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from reos_memory.errors import SchemaError
from reos_memory.store.migrations import Migration
from reos_memory.store.team import connection as pg
from reos_memory.store.team.migrations import applied_versions, load_team_migrations, migrate
from reos_memory.team.database import (
    TeamDatabase,
    TeamDatabaseError,
    check_versions,
    open_team_database,
    parse_version,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamDatabase]:
    """One embedded PostgreSQL for the module, stopped at its end."""
    data_dir = tmp_path_factory.mktemp("team") / "team-db"
    t0 = time.monotonic()
    db = open_team_database(None, data_dir)
    print(f"embedded PostgreSQL started and migrated in {time.monotonic() - t0:.2f} s")
    yield db
    pgdata = db.embedded.pgdata
    db.close()
    assert not (pgdata / "postmaster.pid").exists(), "the embedded server was left running"


def _database_url(server: TeamDatabase, name: str) -> str:
    return server.url.replace("/reos_team?", f"/{name}?")


@pytest.fixture
def blank_url(server: TeamDatabase) -> str:
    """The URL of a new empty database on the module's server."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with server.connect() as conn:
        pg.ensure_database(conn, name)
    return _database_url(server, name)


@pytest.fixture
def conn(blank_url: str, server: TeamDatabase) -> Iterator[psycopg.Connection]:
    """An owner's connection to a new migrated database."""
    db = open_team_database(blank_url, Path("/nonexistent"))
    with db.connect() as c:
        yield c


def _tables(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


# -- the database and its migrations -----------------------------------------------------------


def test_the_embedded_server_is_new_enough_and_reused(server, tmp_path):
    with server.connect() as c:
        assert pg.server_version_num(c) >= 160000
        installed, _ = pg.pgvector_versions(c)
    assert installed is not None and parse_version(installed) >= (0, 8, 4)
    again = open_team_database(None, server.embedded.pgdata.parent)  # a second start
    try:
        assert again.url == server.url and again.applied == ()
    finally:
        again.close()  # releases this hold only: the module's server keeps running
    with server.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_migrations_apply_in_order_and_are_idempotent(blank_url):
    with pg.connect(blank_url) as c:
        assert migrate(c) == [m.version for m in load_team_migrations()]
        assert migrate(c) == []
        assert sorted(applied_versions(c)) == [m.version for m in load_team_migrations()]
        assert {"orgs", "teams", "api_keys", "audit_log", "memories"} <= _tables(c)
        indexes = dict(
            c.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'"
            ).fetchall()
        )
        assert "USING hnsw (embedding vector_l2_ops)" in indexes["memories_embedding"]
        assert "(org_id, team_id, status)" in indexes["memories_team"]
        dims = c.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        ).fetchone()
        assert dims == ("vector(384)",)
        rls = dict(
            c.execute(
                "SELECT relname, relrowsecurity FROM pg_class WHERE relname = ANY(%s)",
                (["orgs", "teams", "api_keys", "audit_log", "memories"],),
            ).fetchall()
        )
        assert all(rls.values()) and len(rls) == 5


def test_a_failed_migration_leaves_nothing_and_an_edited_one_is_refused(blank_url):
    shipped = load_team_migrations()
    broken = [
        *shipped,
        Migration(len(shipped) + 1, "broken", "CREATE TABLE x (a int); SELECT 1/0;"),
    ]
    with pg.connect(blank_url) as c:
        with pytest.raises(SchemaError, match="failed and was rolled back"):
            migrate(c, broken)
        assert sorted(applied_versions(c)) == [m.version for m in shipped]
        assert "x" not in _tables(c)
        edited = [replace(shipped[0], sql=shipped[0].sql + "\n-- edited\n"), *shipped[1:]]
        with pytest.raises(SchemaError, match="differs"):
            migrate(c, edited)


def test_version_checks_refuse_old_postgresql_and_pgvector():
    assert parse_version("0.8.4") == (0, 8, 4) and parse_version("0.10.0-dev") == (0, 10, 0)
    assert parse_version("0.8.10") > parse_version("0.8.4")
    check_versions(180006, "0.8.6", "0.8.6")
    check_versions(160000, None, "0.8.4")  # not installed yet, the server offers a good one
    with pytest.raises(TeamDatabaseError, match=r"PostgreSQL 16 or newer; this server runs 15\.4"):
        check_versions(150004, "0.8.6", "0.8.6")
    with pytest.raises(TeamDatabaseError, match=r"pgvector 0\.8\.4 or newer .* has 0\.8\.3"):
        check_versions(180006, "0.8.3", "0.8.6")
    with pytest.raises(TeamDatabaseError, match=r"offers 0\.7\.4"):
        check_versions(170002, None, "0.7.4")
    with pytest.raises(TeamDatabaseError, match="does not offer it"):
        check_versions(170002, None, None)


def test_an_unreachable_database_url_is_a_clear_error(tmp_path):
    with pytest.raises(TeamDatabaseError, match="cannot use the team database"):
        open_team_database(f"postgresql://postgres@/x?host={tmp_path}", tmp_path)
