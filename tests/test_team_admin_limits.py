"""The team server's members, rate limits, database timeouts and audit pruning (issue 21, points
2 and 6), each through what users run: `reos-memory team-server` as a subprocess over real
HTTP, and `reos-memory team admin ...` as a subprocess, on one embedded PostgreSQL."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import psycopg
import pytest

from reos_memory.errors import DatabaseUnavailable
from reos_memory.interfaces.team_http.limits import RateLimiter, retry_after
from reos_memory.store.team import connection as pg
from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from reos_memory.team.team_service import TeamService
from tests.team_fixtures import ACTOR, Keys, Server, admin_cli, data_dir_of, start_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def keys(team_keys: Keys) -> Keys:
    return team_keys


@pytest.fixture(scope="module")
def server(team_server: Server) -> Server:
    return team_server


def _key(db: TeamDatabase, org: str = "org-a", **kw: Any) -> str:
    """A fresh admin key of `org` (each rate-limit test gets a bucket of its own)."""
    with db.connect() as conn:
        new, _ = admin.create_key(conn, ACTOR, org=org, role=kw.pop("role", "admin"), **kw)
    return new.key


def _audit(srv: Server, key: str, **params: Any) -> list[dict[str, Any]]:
    return srv.result(key, "team/audit/list", {"limit": 500, **params})["entries"]  # type: ignore[no-any-return]


# -- members ------------------------------------------------------------------------------------


def test_members_over_http_stay_in_their_org_and_team(server, keys):
    a, team_a, b = keys.a_admin.key, keys.a_team_admin.key, keys.b_admin.key
    ada = server.result(
        a, "team/members/add", {"name": "ada", "team": "backend", "email": "ada@example.com"}
    )
    assert ada["team_id"] == keys.backend and ada["status"] == "active"
    assert ada["member_id"].startswith("mbr_") and ada["email"] == "ada@example.com"
    org_wide = server.result(a, "team/members/add", {"name": "grace"})
    assert org_wide["team_id"] is None
    # a team admin adds into its own team by default, and cannot name another team
    tim = server.result(team_a, "team/members/add", {"name": "tim"})
    assert tim["team_id"] == keys.backend
    err = server.error(team_a, "team/members/add", {"name": "x", "team": "no-such-team"})
    assert err["code"] == -32004 and err["data"]["field"] == "$.team"

    # bad input names the field and the rule; a live name is a conflict
    assert server.error(a, "team/members/add", {"name": "  "})["data"]["field"] == "$.name"
    bad = server.error(a, "team/members/add", {"name": "z", "email": "not an email"})
    assert bad["code"] == -32602 and bad["data"]["field"] == "$.email"
    dup = server.error(a, "team/members/add", {"name": "ada"})
    assert dup["code"] == -32009
    assert server.error(a, "team/members/add", {"name": "q", "org_id": keys.org_b})["code"] == (
        -32602
    )

    # lists: org A's admin sees A's members, a team admin its team's, org B none of A's
    names = {m["name"] for m in server.result(a, "team/members/list")["members"]}
    assert {"ada", "grace", "tim"} <= names
    team_names = {m["name"] for m in server.result(team_a, "team/members/list")["members"]}
    assert team_names == {"ada", "tim"}
    assert server.result(b, "team/members/list") == {"members": []}
    # another org's member, and for a team admin an org-wide member: not found, as no member
    for key, member_id in ((b, ada["member_id"]), (team_a, org_wide["member_id"])):
        err = server.error(key, "team/members/remove", {"member_id": member_id})
        assert err["code"] == -32004 and err["data"]["field"] == "$.member_id"
    missing = server.error(a, "team/members/remove", {"member_id": "mbr_0000000000000000"})
    assert missing["code"] == -32004
    # a reader cannot manage members
    for method, params in (
        ("team/members/list", None),
        ("team/members/add", {"name": "r"}),
        ("team/members/remove", {"member_id": ada["member_id"]}),
    ):
        err = server.error(keys.a_reader.key, method, params)
        assert err["code"] == -32003 and err["data"]["role"] == "admin"
    still = {m["member_id"]: m["status"] for m in server.result(a, "team/members/list")["members"]}
    assert still[ada["member_id"]] == still[org_wide["member_id"]] == "active"

    # every write is audited, with the member's team
    rows = _audit(server, a, method="team/members/add")
    by_target = {r["target_ids"][0]: r for r in rows}
    assert by_target[ada["member_id"]]["team_id"] == keys.backend
    assert by_target[org_wide["member_id"]]["team_id"] is None
    assert by_target[tim["member_id"]]["key_id"] == keys.a_team_admin.key_id


def test_removing_a_member_revokes_its_keys_and_whoami_shows_the_member(server, keys, team_db):
    a = keys.a_admin.key
    lin = server.result(a, "team/members/add", {"name": "lin", "team": "backend"})
    k1 = _key(team_db, team="backend", member="lin", role="writer")
    k2 = _key(team_db, member=lin["member_id"], role="reader")  # an org key of a team member
    me = server.result(k1, "team/whoami")
    assert me["member"]["member_id"] == lin["member_id"] and me["member"]["name"] == "lin"
    assert server.result(a, "team/whoami")["member"] is None

    done = server.result(keys.a_team_admin.key, "team/members/remove", {"member_id": "lin"})
    assert done["removed_now"] is True and done["member"]["status"] == "removed"
    assert sorted(done["revoked_key_ids"]) == sorted(k.split("_")[1] for k in (k1, k2))
    for k in (k1, k2):
        assert server.call(k, "team/whoami")[0] == 401
    again = server.result(a, "team/members/remove", {"member_id": lin["member_id"]})
    assert again == {**done, "removed_now": False, "revoked_key_ids": []}
    (row,) = [
        r
        for r in _audit(server, a, method="team/members/remove")
        if r["target_ids"][0] == lin["member_id"]
    ]
    assert set(row["target_ids"][1:]) == set(done["revoked_key_ids"])
    assert row["team_id"] == keys.backend and row["key_id"] == keys.a_team_admin.key_id
    # the name is free again once its member is removed
    assert server.result(a, "team/members/add", {"name": "lin"})["status"] == "active"


def test_the_member_commands_of_the_admin_command_line(team_db, keys):
    d = data_dir_of(team_db)
    added = admin_cli(
        "add-member", "org-a", "mo", "--team", "backend", "--email", "mo@example.com", "--json",
        data_dir=d,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    mo = json.loads(added.stdout)
    assert mo["name"] == "mo" and mo["team_id"] == keys.backend
    plain = admin_cli("add-member", "org-b", "mo", data_dir=d)  # another org may use the name
    assert plain.returncode == 0 and "added member mo" in plain.stdout

    key = admin_cli(
        "create-key", "--org", "org-a", "--role", "writer", "--member", "mo", "--json", data_dir=d
    )
    assert key.returncode == 0, key.stderr
    key_id = json.loads(key.stdout)["key_id"]
    listed = admin_cli("list-keys", "org-a", data_dir=d)
    assert next(x for x in listed.stdout.splitlines() if x.startswith(key_id)).count(
        mo["member_id"]
    )

    members = admin_cli("list-members", "org-a", "--json", data_dir=d)
    assert members.returncode == 0
    rows = [json.loads(line) for line in members.stdout.splitlines()]
    assert {r["name"] for r in rows} >= {"mo", "ada"} and {r["org_id"] for r in rows} == {
        keys.org_a
    }
    table = admin_cli("list-members", "org-b", data_dir=d).stdout
    assert "mo" in table and "ada" not in table

    # a key for a member of another team than the key's, or for no such member: refused
    other = admin_cli("create-team", "org-a", "web", data_dir=d)
    assert other.returncode == 0
    refused = admin_cli(
        "create-key", "--org", "org-a", "--team", "web", "--role", "reader", "--member", "mo",
        data_dir=d,
    )  # fmt: skip
    assert refused.returncode == 1 and "$.member" in refused.stderr
    assert "Traceback" not in refused.stderr
    unknown = admin_cli(
        "create-key", "--org", "org-b", "--role", "reader", "--member", mo["member_id"], data_dir=d
    )
    assert unknown.returncode == 1 and "not found" in unknown.stderr

    removed = admin_cli("remove-member", "org-a", "mo", data_dir=d)
    assert removed.returncode == 0
    assert f"revoked its keys: {key_id}" in removed.stdout
    again = admin_cli("remove-member", "org-a", mo["member_id"], data_dir=d)
    assert again.returncode == 0 and "was removed at" in again.stdout
    gone = admin_cli("remove-member", "org-b", mo["member_id"], data_dir=d)
    assert gone.returncode == 1 and "not found" in gone.stderr
    after = admin_cli("list-keys", "org-a", data_dir=d).stdout
    assert "revoked" in next(x for x in after.splitlines() if x.startswith(key_id))
    with team_db.connect() as conn:
        methods = [
            r[0]
            for r in conn.execute(
                "SELECT method FROM audit_log WHERE %s = ANY(target_ids) ORDER BY id",
                (mo["member_id"],),
            )
        ]
    assert methods == [
        "team/admin/add-member", "team/admin/create-key", "team/admin/remove-member",
    ]  # fmt: skip


# -- rate limits --------------------------------------------------------------------------------


def test_the_token_bucket():
    now = [0.0]
    lim = RateLimiter(rate=2, burst=4, clock=lambda: now[0])
    assert [lim.take("k") for _ in range(4)] == [0.0] * 4
    assert lim.take("k") == pytest.approx(0.5)  # one token comes back in half a second
    assert lim.take("other") == 0.0  # each name has its own bucket
    now[0] = 0.5
    assert lim.take("k") == 0.0
    # a batch larger than the burst goes through a full bucket, then is paid for by waiting
    now[0] = 10.0
    assert lim.take("k", 10) == 0.0
    assert lim.wait("k") == pytest.approx(3.5)  # 4 - 10 = -6 tokens; 1 needed: 7 / 2 s
    assert lim.wait("k") == pytest.approx(3.5)  # wait() takes nothing
    assert retry_after(0.01) == "1" and retry_after(3.5) == "4"
    full = RateLimiter(rate=1, burst=2, clock=lambda: now[0], max_buckets=3)
    for name in "abcdef":
        full.take(name)
    assert len(full._buckets) == 3  # the table stays bounded


def _batch(n: int, method: str = "team/whoami", params: Any = None) -> bytes:
    msgs = [{"jsonrpc": "2.0", "id": i, "method": method} for i in range(n)]
    if params is not None:
        for m in msgs:
            m["params"] = params
    return json.dumps(msgs).encode()


def test_a_key_over_its_rate_gets_429_and_nothing_runs(team_db, keys, tmp_path):
    # one request a second, a burst of 2: a batch of 3 goes through a full bucket and leaves it
    # a token in debt, so the next request (had the batch counted once: 1 token left) waits
    srv = start_server(data_dir_of(team_db), "--rate-limit", "1")
    try:
        key, other = _key(team_db), _key(team_db)
        status, _, replies = srv.post_raw(_batch(3), key)
        assert status == 200 and len(replies) == 3
        # the bucket is empty: a write is refused whole, before it runs
        status, headers, body = srv.post_raw(
            _batch(1, "team/members/add", {"name": "over-the-limit"}), key
        )
        assert status == 429, body
        assert int(headers["Retry-After"]) >= 1
        assert body["error"] == "rate_limited" and body["retry_after"] >= 1
        assert "over its rate limit" in body["message"]
        assert srv.call(other, "team/whoami")[0] == 200  # another key has its own bucket
        time.sleep(int(headers["Retry-After"]))
        assert srv.call(key, "team/whoami")[0] == 200
        names = {m["name"] for m in srv.result(other, "team/members/list")["members"]}
        assert "over-the-limit" not in names
    finally:
        log = srv.stop()
    assert '"event": "rate_limited"' in log


def test_the_default_limit_is_50_a_second_and_0_turns_it_off(server, team_db):
    key = _key(team_db)
    assert server.post_raw(_batch(100), key)[0] == 200  # the burst: two seconds' worth
    status, headers, _ = server.post_raw(_batch(100), key)
    assert status == 429 and int(headers["Retry-After"]) >= 1
    free = start_server(data_dir_of(team_db), "--rate-limit", "0")
    try:
        assert [free.post_raw(_batch(100), key)[0] for _ in range(4)] == [200] * 4
    finally:
        free.stop()


def test_failed_authentications_are_limited_per_address(team_db, keys):
    srv = start_server(data_dir_of(team_db), "--rate-limit", "1")  # a burst of 2
    try:
        bad = "rmk_0123456789abcdef_" + "A" * 43
        assert [srv.call(k, "team/whoami")[0] for k in (bad, None)] == [401] * 2
        status, headers, body = srv.post_raw(_batch(1), bad)
        assert status == 429 and body["error"] == "rate_limited"
        assert int(headers["Retry-After"]) >= 1
        # the address is refused before any key is looked at, a good one too, until it waits
        assert srv.call(keys.a_admin.key, "team/whoami")[0] == 429
        time.sleep(int(headers["Retry-After"]))
        assert srv.call(keys.a_admin.key, "team/whoami")[0] == 200
    finally:
        log = srv.stop()
    assert '"event": "failed_authentications_limited"' in log


def test_a_ui_sign_in_spends_the_keys_rate(team_db, keys):
    """Signing in to the team UI is a request of the key's: an outside attack signed one key in
    10,050 times in a minute, never limited."""
    srv = start_server(data_dir_of(team_db), "--rate-limit", "1")  # a burst of 2
    try:
        key = _key(team_db)
        statuses = [srv.signin(key) for _ in range(4)]
        assert statuses[:2] == [303, 303] and 429 in statuses[2:], statuses
    finally:
        srv.stop()


def _whoami_from(srv, key: str, forwarded_for: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "team/whoami"}).encode()
    req = urllib.request.Request(f"{srv.base}/rpc", data=body, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {key}",
        "X-Forwarded-For": forwarded_for,
    })  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_a_forwarded_address_counts_only_from_a_trusted_proxy(team_db, keys):
    """uvicorn trusted 127.0.0.1's X-Forwarded-For: an outside attack's local process sent 100
    bad keys, each from a made-up address, and none was limited."""
    bad = "rmk_0123456789abcdef_" + "B" * 43
    srv = start_server(data_dir_of(team_db), "--rate-limit", "1")  # a burst of 2
    try:
        statuses = [_whoami_from(srv, bad, f"10.0.0.{i}") for i in range(6)]
        assert 429 in statuses, statuses  # one address, the TCP peer's, whatever it claims
    finally:
        srv.stop()
    proxied = start_server(
        data_dir_of(team_db), "--rate-limit", "1", "--trusted-proxy", "127.0.0.1"
    )
    try:
        statuses = [_whoami_from(proxied, bad, f"10.0.0.{i}") for i in range(6)]
        assert statuses == [401] * 6, statuses  # (behind a proxy: each client its own count)
    finally:
        proxied.stop()


# -- database timeouts ---------------------------------------------------------------------------


def test_a_locked_row_fails_fast_with_a_retryable_error(team_db, keys):
    srv = start_server(
        data_dir_of(team_db), "--lock-timeout-ms", "300", "--statement-timeout-ms", "2000",
        env={"REOS_MEMORY_EMBEDDER": "hash"},
    )  # fmt: skip
    victim = _key(team_db)
    victim_id = victim.split("_")[1]
    try:
        with team_db.connect() as holder, holder.transaction():
            holder.execute("SELECT 1 FROM api_keys WHERE key_id = %s FOR UPDATE", (victim_id,))
            # answered while the holder still holds the row: the lock timeout decided (a
            # request that waited for the holder would wait for ever)
            err = srv.error(keys.a_admin.key, "team/keys/revoke", {"key_id": victim_id})
            assert err["code"] == -32016 and err["data"]["reason"] == "database_unavailable"
            assert err["data"]["retryable"] is True and len(err["data"]["incident"]) == 12
            assert "300 ms" in err["message"] and "Traceback" not in json.dumps(err)
            # a memory write (a tenant transaction the memory service opens) is bounded too
            holder.execute("LOCK TABLE memories IN EXCLUSIVE MODE")
            add = {"project_id": "p", "kind": "note", "text": "written while locked"}
            mem_err = srv.error(keys.a_admin.key, "squirrel/memories/add", add)
            assert mem_err["code"] == -32016 and mem_err["data"]["retryable"] is True
            assert "300 ms" in mem_err["message"]  # the configured lock timeout, not the default
            # the key lookup waits on a locked table no longer than the lock timeout either
            holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
            status, headers, body = srv.post_raw(_batch(1), keys.a_admin.key)
            assert status == 503 and headers["Retry-After"] == "1"
            assert body["error"] == "unavailable" and len(body["incident"]) == 12
        # nothing was written: the key still works, and the retry succeeds
        assert srv.result(victim, "team/whoami")["key_id"] == victim_id
        done = srv.result(keys.a_admin.key, "team/keys/revoke", {"key_id": victim_id})
        assert done["revoked_now"] is True
        listed = srv.result(keys.a_admin.key, "squirrel/memories/list", {"limit": 100})
        assert "written while locked" not in json.dumps(listed)
        assert srv.result(keys.a_admin.key, "squirrel/memories/add", add)["memory"]["id"]
    finally:
        log = srv.stop()
    events = [json.loads(line) for line in log.splitlines()]
    logged = [e for e in events if e["event"] == "database_unavailable"]
    assert logged and logged[0]["incident"] == err["data"]["incident"]
    assert "LockNotAvailable" in logged[0]["error"]
    assert any(e["event"] == "authentication_failed" for e in events)


def test_statement_and_idle_timeouts_bound_every_pooled_connection(team_db, keys):
    svc = TeamService(team_db.url, timeouts=pg.Timeouts(statement_ms=150, lock_ms=100))
    try:
        with svc.pool.connection() as conn:
            settings = conn.execute(
                "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),"
                " current_setting('idle_in_transaction_session_timeout')"
            ).fetchone()
        assert settings == ("150ms", "100ms", "150ms")
        with (
            pytest.raises(DatabaseUnavailable, match="within 150 ms") as err,
            pg.retryable_failures(svc.timeouts),
            svc.pool.connection() as conn,
            pg.tenant_transaction(conn, keys.org_a, svc.timeouts),
        ):
            conn.execute("SELECT pg_sleep(2)")
        assert isinstance(err.value.__cause__, psycopg.errors.QueryCanceled)
        assert err.value.data["retryable"] is True
    finally:
        svc.close()


def test_an_unreachable_database_is_retryable_not_a_hang(team_db, keys):
    svc = TeamService(team_db.url.replace("host=", "host=/nonexistent"), pool_max=1)
    t0 = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="could not be reached"):
        svc.authenticate(keys.a_admin.key)
    assert time.monotonic() - t0 < 10
    svc.close()


# -- the audit log: team_id, pruning ---------------------------------------------------------------


def test_the_audit_log_filters_by_team(server, keys, team_db):
    a, team_a = keys.a_admin.key, keys.a_team_admin.key
    server.result(a, "team/members/add", {"name": "audited", "team": "backend"})
    backend = _audit(server, a, team_id=keys.backend)
    assert backend and {r["team_id"] for r in backend} == {keys.backend}
    assert len(backend) < len(_audit(server, a))
    # a team admin sees its own team's rows, and nothing of another team or org
    assert _audit(server, team_a) == backend
    with team_db.connect() as conn:
        b_team = admin.create_team(conn, ACTOR, "org-b", "b-team").id
    for key, team in ((team_a, b_team), (a, b_team), (keys.b_admin.key, keys.backend)):
        err = server.error(key, "team/audit/list", {"team_id": team})
        assert err["code"] == -32004 and err["data"]["field"] == "$.team_id"


def _age_audit(db: TeamDatabase, org_id: str, days: int, n: int) -> list[int]:
    """Make `n` of an org's audit rows `days` days old (as the owner); their ids."""
    with db.connect() as conn:
        rows = conn.execute(
            "UPDATE audit_log SET at = now() - make_interval(days => %s) WHERE (org_id, id) IN"
            " (SELECT org_id, id FROM audit_log WHERE org_id = %s AND method <> %s"
            " ORDER BY id LIMIT %s) RETURNING id",
            (days, org_id, "team/admin/prune-audit", n),
        ).fetchall()
    return sorted(r[0] for r in rows)


