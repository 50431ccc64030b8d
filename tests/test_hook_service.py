"""The Claude Code hook's warm service, with real processes: `reos-memory hook claude-code` as
Claude Code runs it, the service it starts, and what is left running afterwards."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness import processes
from harness.agent_homes import ClaudeSession
from harness.commands import agent_env as _env
from harness.commands import sqrl
from harness.rpc_client import ROOT
from reos_memory.config import load_config
from reos_memory.interfaces.agent_hooks import warm

pytestmark = pytest.mark.e2e

ASK = "can we deploy on Friday"


def services(db: Path) -> list[int]:
    """Pids of live hook services of this database."""
    me = str(db).encode()
    return [pid for pid, args, _ in processes.live() if b"--serve" in args and me in args]


def wait_for(cond: Any, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return bool(cond())


class Project:
    """A database with one guard in one project, and the hook run as Claude Code runs it."""

    def __init__(self, tmp: Path, idle_s: float = 60, db: Path | None = None, **env: str) -> None:
        self.db = db or tmp / "data" / "memory.db"
        self.repo = tmp / "repo"
        (self.repo / ".git").mkdir(parents=True)
        self.env = _env(tmp / "home", self.db, REOS_MEMORY_HOOK_SERVICE_IDLE_S=str(idle_s), **env)
        self.config = load_config(None, {"db": str(self.db)})
        r = sqrl(
            self.env, "add", "--kind", "guard", "--avoid", "Never deploy on Fridays.",
            "--project-root", str(self.repo),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr

    def hook(self, session: str, prompt: str = ASK, **extra: Any) -> str:
        raw = extra.pop("raw", None)
        payload = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": session,
            "cwd": str(self.repo),
            "prompt": prompt,
            **extra,
        }
        text = raw or json.dumps(payload)
        r = subprocess.run(
            [sys.executable, "-m", "reos_memory", "hook", "claude-code"],
            input=text.encode(),
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout.decode()

    def log(self) -> str:
        path = Path(str(self.db) + ".hook.log")
        return path.read_text() if path.exists() else ""

    def starts(self) -> int:
        return self.log().count(" listens on ")

    def status(self) -> dict[str, Any]:
        return warm.status(self.config)

    def stop(self) -> None:
        for pid in services(self.db):
            os.kill(pid, signal.SIGTERM)
        assert wait_for(lambda: not services(self.db)), "the service did not stop on SIGTERM"


def _guard_in(out: str) -> bool:
    return "Fridays" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_two_calls_share_one_warm_service(tmp_path: Path) -> None:
    p = Project(tmp_path)
    try:
        assert _guard_in(p.hook("s1"))
        first = p.status()
        assert services(p.db) == [first["pid"]] and first["served"] >= 1
        assert _guard_in(p.hook("s2"))
        again = p.status()
        assert again["pid"] == first["pid"] and again["served"] > first["served"]
        assert p.starts() == 1
        # the socket is private; the same session is told nothing it was told already
        assert stat.S_IMODE(os.stat(str(p.db) + ".hook.sock").st_mode) == 0o600
        assert p.hook("s2") == ""
    finally:
        p.stop()
    assert not os.path.exists(str(p.db) + ".hook.sock")
    assert "exits (SIGTERM)" in p.log()


def _ids_out(text: str) -> str:
    return re.sub(r"ctx-[0-9a-f]+", "ctx-ID", text)


def test_the_service_prints_what_the_hook_prints_alone(tmp_path: Path) -> None:
    """Byte for byte (apart from the context's fresh id) for the same input, service or not."""
    p = Project(tmp_path)
    resumed = ClaudeSession(p.repo, datetime.now(UTC)).user("deploy the release on Friday")
    transcript = resumed.write(tmp_path / "home" / ".claude")
    cases: list[dict[str, Any]] = [
        {"prompt": ASK},
        {"prompt": "rename the basket colour variables"},  # nothing similar: nothing printed
        {"prompt": "   "},
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "SessionStart", "transcript_path": str(transcript)},
        {"raw": "{not json"},
        {"cwd": ""},
    ]
    alone = {**p.env, "REOS_MEMORY_HOOK_SERVICE_IDLE_S": "0"}
    answered = 0
    try:
        for i, case in enumerate(cases):
            served = p.hook(f"warm-{i}", **case)
            p.env, kept = alone, p.env
            try:
                direct = p.hook(f"alone-{i}", **case)
            finally:
                p.env = kept
            assert _ids_out(served) == _ids_out(direct), case
            answered += bool(served)
        assert answered == 3  # the prompt, SessionStart and SessionStart resumed
        assert p.starts() == 1 and len(services(p.db)) == 1
    finally:
        p.stop()


def test_eight_sessions_at_once_start_one_service(tmp_path: Path) -> None:
    """Eight cold calls race: one service starts (the lock), every call is answered."""
    p = Project(tmp_path)
    try:
        for rnd in range(2):
            with ThreadPoolExecutor(8) as pool:
                outs = list(pool.map(p.hook, [f"r{rnd}-s{i}" for i in range(8)]))
            assert all(_guard_in(o) for o in outs), outs
        assert p.starts() == 1, p.log()
        assert len(services(p.db)) == 1
        assert p.status()["served"] >= 8  # a cold call that gave up waiting answers itself
    finally:
        p.stop()


