"""The team server over HTTP (issue 21): `reos-memory team-server` as a real subprocess on one
embedded PostgreSQL started for this module; /health, bearer keys, the team/* methods, tenancy
across orgs, limits, and a clean stop on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from reos_memory.interfaces.team_http.registry import registry
from reos_memory.store.team import connection as pg
from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase, open_team_database
from tests.conftest import team_data_dir

ROOT = Path(__file__).resolve().parents[1]
ACTOR = admin.Actor(name="cli:test", request_id="req-setup")

pytestmark = pytest.mark.e2e


class Keys:
    def __init__(self, db: TeamDatabase) -> None:
        with db.connect() as conn:
            self.org_a = admin.create_org(conn, ACTOR, "org-a").id
            self.org_b = admin.create_org(conn, ACTOR, "org-b").id
            admin.create_team(conn, ACTOR, "org-a", "backend")
            new = admin.create_key
            self.a_admin, self.a_admin_info = new(conn, ACTOR, org="org-a", role="admin")
            self.a_reader, _ = new(conn, ACTOR, org="org-a", team="backend", role="reader")
            self.a_revoked, _ = new(conn, ACTOR, org="org-a", role="admin")
            self.a_expired, _ = new(conn, ACTOR, org="org-a", role="admin", expires_days=1)
            self.a_team_admin, _ = new(conn, ACTOR, org="org-a", team="backend", role="admin")
            self.b_admin, _ = new(conn, ACTOR, org="org-b", role="admin")
            self.b_other, _ = new(conn, ACTOR, org="org-b", role="reader")
            admin.revoke_key(conn, ACTOR, self.a_revoked.key_id)
            conn.execute(
                "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE key_id = %s",
                (self.a_expired.key_id,),
            )


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, started_s: float) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"
        self.started_s = started_s

    def post(self, body: bytes, key: str | None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(f"{self.base}/rpc", data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read()
                return resp.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def call(self, key: str | None, method: str, params: Any = None) -> tuple[int, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            msg["params"] = params
        return self.post(json.dumps(msg).encode(), key)

    def result(self, key: str, method: str, params: Any = None) -> Any:
        status, reply = self.call(key, method, params)
        assert status == 200 and "result" in reply, reply
        return reply["result"]

    def error(self, key: str, method: str, params: Any = None) -> dict[str, Any]:
        status, reply = self.call(key, method, params)
        assert status == 200 and "error" in reply, reply
        return reply["error"]  # type: ignore[no-any-return]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def db() -> Iterator[TeamDatabase]:
    with team_data_dir("team-server") as data_dir:
        db = open_team_database(None, data_dir)
        db.data_dir = data_dir  # type: ignore[attr-defined]
        yield db
        db.close()


@pytest.fixture(scope="module")
def keys(db: TeamDatabase) -> Keys:
    return Keys(db)


def _start(data_dir: Path, *extra: str) -> Server:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reos_memory", "team-server", "--data-dir", str(data_dir),
         "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )  # fmt: skip
    srv = Server(proc, port, 0.0)
    while True:
        assert proc.poll() is None, proc.communicate()[1].decode()
        try:
            with urllib.request.urlopen(f"{srv.base}/health", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        assert time.monotonic() - t0 < 30, "the team server did not come up"
        time.sleep(0.05)
    srv.started_s = time.monotonic() - t0
    print(f"team server up in {srv.started_s:.2f} s")
    return srv


@pytest.fixture(scope="module")
def server(db: TeamDatabase, keys: Keys) -> Iterator[Server]:
    srv = _start(db.data_dir)  # type: ignore[attr-defined]
    yield srv
    if srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait()


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
        "key_id": keys.a_admin.key_id, "name": "",
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
        _, err_text = srv.proc.communicate(timeout=15)
    assert srv.proc.returncode == 0
    assert b'"event": "authentication_failed"' in err_text
    assert not (tmp_path / "unused").exists(), "a --database-url server starts no embedded one"


def test_sigterm_stops_the_server_cleanly(server):
    server.proc.send_signal(signal.SIGTERM)
    out, err = server.proc.communicate(timeout=15)
    assert server.proc.returncode == 0, err.decode()
    assert out == b""
    events = [json.loads(line)["event"] for line in err.decode().splitlines()]
    assert events[0] == "team_database_ready" and events[-1] == "team_server_stopped"
    assert "traceback" not in err.decode().lower()