def _audit_ids(db: TeamDatabase, org_id: str) -> set[int]:
    with db.connect() as conn:
        return {r[0] for r in conn.execute("SELECT id FROM audit_log WHERE org_id = %s", (org_id,))}


def test_prune_audit_on_the_command_line(team_db, keys, server):
    old = _age_audit(team_db, keys.org_b, 400, 2)
    young = _age_audit(team_db, keys.org_a, 100, 1)
    assert len(old) == 2 and len(young) == 1
    d = data_dir_of(team_db)
    for bad in ("0", "-3", "soon"):
        run = admin_cli("prune-audit", "--older-than-days", bad, data_dir=d)
        assert run.returncode == 2 and "--older-than-days" in run.stderr
    run = admin_cli("prune-audit", "--older-than-days", "365", "--json", data_dir=d)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {
        "older_than_days": 365, "deleted": 2, "by_org": {keys.org_b: 2},
    }  # fmt: skip
    assert not set(old) & _audit_ids(team_db, keys.org_b)
    assert set(young) <= _audit_ids(team_db, keys.org_a)
    # the prune is itself audited, in the org that lost rows, and listed with its counts
    (row,) = _audit(server, keys.b_admin.key, method="team/admin/prune-audit")
    assert row["detail"] == {"deleted": 2, "older_than_days": 365}
    assert row["actor"].startswith("cli:") and row["key_id"] is None
    assert _audit(server, keys.a_admin.key, method="team/admin/prune-audit") == []
    again = admin_cli("prune-audit", "--older-than-days", "365", data_dir=d)
    assert again.stdout == "deleted 0 audit rows older than 365 days (0 orgs)\n"


