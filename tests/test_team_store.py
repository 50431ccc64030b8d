"""The team server's database (issue 21, foundation): migrations, tenancy (composite keys and
row-level security), API keys and the admin command line, on one real embedded PostgreSQL with
pgvector started for this module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from reos_memory.errors import Conflict, InvalidInput, NotFound, SchemaError
from reos_memory.store.migrations import Migration
from reos_memory.store.team import connection as pg
from reos_memory.store.team.migrations import applied_versions, load_team_migrations, migrate
from reos_memory.team import admin, keys
from reos_memory.team.cluster import place_for
from reos_memory.team.database import (
    TeamDatabase,
    TeamDatabaseError,
    check_versions,
    open_team_database,
    parse_version,
)
from tests.team_fixtures import admin_cli

ROOT = Path(__file__).resolve().parents[1]
ACTOR = admin.Actor(name="cli:test", request_id="req-1")


@pytest.fixture(scope="module")
def server(team_db: TeamDatabase) -> TeamDatabase:
    """One embedded PostgreSQL for the module (conftest.py), stopped at its end."""
    return team_db


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
    again = open_team_database(None, server.embedded.data_dir)  # a second start
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


def test_migrating_at_once_from_two_connections_applies_each_migration_once(blank_url):
    from concurrent.futures import ThreadPoolExecutor

    def run() -> list[int]:
        with pg.connect(blank_url) as c:
            return migrate(c)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run(), range(2)))
    # each migration is its own transaction under the lock: the two may share the work, but
    # no migration is applied twice or skipped
    assert sorted(results[0] + results[1]) == [m.version for m in load_team_migrations()]


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


# -- tenancy -----------------------------------------------------------------------------------


def _memory(conn, org_id, mem_id, team_id=None, text="use httpx"):
    conn.execute(
        "INSERT INTO memories (org_id, team_id, id, scope, owner_type, kind, tier, text, status,"
        " embedding) VALUES (%s, %s, %s, 'global', %s, 'preference', 'long_term', %s, 'active',"
        " %s::vector)",
        (org_id, team_id, mem_id, "team" if team_id else "org", text, str([0.0] * 383 + [1.0])),
    )


def test_a_composite_foreign_key_refuses_a_team_of_another_org(conn):
    a = admin.create_org(conn, ACTOR, "org-a")
    b = admin.create_org(conn, ACTOR, "org-b")
    team_b = admin.create_team(conn, ACTOR, "org-b", "backend")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        _memory(conn, a.id, "m1", team_id=team_b.id)
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "INSERT INTO api_keys (org_id, key_id, team_id, role, hash, prefix)"
            " VALUES (%s, 'k1', %s, 'reader', 'h', 'rmk_k1')",
            (a.id, team_b.id),
        )
    _memory(conn, b.id, "m1", team_id=team_b.id)  # the same team in its own org is fine
    # and the admin commands never cross either: org-a has no team "backend"
    with pytest.raises(NotFound, match="team of org 'org-a'"):
        admin.create_key(conn, ACTOR, org="org-a", team="backend", role="reader")


def test_row_level_security_shows_a_tenant_only_its_own_org(conn):
    a = admin.create_org(conn, ACTOR, "org-a")
    b = admin.create_org(conn, ACTOR, "org-b")
    ta = admin.create_team(conn, ACTOR, "org-a", "web")
    admin.create_team(conn, ACTOR, "org-b", "web")
    _memory(conn, a.id, "a1", team_id=ta.id)
    _memory(conn, a.id, "a2")
    _memory(conn, b.id, "b1", text="org b's secret")
    admin.create_key(conn, ACTOR, org="org-b", role="admin")
    role = conn.execute(
        "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", (pg.SERVER_ROLE,)
    ).fetchone()
    assert role == (False, False)

    with pg.tenant_transaction(conn, a.id):
        assert conn.execute("SELECT current_user").fetchone() == (pg.SERVER_ROLE,)
        seen = {r[0] for r in conn.execute("SELECT id FROM memories").fetchall()}
        assert seen == {"a1", "a2"}
        # even asked by org or by id, org B's rows do not exist for this transaction
        assert conn.execute(
            "SELECT count(*) FROM memories WHERE org_id = %s", (b.id,)
        ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memories WHERE id = 'b1'").fetchone() == (0,)
        assert {r[0] for r in conn.execute("SELECT org_id FROM teams").fetchall()} == {a.id}
        assert conn.execute("SELECT count(*) FROM api_keys").fetchone() == (0,)
        assert {r[0] for r in conn.execute("SELECT id FROM orgs").fetchall()} == {a.id}
        assert conn.execute(
            "SELECT count(*) FROM audit_log WHERE org_id <> %s", (a.id,)
        ).fetchone() == (0,)
        # nearest-neighbour search goes through the same policy
        near = conn.execute(
            "SELECT id FROM memories ORDER BY embedding <-> %s::vector LIMIT 10",
            (str([0.0] * 383 + [1.0]),),
        ).fetchall()
        assert {r[0] for r in near} == {"a1", "a2"}
        assert conn.execute("UPDATE memories SET text = 'x' WHERE id = 'b1'").rowcount == 0
        assert conn.execute("DELETE FROM memories WHERE org_id = %s", (b.id,)).rowcount == 0

    with pytest.raises(psycopg.errors.InsufficientPrivilege), pg.tenant_transaction(conn, a.id):
        _memory(conn, b.id, "b2")  # writing into another org: refused by WITH CHECK

    with pg.tenant_transaction(conn, ""):  # no tenant set: nothing at all
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    # the setting was local to each transaction: the owner's connection is itself again
    assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
    assert conn.execute("SELECT current_setting('reos.org_id', true)").fetchone() in {
        (None,),
        ("",),
    }
    assert conn.execute("SELECT text FROM memories WHERE id = 'b1'").fetchone() == (
        "org b's secret",
    )


# -- API keys ----------------------------------------------------------------------------------


def test_a_key_is_stored_hashed_and_verifies_to_its_org_and_team(conn):
    org = admin.create_org(conn, ACTOR, "acme")
    team = admin.create_team(conn, ACTOR, "acme", "backend")
    new, info = admin.create_key(conn, ACTOR, org="acme", team="backend", role="writer", name="ci")
    assert new.key.startswith(f"rmk_{new.key_id}_") and len(new.key) == 4 + 16 + 1 + 43
    assert info.status == "active" and info.prefix == f"rmk_{new.key_id}"
    stored = conn.execute("SELECT hash, prefix FROM api_keys WHERE key_id = %s", (new.key_id,))
    hash_, prefix = stored.fetchone()
    secret = new.key.split("_", 2)[2]
    assert secret not in hash_ and secret not in prefix and new.key not in hash_
    got = keys.verify_key(conn, new.key)
    assert got == keys.VerifiedKey(
        key_id=new.key_id, org_id=org.id, team_id=team.id, role="writer", name="ci"
    )


def test_revoked_expired_tampered_and_unknown_keys_are_refused(conn):
    admin.create_org(conn, ACTOR, "acme")
    new, _ = admin.create_key(conn, ACTOR, org="acme", role="admin", expires_days=1)
    now = datetime.now(UTC)
    assert keys.verify_key(conn, new.key, now).role == "admin"
    with pytest.raises(keys.KeyRefused) as err:
        keys.verify_key(conn, new.key, now + timedelta(days=1, seconds=1))
    assert err.value.why == "expired"

    secret = new.key.split("_", 2)[2]
    flipped = new.key[:-1] + ("A" if new.key[-1] != "A" else "B")
    other_id = f"rmk_{'0' * 16}_{secret}"
    for tampered, why in [
        (flipped, "mismatch"),
        (other_id, "unknown"),
        (new.key[:-1], "malformed"),
        ("Bearer " + new.key, "malformed"),
        ("", "malformed"),
    ]:
        with pytest.raises(keys.KeyRefused) as err:
            keys.verify_key(conn, tampered)
        assert err.value.why == why, tampered

    info, now_revoked = admin.revoke_key(conn, ACTOR, new.key_id)
    assert now_revoked and info.status == "revoked"
    with pytest.raises(keys.KeyRefused) as err:
        keys.verify_key(conn, new.key)
    assert err.value.why == "revoked"
    _, again = admin.revoke_key(conn, ACTOR, f"rmk_{new.key_id}")
    assert not again  # already revoked: nothing written


def test_the_server_role_reads_only_the_key_it_presents(conn):
    admin.create_org(conn, ACTOR, "acme")
    mine, _ = admin.create_key(conn, ACTOR, org="acme", role="reader")
    other, _ = admin.create_key(conn, ACTOR, org="acme", role="admin")
    with pg.key_lookup_transaction(conn, mine.key_id):
        rows = conn.execute("SELECT key_id FROM api_keys").fetchall()
    assert rows == [(mine.key_id,)]
    assert other.key_id not in {r[0] for r in rows}


def test_admin_actions_refuse_bad_input_and_write_one_audit_row_each(conn):
    org = admin.create_org(conn, ACTOR, "acme")
    with pytest.raises(Conflict):
        admin.create_org(conn, ACTOR, "acme")
    admin.create_team(conn, ACTOR, "acme", "web")
    with pytest.raises(Conflict):
        admin.create_team(conn, ACTOR, org.id, "web")  # by id too
    with pytest.raises(NotFound):
        admin.create_team(conn, ACTOR, "nope", "web")
    with pytest.raises(InvalidInput, match="role"):
        admin.create_key(conn, ACTOR, org="acme", role="owner")
    with pytest.raises(InvalidInput, match="expires_days"):
        admin.create_key(conn, ACTOR, org="acme", role="reader", expires_days=0)
    with pytest.raises(InvalidInput):
        admin.create_org(conn, ACTOR, "  ")
    new, _ = admin.create_key(conn, ACTOR, org="acme", role="reader")
    admin.revoke_key(conn, ACTOR, new.key_id)
    rows = conn.execute(
        "SELECT method, target_ids, actor, request_id FROM audit_log ORDER BY id"
    ).fetchall()
    assert [r[0] for r in rows] == [
        "team/admin/create-org",
        "team/admin/create-team",
        "team/admin/create-key",
        "team/admin/revoke-key",
    ]
    assert rows[2][1] == [new.key_id] and {r[2:] for r in rows} == {("cli:test", "req-1")}


# -- the admin command line --------------------------------------------------------------------


@pytest.mark.e2e
def test_the_admin_command_line_end_to_end(server):
    data_dir = server.embedded.data_dir  # the module's running server, reused
    run = admin_cli("create-org", "acme", data_dir=data_dir)
    assert run.returncode == 0 and "created org acme" in run.stdout, run.stderr
    assert "Traceback" not in run.stderr
    assert admin_cli("create-team", "acme", "backend", data_dir=data_dir).returncode == 0

    made = admin_cli(
        "create-key", "--org", "acme", "--team", "backend", "--role", "writer",
        "--name", "laptop", "--expires-days", "30", "--json", data_dir=data_dir,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert len(lines) == 1
    key = json.loads(lines[0])
    assert set(key) == {"key_id", "key"} and key["key"].startswith(f"rmk_{key['key_id']}_")
    plain = admin_cli("create-key", "--org", "acme", "--role", "reader", data_dir=data_dir)
    assert plain.returncode == 0 and plain.stdout.startswith("rmk_")
    assert "only time it is shown" in plain.stderr

    listed = admin_cli("list-keys", "acme", data_dir=data_dir)
    assert listed.returncode == 0
    assert key["key_id"] in listed.stdout and "laptop" in listed.stdout
    assert key["key"].split("_", 2)[2] not in listed.stdout
    assert plain.stdout.strip().split("_", 2)[2] not in listed.stdout

    revoked = admin_cli("revoke-key", key["key_id"], data_dir=data_dir)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    listed = admin_cli("list-keys", "acme", data_dir=data_dir)
    row = next(line for line in listed.stdout.splitlines() if line.startswith(key["key_id"]))
    assert "revoked" in row

    with server.connect() as c:
        with pytest.raises(keys.KeyRefused):
            keys.verify_key(c, key["key"])
        assert keys.verify_key(c, plain.stdout.strip()).role == "reader"
        org = c.execute("SELECT id FROM orgs WHERE name = 'acme'").fetchone()
        methods = [
            r[0]
            for r in c.execute(
                "SELECT method FROM audit_log WHERE org_id = %s ORDER BY id", org
            ).fetchall()
        ]
    assert methods == [
        "team/admin/create-org",
        "team/admin/create-team",
        "team/admin/create-key",
        "team/admin/create-key",
        "team/admin/revoke-key",
    ]
    # the CLI left the module's server running (it only reused it)
    with server.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["create-org", "dup"], 1, "an org named 'dup' exists"),
        (["create-team", "nope", "web"], 1, "org 'nope' not found"),
        (["create-team", "dup", "web"], 1, "has a team named 'web'"),
        (["create-key", "--org", "dup", "--role", "owner"], 2, "invalid choice: 'owner'"),
        (["create-key", "--org", "dup", "--team", "x", "--role", "reader"], 1, "not found"),
        (["revoke-key", "0123456789abcdef"], 1, "API key '0123456789abcdef' not found"),
        (["list-keys", "nope"], 1, "org 'nope' not found"),
    ],
)
def test_admin_errors_are_one_clear_line(server, blank_url, args, code, said):
    assert admin_cli("create-org", "dup", url=blank_url).returncode == 0
    assert admin_cli("create-team", "dup", "web", url=blank_url).returncode == 0
    run = admin_cli(*args, url=blank_url)
    assert run.returncode == code
    assert said in run.stderr and "Traceback" not in run.stderr


@pytest.mark.e2e
def test_an_old_or_missing_database_is_refused_by_the_command_line(tmp_path):
    run = admin_cli("list-keys", "acme", url=f"postgresql://postgres@/x?host={tmp_path}")
    assert run.returncode == 1
    assert "cannot use the team database" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.e2e
def test_the_default_data_dir_is_team_db_in_the_home_and_left_stopped(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REOS_MEMORY_HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "reos_memory", "team", "admin", "create-org", "solo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # nothing from the embedded server's start (no warnings either)
    # (pytest's folders are 0700: run as root, the cluster is kept where its OS user can reach)
    pgdata = place_for(tmp_path / "team-db").pgdata
    try:
        assert (pgdata / "PG_VERSION").is_file()
        assert pgdata == tmp_path / "team-db" / "pgdata" or os.geteuid() == 0
        # the command started this server itself, so it stopped it on the way out
        assert not (pgdata / "postmaster.pid").exists()
    finally:
        if pgdata.parent != tmp_path / "team-db":
            shutil.rmtree(pgdata.parent)