def test_the_service_leaves_when_idle(tmp_path: Path) -> None:
    p = Project(tmp_path, idle_s=1)
    assert _guard_in(p.hook("s1"))
    assert wait_for(lambda: not services(p.db)), "the service outlived its idle time"
    assert "exits (idle)" in p.log()
    assert not os.path.exists(str(p.db) + ".hook.sock")
    assert _guard_in(p.hook("s2"))  # and the next call starts another
    assert p.starts() == 2
    p.stop()


def test_a_killed_service_is_replaced_and_a_stale_socket_ignored(tmp_path: Path) -> None:
    p = Project(tmp_path)
    sock = str(p.db) + ".hook.sock"
    # a socket file no one listens on, as a crash leaves it
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(sock)
    try:
        assert _guard_in(p.hook("s1"))
        old = p.status()["pid"]
        os.kill(old, signal.SIGKILL)
        assert wait_for(lambda: old not in services(p.db))
        assert os.path.exists(sock)  # left behind by the kill
        assert _guard_in(p.hook("s2"))
        new = p.status()["pid"]
        assert new != old and services(p.db) == [new]
    finally:
        p.stop()


def test_the_service_leaves_with_its_database(tmp_path: Path) -> None:
    p = Project(tmp_path)
    assert _guard_in(p.hook("s1"))
    assert len(services(p.db)) == 1
    for suffix in ("", "-wal", "-shm"):
        Path(str(p.db) + suffix).unlink(missing_ok=True)
    assert wait_for(lambda: not services(p.db)), "the service outlived its database"
    assert "exits (the database was removed)" in p.log()


def test_other_settings_are_answered_alone_and_retire_the_service(tmp_path: Path) -> None:
    p = Project(tmp_path)
    try:
        assert _guard_in(p.hook("s1"))
        old = p.status()["pid"]
        p.env = {**p.env, "REOS_MEMORY_HOOK_PROMPT_BUDGET": "300"}
        assert _guard_in(p.hook("s2"))  # answered in its own process
        assert wait_for(lambda: old not in services(p.db))
        assert "declined" in p.log()
        assert _guard_in(p.hook("s3"))  # a service with the new settings
        assert p.status()["pid"] != old
    finally:
        p.stop()


def test_a_socket_path_too_long_for_af_unix_goes_to_a_short_private_dir(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    # a runtime dir of a short path, as the system's is (tmp_path is longer under pytest-xdist)
    run = Path(tempfile.mkdtemp(prefix="run-", dir="/tmp"))
    run.chmod(0o700)
    p = Project(tmp_path, db=deep / "memory.db", XDG_RUNTIME_DIR=str(run))
    os.environ["XDG_RUNTIME_DIR"], old = str(run), os.environ.get("XDG_RUNTIME_DIR")
    try:
        path = warm.socket_path(p.config)
        assert path.startswith(str(run / "reos-memory") + "/") and len(path) <= 107
        assert _guard_in(p.hook("s1"))
        assert _guard_in(p.hook("s2"))
        assert p.starts() == 1
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(run / "reos-memory").st_mode) == 0o700
    finally:
        p.stop()
        if old is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = old
        shutil.rmtree(run, ignore_errors=True)


# The other user's listener, in a process of its own (no fork of this threaded one): started
# as root, it drops to the given user, listens at the path, says "ready", and prints what a
# connection sent it, or "(nothing)" once its stdin closes.
PLANTED = """
import os, select, socket, sys
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[3]))
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
srv.listen(8)
print("ready", flush=True)
got = b""
ready, _, _ = select.select([srv, sys.stdin], [], [], 60)
if srv in ready:
    conn, _ = srv.accept()
    conn.settimeout(5)
    try:
        while chunk := conn.recv(65536):
            got += chunk
    except OSError:
        pass
print(got[:60000].decode(errors="replace") or "(nothing)", flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")
def test_a_socket_another_user_planted_gets_no_prompt(tmp_path: Path) -> None:
    """Beside a database in a folder others can write, another user (nobody) listens on
    `<db>.hook.sock` before any service: the hook refuses the socket (its owner and the peer's
    credentials are another user's), answers in its own process, and the planted listener reads
    nothing; the hook log is the user's alone (0600)."""
    import pwd

    nobody = pwd.getpwnam("nobody")
    top = Path(tempfile.mkdtemp(prefix="reos-shared-"))  # (pytest's own folders are 0700)
    top.chmod(0o711)
    shared = top / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    p = Project(tmp_path, db=shared / "memory.db")
    sock_path = str(p.db) + ".hook.sock"
    planted = subprocess.Popen(
        [sys.executable, "-c", PLANTED, sock_path, str(nobody.pw_gid), str(nobody.pw_uid)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/",
    )  # fmt: skip
    try:
        assert planted.stdout is not None and planted.stdin is not None
        assert planted.stdout.readline().strip() == "ready"
        assert _guard_in(p.hook("s1", prompt="can we deploy on Friday, secret plan 42"))
        assert "is not a socket of this user's" in p.log()
        planted.stdin.close()  # the hook is done: the planted listener has read nothing
        assert planted.stdout.read().strip() == "(nothing)"
        assert stat.S_IMODE(os.stat(str(p.db) + ".hook.log").st_mode) == 0o600
    finally:
        if planted.poll() is None:
            planted.kill()
        planted.wait(timeout=10)
        p.stop()
        shutil.rmtree(top, ignore_errors=True)


def test_the_service_answers_only_its_own_user() -> None:
    """The peer check both sides make reads the connected process's OS user."""
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert warm.peer_uid(a) == os.getuid() == warm.peer_uid(b)