def test_the_server_role_cannot_delete_audit_rows(team_db, keys):
    with team_db.connect() as conn:
        with (
            pytest.raises(psycopg.errors.InsufficientPrivilege),
            pg.tenant_transaction(conn, keys.org_a),
        ):
            conn.execute("DELETE FROM audit_log WHERE org_id = %s", (keys.org_a,))
        assert _audit_ids(team_db, keys.org_a)


def test_the_server_role_reads_the_receipt_secret_but_cannot_change_it(team_db, keys):
    """Receipts of delivered memories are signed with a secret the database made at random; the
    server's role reads it and can neither replace it nor add one (a key holder who reached SQL
    through the server could otherwise sign receipts of its own)."""
    with team_db.connect() as conn:
        with pg.tenant_transaction(conn, keys.org_a):  # as the server's role
            (secret,) = conn.execute(
                "SELECT value FROM server_secrets WHERE name = 'usage_receipts'"
            ).fetchone()
        assert len(secret) == 64 and int(secret, 16)
        for sql in (
            "UPDATE server_secrets SET value = 'x'",
            "INSERT INTO server_secrets VALUES ('y', 'z')",
            "DELETE FROM server_secrets",
        ):
            with (
                pytest.raises(psycopg.errors.InsufficientPrivilege),
                pg.tenant_transaction(conn, keys.org_a),
            ):
                conn.execute(sql)


