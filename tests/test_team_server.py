"""The team server over HTTP (issue 21): `reos-memory team-server` as a real subprocess on one
embedded PostgreSQL started for this module; /health, bearer keys, the team/* methods, tenancy
across orgs, limits, and a clean stop on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import signal
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from reos_memory.interfaces.team_http.registry import registry
from reos_memory.store.team import connection as pg
from reos_memory.team.database import TeamDatabase
from tests.team_fixtures import Keys, Server
from tests.team_fixtures import start_server as _start

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def db(team_db: TeamDatabase) -> TeamDatabase:
    return team_db


@pytest.fixture(scope="module")
def keys(team_keys: Keys) -> Keys:
    return team_keys


@pytest.fixture(scope="module")
def server(team_server: Server) -> Server:
    return team_server


def test_health_says_the_database_is_ok(server):
    with urllib.request.urlopen(f"{server.base}/health", timeout=5) as resp:
        assert resp.status == 200
        assert json.loads(resp.read()) == {"status": "ok", "database": "ok"}


def test_requests_without_a_live_key_get_401_and_nothing_runs(server, keys):
    malformed = "rmk_nothing"
    unknown = "rmk_0123456789abcdef_" + "A" * 43
    tampered = keys.a_admin.key[:-1] + ("A" if keys.a_admin.key[-1] != "A" else "B")
    for key in (None, "", malformed, unknown, tampered, keys.a_revoked.key, keys.a_expired.key):
        status, reply = server.call(key, "team/keys/revoke", {"key_id": keys.b_other.key_id})
        assert status == 401, (key, reply)
        assert reply["error"] == "unauthorized" and "result" not in reply
    # a bare 'Basic' scheme is not a bearer key either
    req = urllib.request.Request(
        f"{server.base}/rpc", data=b"{}", headers={"Authorization": f"Basic {keys.a_admin.key}"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 401
    status = server.result(keys.b_admin.key, "team/keys/list")
    assert all(k["status"] == "active" for k in status["keys"]), "nothing was revoked"


def test_whoami_answers_from_the_key(server, keys):
    me = server.result(keys.a_admin.key, "team/whoami")
    assert me == {
        "org_id": keys.org_a, "team_id": None, "role": "admin",
        "key_id": keys.a_admin.key_id, "name": "", "member": None,
    }  # fmt: skip
    reader = server.result(keys.a_reader.key, "team/whoami")
    assert reader["org_id"] == keys.org_a and reader["role"] == "reader"
    assert reader["team_id"] is not None
    # the tenant comes from the key, never from the body: params are refused, not obeyed
    err = server.error(keys.b_admin.key, "team/whoami", {"org_id": keys.org_a})
    assert err["code"] == -32602 and err["data"]["field"] == "$.org_id"


def test_a_reader_calling_an_admin_method_gets_forbidden_naming_the_role(server, keys):
    for method, params in (
        ("team/keys/list", None),
        ("team/audit/list", None),
        ("team/keys/revoke", {"key_id": keys.a_admin.key_id}),
    ):
        err = server.error(keys.a_reader.key, method, params)
        assert err["code"] == -32003, err
        assert err["data"]["reason"] == "forbidden" and err["data"]["role"] == "admin"
        assert "admin" in err["message"]
    assert server.result(keys.a_admin.key, "team/whoami")["key_id"] == keys.a_admin.key_id


def test_an_admin_sees_and_revokes_only_its_own_orgs_keys(server, keys):
    listed = server.result(keys.a_admin.key, "team/keys/list")["keys"]
    assert {k["org_id"] for k in listed} == {keys.org_a}
    assert keys.b_admin.key_id not in {k["key_id"] for k in listed}
    assert not any("hash" in k or "key" in k for k in listed)
    assert {k["key_id"]: k["status"] for k in listed}[keys.a_revoked.key_id] == "revoked"
    # another org's key: not found, exactly as a key id that does not exist
    other = server.error(keys.a_admin.key, "team/keys/revoke", {"key_id": keys.b_other.key_id})
    missing = server.error(keys.a_admin.key, "team/keys/revoke", {"key_id": "f" * 16})
    assert other["code"] == missing["code"] == -32004
    assert other["data"]["reason"] == "not_found"
    assert server.result(keys.b_other.key, "team/whoami")["org_id"] == keys.org_b

    # revoking one of its own keys works, is audited, and the key is refused from then on
    done = server.result(keys.a_admin.key, "team/keys/revoke", {"key_id": keys.a_reader.prefix})
    assert done["revoked_now"] is True and done["key"]["status"] == "revoked"
    again = server.result(keys.a_admin.key, "team/keys/revoke", {"key_id": keys.a_reader.key_id})
    assert again["revoked_now"] is False
    assert server.call(keys.a_reader.key, "team/whoami")[0] == 401

    page = server.result(keys.a_admin.key, "team/audit/list", {"method": "team/keys/revoke"})
    (row,) = page["entries"]
    assert row["key_id"] == keys.a_admin.key_id and row["target_ids"] == [keys.a_reader.key_id]
    assert row["actor"] == f"key:{keys.a_admin.key_id}" and len(row["request_id"]) == 32

    # the audit log of org A holds A's rows only; B sees none of A's
    a_rows = server.result(keys.a_admin.key, "team/audit/list", {"limit": 500})["entries"]
    b_rows = server.result(keys.b_admin.key, "team/audit/list", {"limit": 500})["entries"]
    a_targets = {t for r in a_rows for t in r["target_ids"]}
    b_targets = {t for r in b_rows for t in r["target_ids"]}
    assert keys.a_reader.key_id in a_targets and keys.b_admin.key_id not in a_targets
    assert keys.a_reader.key_id not in b_targets and keys.b_admin.key_id in b_targets
    assert not any(r["method"] == "team/keys/revoke" for r in b_rows)


def test_a_team_admin_reaches_only_its_teams_keys(server, keys):
    listed = server.result(keys.a_team_admin.key, "team/keys/list")["keys"]
    assert {k["key_id"] for k in listed} == {keys.a_reader.key_id, keys.a_team_admin.key_id}
    err = server.error(keys.a_team_admin.key, "team/keys/revoke", {"key_id": keys.a_admin.key_id})
    assert err["code"] == -32004
    assert server.result(keys.a_admin.key, "team/whoami")["role"] == "admin"


def test_a_key_never_outlives_the_key_that_made_it(server, keys, team_db):
    """An admin key that expires tomorrow makes a key asked to live forever: it expires with its
    maker, and so does what that one makes; revoking the maker `with_minted` revokes them all
    (each in the audit log), and a plain revoke leaves them."""
    from datetime import datetime

    from reos_memory.team import admin
    from tests.team_fixtures import ACTOR

    with team_db.connect() as conn:
        short, short_info = admin.create_key(conn, ACTOR, org="org-a", role="admin", expires_days=1)
    maker_expiry = short_info.expires_at
    child = server.result(short.key, "team/keys/create", {"role": "admin", "name": "forever"})
    assert child["info"]["made_by"] == short.key_id
    assert datetime.fromisoformat(child["info"]["expires_at"]) == maker_expiry
    shorter = server.result(
        child["key"], "team/keys/create", {"role": "reader", "expires_days": 0.5}
    )
    assert datetime.fromisoformat(shorter["info"]["expires_at"]) < maker_expiry  # (asked: sooner)
    grandchild = server.result(child["key"], "team/keys/create", {"role": "writer"})
    assert datetime.fromisoformat(grandchild["info"]["expires_at"]) == maker_expiry

    plain = server.result(keys.a_admin.key, "team/keys/revoke", {"key_id": shorter["key_id"]})
    assert plain["revoked_now"] and plain["also_revoked"] == []
    done = server.result(
        keys.a_admin.key, "team/keys/revoke", {"key_id": short.key_id, "with_minted": True}
    )
    assert done["revoked_now"]
    assert sorted(done["also_revoked"]) == sorted([child["key_id"], grandchild["key_id"]])
    for k in (short.key, child["key"], grandchild["key"]):
        assert server.call(k, "team/whoami")[0] == 401
    page = server.result(keys.a_admin.key, "team/audit/list", {"method": "team/keys/revoke"})
    revoked = {t for e in page["entries"] for t in e["target_ids"]}
    assert {short.key_id, child["key_id"], grandchild["key_id"]} <= revoked


def test_turned_away_attempts_reach_the_orgs_audit_log_sampled(server, keys, team_db):
    """A forbidden call and a revoked key's call are audit rows of the key's org (not only
    lines of the server log); a flood of them writes a few rows, the next saying how many
    were left out."""
    from reos_memory.team import admin
    from tests.team_fixtures import ACTOR

    with team_db.connect() as conn:
        reader, _ = admin.create_key(conn, ACTOR, org="org-a", role="reader")
        gone, _ = admin.create_key(conn, ACTOR, org="org-a", role="writer")
        admin.revoke_key(conn, ACTOR, gone.key_id)
    for _ in range(25):
        assert server.error(reader.key, "team/keys/list")["code"] == -32003
    assert server.call(gone.key, "team/whoami")[0] == 401
    rows = server.result(keys.a_admin.key, "team/audit/list", {"method": "team/refused"})
    mine = [r for r in rows["entries"] if r["key_id"] == reader.key_id]
    assert 1 <= len(mine) <= 10, len(mine)  # sampled: at most 10 a minute
    assert (
        mine[0]["detail"]["why"] == "forbidden" and mine[0]["detail"]["called"] == "team/keys/list"
    )
    revoked = [r for r in rows["entries"] if r["key_id"] == gone.key_id]
    assert revoked and revoked[0]["detail"]["why"] == "key revoked"
    # another org sees none of it
    theirs = server.result(keys.b_admin.key, "team/audit/list", {"method": "team/refused"})
    assert not {r["key_id"] for r in theirs["entries"]} & {reader.key_id, gone.key_id}


def test_the_audit_log_pages_newest_first(server, keys):
    everything = server.result(keys.a_admin.key, "team/audit/list", {"limit": 500})["entries"]
    seen: list[int] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = server.result(keys.a_admin.key, "team/audit/list", params)
        seen += [r["id"] for r in page["entries"]]
        if page["next_before_id"] is None:
            break
        params["before_id"] = page["next_before_id"]
    assert seen == [r["id"] for r in everything] == sorted(seen, reverse=True)
    future = server.result(keys.a_admin.key, "team/audit/list", {"since": "2999-01-01T00:00:00Z"})
    assert future == {"entries": [], "next_before_id": None}


def test_a_batch_answers_each_request_in_order(server, keys):
    batch = [
        {"jsonrpc": "2.0", "id": "w", "method": "team/whoami"},
        {"jsonrpc": "2.0", "method": "team/whoami"},  # a notification: no reply
        {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 3, "method": "team/audit/list", "params": {"limit": 0}},
        {"jsonrpc": "2.0", "id": 4, "method": "rpc.discover"},
        "not a request",
    ]
    status, replies = server.post(json.dumps(batch).encode(), keys.b_admin.key)
    assert status == 200
    assert [r["id"] for r in replies] == ["w", 2, 3, 4, None]
    assert replies[0]["result"]["org_id"] == keys.org_b
    assert replies[1]["error"]["code"] == -32601
    assert replies[2]["error"]["code"] == -32602
    assert replies[2]["error"]["data"]["field"] == "$.limit"
    assert replies[3]["result"] == json.loads(
        (ROOT / "rpc_schema" / "team-openrpc.json").read_text()
    )
    names = {m["name"] for m in replies[3]["result"]["methods"]}
    assert names == set(registry.methods)  # every registered method is described
    assert {"rpc.discover", "team/whoami", "squirrel/memories/add"} <= names
    assert replies[4]["error"]["code"] == -32600
    assert server.post(b"{not json", keys.b_admin.key)[1]["error"]["code"] == -32700
    too_many = [{"jsonrpc": "2.0", "id": i, "method": "team/whoami"} for i in range(101)]
    status, reply = server.post(json.dumps(too_many).encode(), keys.b_admin.key)
    assert reply["error"]["code"] == -32600
    assert reply["error"]["data"]["reason"] == "payload_too_large"


def test_a_bad_request_is_answered_as_the_stdio_server_answers_it(server, keys, tmp_path):
    """One dispatch for both transports: the same broken envelopes, unknown method and bad
    params get the same code, reason and field from /rpc as from the local service."""
    from harness.rpc_client import Server as StdioServer

    batch = [
        {"jsonrpc": "1.0", "id": 1, "method": "squirrel/memories/get"},
        {"jsonrpc": "2.0", "id": True, "method": "squirrel/memories/get"},
        {"jsonrpc": "2.0", "id": 3, "method": 5},
        {"jsonrpc": "2.0", "id": 4, "method": "squirrel/memories/get", "params": 5},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such"},
        {"jsonrpc": "2.0", "id": 6, "method": "squirrel/memories/get", "params": {"memory_id": 5}},
        7,
        {"jsonrpc": "2.0", "method": "no/such"},  # a notification: no reply on either
    ]

    def shape(replies: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted(
            (
                str(r["id"]),
                r["error"]["code"],
                r["error"]["data"].get("reason"),
                str(r["error"]["data"].get("field")),
            )
            for r in replies
        )

    with StdioServer(tmp_path / "local.db") as local:
        mine = local.batch(batch)
    status, theirs = server.post(json.dumps(batch).encode(), keys.a_admin.key)
    assert status == 200
    assert len(mine) == 7 and shape(theirs) == shape(mine)
    for empty in ([], [{}] * 101):
        _, reply = server.post(json.dumps(empty).encode(), keys.a_admin.key)
        assert reply["error"]["code"] == -32600, reply


def test_an_oversized_body_gets_413(server, keys):
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "team/whoami", "params": {"x": "'
    body += b"a" * (1 << 20) + b'"}}'
    # the server answers 413 from the declared length and may close before the client has
    # sent everything: send what it takes, then read the answer
    import http.client

    conn = http.client.HTTPConnection(server.base.removeprefix("http://"), timeout=10)
    conn.putrequest("POST", "/rpc")
    conn.putheader("Authorization", f"Bearer {keys.b_admin.key}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.send(body)
    resp = conn.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["error"] == "payload_too_large"
    conn.close()


def test_health_is_503_when_the_database_is_gone(db, tmp_path):
    name = f"t_{uuid.uuid4().hex[:12]}"
    with db.connect() as conn:
        pg.ensure_database(conn, name)
    srv = _start(tmp_path / "unused", "--database-url", db.url.replace("/reos_team?", f"/{name}?"))
    try:
        with db.connect() as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{srv.base}/health", timeout=10)
        assert err.value.code == 503
        assert json.loads(err.value.read()) == {"status": "unavailable", "database": "unreachable"}
        # a key cannot be checked: 503 (retryable), never a 401 or a traceback
        status, reply = srv.call("rmk_0123456789abcdef_" + "A" * 43, "team/whoami")
        assert status == 503 and reply["error"] == "unavailable" and len(reply["incident"]) == 12
    finally:
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.communicate(timeout=15)
        err_text = srv.logged()
    assert srv.proc.returncode == 0
    assert b'"event": "authentication_failed"' in err_text
    assert not (tmp_path / "unused").exists(), "a --database-url server starts no embedded one"


def test_sigterm_stops_the_server_cleanly(server):
    server.proc.send_signal(signal.SIGTERM)
    out, _ = server.proc.communicate(timeout=15)
    err = server.logged()
    assert server.proc.returncode == 0, err.decode()
    assert out == b""
    events = [json.loads(line)["event"] for line in err.decode().splitlines()]
    assert events[0] == "team_database_ready" and events[-1] == "team_server_stopped"
    assert "traceback" not in err.decode().lower()
