"""The database and the hook's files are the OS user's own, even in a folder others can write
(issue 32; an outside attack as a second user): a database, -wal or -shm another user made first
is refused (it would let them read and rewrite every memory); the hook's log and lock are never
opened through a link another user planted (the log's rotation cut a file of the victim's).

Run as root (CI is), the other user is `nobody`, in a process of its own."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.commands import agent_env, sqrl
from reos_memory.config import load_config
from reos_memory.interfaces.agent_hooks.common import log_line
from reos_memory.private_files import NotOwnFile, open_own

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")

# what `nobody` does in the shared folder: make empty files anyone can write, or links
PLANT = """
import os, sys
os.setgroups([])
os.setgid(int(sys.argv[1]))
os.setuid(int(sys.argv[2]))
for spec in sys.argv[3:]:
    kind, path, _, target = spec.partition("=")[0], *spec.partition("=")[2].partition(">")
    if kind == "file":
        open(path, "w").close()
        os.chmod(path, 0o666)
    elif kind == "dir":
        os.mkdir(path)
        os.chmod(path, 0o777)
    else:
        os.symlink(target, path)
"""


def plant(*specs: str) -> None:
    """`file=PATH`, `dir=PATH` or `link=PATH>TARGET`, made by nobody (anyone may write them)."""
    nobody = pwd.getpwnam("nobody")
    done = subprocess.run(
        [sys.executable, "-c", PLANT, str(nobody.pw_gid), str(nobody.pw_uid), *specs],
        capture_output=True, text=True, cwd="/", timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder like /tmp: anyone may make files in it (pytest's own folders are 0700)."""
    top = Path(tempfile.mkdtemp(prefix="reos-shared-"))
    top.chmod(0o711)
    folder = top / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("planted", ["", "-wal", "-journal"])
def test_a_database_or_wal_another_user_made_first_is_refused(shared, tmp_path, planted):
    db = shared / "memory.db"
    plant(f"file={db}{planted}")
    env = agent_env(tmp_path, db)
    done = sqrl(env, "--db", str(db), "add", "the deploy key is in vault")
    assert done.returncode != 0
    assert "belongs to nobody" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # nothing of the memory reached a file the other user can read
    for f in shared.iterdir():
        if f.is_file():
            assert b"deploy key" not in f.read_bytes(), f


def test_the_hook_log_is_never_written_through_a_planted_link(shared):
    victim = shared.parent / "victims-file"
    victim.write_bytes(b"x" * 1_360_000)
    victim.chmod(0o644)
    db = shared / "memory.db"
    plant(f"link={db}.hook.log>{victim}")
    log_line(load_config(overrides={"db": str(db)}), "a line of the hook's")
    assert victim.stat().st_size == 1_360_000 and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_lock_or_log_file_is_opened_only_when_it_is_ours(shared):
    target = shared.parent / "made-through-the-link"
    plant(f"link={shared}/x.lock>{target}", f"file={shared}/y.lock")
    with pytest.raises(NotOwnFile):
        open_own(shared / "x.lock", os.O_RDWR)
    assert not target.exists()
    with pytest.raises(NotOwnFile, match="belongs to nobody"):
        open_own(shared / "y.lock", os.O_RDWR)
    fd = open_own(shared / "z.lock", os.O_RDWR)  # (one of ours is made 0600)
    os.close(fd)
    assert stat.S_IMODE((shared / "z.lock").stat().st_mode) == 0o600


def test_side_files_are_checked_beside_the_file_a_database_link_leads_to(shared, tmp_path):
    """The user's own link to a database in a shared folder: SQLite keeps the -wal beside the
    file the link leads to, so that is where another user's planted -wal is looked for (a
    review read the memories out of it)."""
    real = shared / "real.db"
    real.touch(mode=0o600)
    link = tmp_path / "mine.db"
    link.symlink_to(real)
    plant(f"file={real}-wal")
    done = sqrl(agent_env(tmp_path, link), "--db", str(link), "add", "the deploy key is in vault")
    assert done.returncode != 0 and "belongs to nobody" in done.stderr, done.stderr
    assert b"deploy key" not in Path(f"{real}-wal").read_bytes()


def test_a_hook_queue_folder_another_user_made_is_not_used(shared, tmp_path):
    """The hook's queue beside the database: a folder another user made first would let its
    links take the hook's writes and its requests name transcripts of its choosing."""
    from reos_memory.interfaces.agent_hooks import queue
    from reos_memory.interfaces.agent_hooks.dialects import Call

    db = shared / "memory.db"
    config = load_config(overrides={"db": str(db)})
    q = queue.queue_dir(config)
    plant(f"dir={q}", f"file={q}/planted.json")
    call = Call("claude-code", "end", "SessionEnd", "s1", str(tmp_path / "t.jsonl"), None, None)
    assert queue.enqueue(config, call, end=True) is None
    assert queue._claim(q) == []
    assert sorted(p.name for p in q.iterdir()) == ["planted.json"]


@pytest.mark.parametrize("planted", ["tools", "cursor", "cursor-link"])
def test_a_hook_tool_log_folder_another_user_made_is_not_used(shared, tmp_path, planted):
    """Cursor's tool-call log beside the database (`<db>.hook-tools/cursor/`): a folder another
    user made first, or a link there to a folder of the user's, would take the hook's lines (the
    user's commands and their output) or write into the victim's folder."""
    from reos_memory.interfaces.agent_hooks.common import beside_db
    from reos_memory.squirrel.ingest import cursor_sidecar

    config = load_config(overrides={"db": str(shared / "memory.db")})
    root = beside_db(config, cursor_sidecar.SUFFIX)
    victim = tmp_path / "victim"
    victim.mkdir()
    if planted == "tools":
        plant(f"dir={root}")
    elif planted == "cursor":
        root.mkdir(mode=0o700)
        root.chmod(0o777)  # (a folder of the user's that others may write: made 0700 before use)
        plant(f"dir={root}/cursor")
    else:
        plant(f"dir={root}", f"link={root}/cursor>{victim}")
    payload = {"hook_event_name": "afterShellExecution", "conversation_id": "conv1",
               "generation_id": "g", "command": "make deploy", "output": "ok"}  # fmt: skip
    assert not cursor_sidecar.record(root, payload)
    assert list(victim.iterdir()) == []
    if planted == "cursor":
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert not any(p.name.endswith(".jsonl") for p in root.rglob("*") if not p.is_symlink())