def test_the_server_prunes_at_start_by_its_retention(team_db, keys):
    old = _age_audit(team_db, keys.org_a, 40, 2)
    kept = start_server(data_dir_of(team_db), "--audit-retention-days", "0")
    time.sleep(0.5)  # a prune at start would be done by now
    log = kept.stop()
    assert '"audit_prune' not in log and set(old) <= _audit_ids(team_db, keys.org_a)

    srv = start_server(data_dir_of(team_db), "--audit-retention-days", "30")
    try:
        deadline = time.monotonic() + 10
        while set(old) & _audit_ids(team_db, keys.org_a):
            assert time.monotonic() < deadline, "the server did not prune at start"
            time.sleep(0.05)
    finally:
        log = srv.stop()
    (pruned,) = [e for e in map(json.loads, log.splitlines()) if e["event"] == "audit_pruned"]
    assert pruned["older_than_days"] == 30 and pruned["by_org"][keys.org_a] >= 2
    assert pruned["deleted"] == sum(pruned["by_org"].values())
    with team_db.connect() as conn:
        actor = conn.execute(
            "SELECT actor FROM audit_log WHERE org_id = %s AND method = %s ORDER BY id DESC",
            (keys.org_a, "team/admin/prune-audit"),
        ).fetchone()
    assert actor is not None and actor[0].startswith("server:")


