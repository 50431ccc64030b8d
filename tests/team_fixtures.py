"""What the team tests share: a module's embedded PostgreSQL (the `team_db` fixture in
conftest.py starts it through `open_module_db`), a set of orgs, teams and keys on it, the team
server as a real subprocess with a small HTTP client, and the admin command line."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any

from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase

ROOT = Path(__file__).resolve().parents[1]
ACTOR = admin.Actor(name="cli:test", request_id="req-setup")


def data_dir_of(db: TeamDatabase) -> Path:
    """The --data-dir of a module's embedded database (its processes reuse the running one)."""
    assert db.embedded is not None
    return db.embedded.data_dir


class Keys:
    """Two orgs; org A has a team `backend`; keys of every kind the tests need."""

    def __init__(self, db: TeamDatabase) -> None:
        with db.connect() as conn:
            self.org_a = admin.create_org(conn, ACTOR, "org-a").id
            self.org_b = admin.create_org(conn, ACTOR, "org-b").id
            self.backend = admin.create_team(conn, ACTOR, "org-a", "backend").id
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
    """A team server subprocess and a JSON-RPC client for it."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        port: int,
        started_s: float,
        log: Path | None = None,
    ) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"
        self.started_s = started_s
        self.log = log  # where its stderr goes (None: a pipe)

    def logged(self) -> bytes:
        """What it has logged (its stderr) so far."""
        assert self.log is not None
        return self.log.read_bytes()

    def post_raw(self, body: bytes, key: str | None) -> tuple[int, Message, Any]:
        """(HTTP status, headers (names in any case), parsed body) of a POST /rpc."""
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(f"{self.base}/rpc", data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read()
                return resp.status, resp.headers, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, json.loads(exc.read() or b"null")

    def post(self, body: bytes, key: str | None) -> tuple[int, Any]:
        status, _, reply = self.post_raw(body, key)
        return status, reply

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

    def delivery(self, key: str, memory_id: str) -> str:
        """The receipt a pull gives `key` with `memory_id`, as a member's machine receives it:
        what that key's usage reports of the memory must name."""
        after = 0
        while True:
            page = self.result(key, "squirrel/changes/pull", {"after_seq": after, "limit": 1000})
            for c in page["changes"]:
                if c["memory_id"] == memory_id and c["op"] == "upsert":
                    return str(c["receipt"])
            assert page["more"], f"{memory_id} never reaches this key"
            after = page["next_seq"]

    def signin(self, key: str) -> int:
        """The HTTP status of a sign-in to the team UI with `key` (303 when it signs in)."""
        return self.signin_reply(key)[0]

    def signin_reply(self, key: str) -> tuple[int, Message]:
        """(HTTP status, headers) of a sign-in to the team UI with `key`, not redirected."""
        data = urllib.parse.urlencode({"key": key}).encode()
        req = urllib.request.Request(
            f"{self.base}/signin", data=data,
            headers={"Origin": self.base, "Content-Type": "application/x-www-form-urlencoded"},
        )  # fmt: skip

        class _Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        try:
            with urllib.request.build_opener(_Stay).open(req, timeout=10) as resp:
                return int(resp.status), resp.headers
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.headers

    def stop(self) -> str:
        """SIGTERM, wait, and the server's log (stderr); the exit status must be 0."""
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=15)
        err = self.logged() if self.log is not None else err
        assert self.proc.returncode == 0, err.decode(errors="replace")
        return err.decode(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    data_dir: Path, *extra: str, env: dict[str, str] | None = None, log: Path | None = None
) -> Server:
    """`reos-memory team-server` on a free port (with `env` added to the environment), once its
    /health answers 200. Its stderr goes to `log`, else to a file of its own (a server logging
    much into a pipe nobody reads blocks once the pipe is full: a burst of failed sign-ins did
    that, and a request then hung); `Server.stop` returns what it logged."""
    if log is None:
        fd, name = tempfile.mkstemp(prefix="team-server-", suffix=".log")
        os.close(fd)
        log = Path(name)
    port = free_port()
    t0 = time.monotonic()
    with contextlib.ExitStack() as files:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reos_memory", "team-server", "--data-dir", str(data_dir),
             "--port", str(port), *extra],
            stdout=subprocess.PIPE,  # (it writes nothing there: a test checks)
            stderr=files.enter_context(log.open("ab")),
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )  # fmt: skip
    srv = Server(proc, port, 0.0, log)
    while True:
        if proc.poll() is not None:
            raise AssertionError(log.read_bytes().decode(errors="replace"))
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


def admin_cli(
    *args: str, data_dir: Path | None = None, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`reos-memory team admin ARGS` on the database at `url` or under `data_dir`."""
    where = ["--database-url", url] if url else ["--data-dir", str(data_dir)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "reos_memory", "team", "admin", *args, *where],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def open_module_db(data_dir: Path) -> TeamDatabase:
    """A migrated embedded PostgreSQL under `data_dir`, its start-up time printed."""
    from reos_memory.team.database import open_team_database

    t0 = time.monotonic()
    db = open_team_database(None, data_dir)
    print(f"embedded PostgreSQL started and migrated in {time.monotonic() - t0:.2f} s")
    return db