def test_the_pruner_prunes_again_on_schedule(team_db, keys):
    from reos_memory.team.retention import AuditPruner

    events: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def info(self, event: str, **kw: Any) -> None:
            events.append((event, kw))

        warning = info

    pruner = AuditPruner(team_db.connect, 30, Log(), every_s=0.2)  # hourly, made quick
    pruner.start()
    try:
        deadline = time.monotonic() + 10
        while not events:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        old = _age_audit(team_db, keys.org_b, 31, 1)  # aged after the first prune
        while set(old) & _audit_ids(team_db, keys.org_b):
            assert time.monotonic() < deadline, "no second prune"
            time.sleep(0.05)
    finally:
        pruner.stop()
    assert {e for e, _ in events} == {"audit_pruned"} and len(events) >= 2
    assert any(kw["by_org"].get(keys.org_b) == 1 for _, kw in events[1:])


def test_bodies_over_the_rate_are_not_parsed_and_deep_nesting_is_a_parse_error(team_db, keys):
    """The rate limit comes before the body is read: 300 malformed bodies from one key get 429
    beyond its burst, not 300 parse errors; a document nested 100,000 deep (and one 40 deep) is
    a JSON-RPC parse error naming the limit, never a 500; the server goes on serving."""
    srv = start_server(data_dir_of(team_db), "--rate-limit", "5")  # a burst of 10
    try:
        key = _key(team_db)
        codes = [srv.post_raw(b'{"jsonrpc": "2.0", "id": 1, "method"', key)[0] for _ in range(300)]
        parsed = sum(c == 200 for c in codes)
        assert codes.count(429) >= 250 and parsed <= 10 + 5 * 10, codes  # burst + rate x time
        time.sleep(2.5)  # the bucket refills
        for depth in (100_000, 40):
            status, _, reply = srv.post_raw(b"[" * depth + b"]" * depth, key)
            assert status == 200 and reply["error"]["code"] == -32700, reply
            assert reply["error"]["data"]["limit"] == 32
        nested_ok = {"jsonrpc": "2.0", "id": 2, "method": "team/whoami", "params": {}}
        assert srv.post(json.dumps(nested_ok).encode(), key)[1]["result"]["org_id"]
        # MCP's endpoint reads its body with the MCP library: refused too, never a 500
        deep = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": ' + b"[" * 100_000
        req = urllib.request.Request(
            f"{srv.base}/mcp",
            data=deep + b"]" * 100_000 + b"}",
            headers={
                "Authorization": f"Bearer {key}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status < 500, status
    finally:
        logged = srv.stop()
    assert "Traceback" not in logged and "RecursionError" not in logged


def test_a_client_slow_to_send_its_headers_is_cut_off(team_db):
    """A connection that sends half a request line and then waits is closed after
    --header-timeout-s; a prompt one is served."""
    srv = start_server(data_dir_of(team_db), "--header-timeout-s", "1")
    try:
        port = int(srv.base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"POST /rpc HTTP/1.1\r\nHost: x\r\n")
            t0 = time.monotonic()
            assert slow.recv(1024) == b""  # closed by the server
            assert 0.5 < time.monotonic() - t0 < 8
        with urllib.request.urlopen(f"{srv.base}/health", timeout=5) as resp:
            assert resp.status == 200
    finally:
        srv.stop()


def test_one_address_holds_a_bounded_number_of_connections(team_db):
    """A flood of connections from one address (an outside attack opened 20,400 and the server
    ran out of files) is bounded per address: one over --max-connections-per-address is closed
    at once, logged once; closing one lets the next in. A trusted proxy's are not counted (a
    network given as --trusted-proxy too); an IPv6 client is counted by its /64."""
    from reos_memory.interfaces.team_http.server import _client_of

    assert _client_of("2001:db8::1") == _client_of("2001:db8::ffff:2") == "2001:db8::/64"
    srv = start_server(data_dir_of(team_db), "--max-connections-per-address", "3")
    try:
        port = int(srv.base.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        time.sleep(0.3)  # (accepted by the server)
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                try:
                    extra.sendall(
                        f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
                    )
                    got = extra.recv(1024)
                except (ConnectionResetError, BrokenPipeError):
                    got = b""
                assert got == b""  # closed at once, no reply
        held.pop().close()
        time.sleep(0.3)
        with urllib.request.urlopen(f"{srv.base}/health", timeout=5) as resp:
            assert resp.status == 200
        for s in held:
            s.close()
    finally:
        logged = srv.stop()
    refusals = [
        e for e in map(json.loads, logged.splitlines()) if e["event"] == "too_many_connections"
    ]
    assert len(refusals) == 1 and refusals[0]["limit"] == 3, logged

    proxied = start_server(
        data_dir_of(team_db), "--max-connections-per-address", "1", "--trusted-proxy", "127.0.0.0/8"
    )
    try:
        port = int(proxied.base.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        with urllib.request.urlopen(f"{proxied.base}/health", timeout=5) as resp:
            assert resp.status == 200
        for s in held:
            s.close()
    finally:
        proxied.stop()


def test_a_client_slow_to_send_its_body_is_cut_off_and_nothing_is_logged_as_a_crash(team_db, keys):
    """A request whose headers came but whose body trickles (an outside attack held 20,000
    sockets that way, no key needed, until the server ran out of files) is closed
    --header-timeout-s after its headers; so is a second request's half header on a connection
    kept alive; a client that hangs up mid-body is one line in the log, not a traceback."""
    srv = start_server(data_dir_of(team_db), "--header-timeout-s", "1")
    try:
        port = int(srv.base.rsplit(":", 1)[1])
        host = f"127.0.0.1:{port}"
        for path, auth in (
            ("/signin", ""),
            ("/rpc", f"Authorization: Bearer {keys.a_admin.key}\r\n"),
        ):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
                slow.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {srv.base}\r\n{auth}"
                    "Content-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: 100\r\n\r\nkey=rmk_".encode()
                )
                t0 = time.monotonic()
                assert slow.recv(1024) == b""  # closed by the server
                assert 0.5 < time.monotonic() - t0 < 8
        with socket.create_connection(("127.0.0.1", port), timeout=10) as kept:
            kept.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert kept.recv(1024).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /health HTTP/1.1\r\nHo")
            t0 = time.monotonic()
            while kept.recv(1024):
                pass
            assert time.monotonic() - t0 < 8
        with socket.create_connection(("127.0.0.1", port), timeout=10) as gone:
            gone.sendall(
                f"POST /signin HTTP/1.1\r\nHost: {host}\r\nOrigin: {srv.base}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 100\r\n\r\nkey=".encode()
            )
        time.sleep(0.5)
        with urllib.request.urlopen(f"{srv.base}/health", timeout=5) as resp:
            assert resp.status == 200
    finally:
        logged = srv.stop()
    assert "Traceback" not in logged, logged[-3000:]


def test_a_nul_character_is_refused_naming_the_field_not_an_internal_error(team_db, keys):
    """PostgreSQL's text keeps no NUL: an outside attack's NUL in a memory's id, a task or a
    text answered -32603 and logged a traceback, and the UI answered a bare 500."""
    srv = start_server(data_dir_of(team_db))
    try:
        key = keys.a_admin.key
        for method, params, field in (
            ("squirrel/memories/get", {"memory_id": "tmem-\x00"}, "$.memory_id"),
            ("squirrel/get_task_context", {"project_id": "p", "task": "a\x00b"}, "$.task"),
            (
                "squirrel/memories/add",
                {"project_id": "p", "kind": "note", "text": "x\x00y"},
                "$.text",
            ),
            ("squirrel/memories/list", {"project_id": "p", "key_prefix": "a\x00"}, "$.key_prefix"),
        ):
            err = srv.error(key, method, params)
            assert err["code"] == -32602 and err["data"]["field"] == field, (method, err)
        cookie = srv_cookie(srv, key)
        for path in ("/memories?q=%00", "/memories/tmem-%00"):
            req = urllib.request.Request(f"{srv.base}{path}", headers={"Cookie": cookie})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    status = resp.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            assert status == 400, (path, status)
    finally:
        logged = srv.stop()
    assert "Traceback" not in logged and "internal_error" not in logged, logged[-3000:]


def srv_cookie(srv, key: str) -> str:
    """The session cookie of a team-UI sign-in with `key`."""
    status, headers = srv.signin_reply(key)
    assert status == 303, status
    return headers["Set-Cookie"].split(";")[0]


def test_the_audit_sampler_admits_a_few_a_minute_and_counts_the_rest():
    from reos_memory.team.team_service import Sampler

    now = [0.0]
    s = Sampler(3, 60.0, clock=lambda: now[0])
    assert [s.admit("x") for _ in range(5)] == [0, 0, 0, None, None]
    assert s.admit("y") == 0  # each name its own count
    now[0] = 61.0
    assert s.admit("x") == 2  # the next row says two were left out
    assert s.admit("x") == 0


def test_a_loop_failing_the_same_way_logs_once_a_minute():
    """asyncio logs accept() out of file descriptors, with its traceback, at every try: an
    outside attack's connection flood grew the log by 59 MB in 28 s. One line a message a
    minute passes."""
    import logging

    from reos_memory.logs import OncePer

    now = [0.0]
    once = OncePer(60.0, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, None, None)

    passed = [once.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert passed.count(True) == 1
    assert once.filter(record("another failure"))
    now[0] = 61.0
    assert once.filter(record("socket.accept() out of system resource"))
