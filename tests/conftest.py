from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.rpc_client import Server
from reos_memory.store import Database
from reos_memory.store.migrations import migrate
from tests.fake_llm import FakeProvider

# A hook call starts the database's warm service, which outlives the call by design; a test's
# service should not outlive its test by minutes (each test has its own database, so its own
# service). Tests that are about the service set their own value.
os.environ.setdefault("REOS_MEMORY_HOOK_SERVICE_IDLE_S", "3")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A migrated database, used in process (no server)."""
    d = Database(str(tmp_path / "store.db"))
    migrate(d)
    yield d
    d.close()


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    """A local OpenAI/Anthropic-compatible HTTP server, scripted reply by reply."""
    p = FakeProvider()
    yield p
    p.close()


NO_CATCH_UP = {"REOS_MEMORY_CATCH_UP_INDEXING": "false"}  # for tests that count unindexed blocks


@pytest.fixture
def server(db_path: Path) -> Iterator[Server]:
    with Server(db_path) as srv:
        srv.wait_ready()  # no test starts while the model and start-up indexing are still loading
        yield srv


def make_block(srv: Server, content: str = "text", act_id: str = "act-1", **extra) -> str:
    return srv.call(
        "blocks/create", {"type": "paragraph", "act_id": act_id, "content": content, **extra}
    )["block"]["id"]


def link(srv: Server, a: str, b: str, t: str = "references", conf: float = 1.0) -> dict:
    """A relationship a -> b of type t, as created."""
    return srv.call(
        "memory/relationships/create",
        {"source_id": a, "target_id": b, "rel_type": t, "confidence": conf},
    )["relationship"]


def cancel_at_commit(srv, db_path, method: str, params: dict, finished) -> tuple[dict, list[dict]]:
    """Run a long request while another connection holds the write lock, so it computes
    everything and then waits at its single commit; cancel it there, release the lock, and
    return (its response, the $/progress notifications it sent). `finished(progress)` says when
    the last progress notification has arrived."""
    import time

    import apsw

    lock = apsw.Connection(str(db_path))
    lock.execute("PRAGMA busy_timeout = 10000")
    lock.execute("BEGIN IMMEDIATE")
    try:
        rid = srv.request(method, params)
        deadline = time.monotonic() + 30
        progress: list[dict] = []
        while time.monotonic() < deadline:
            progress = [n["params"] for n in srv.notifications if n["method"] == "$/progress"]
            if progress and finished(progress[-1]):
                break
            time.sleep(0.02)
        srv.notify("$/cancelRequest", {"id": rid})
        time.sleep(0.2)
    finally:
        lock.execute("COMMIT")
        lock.close()
    return srv.response(rid), progress


@contextlib.contextmanager
def team_data_dir(name: str) -> Iterator[Path]:
    """A data directory for an embedded team PostgreSQL, outside pytest's temporary tree, whose
    folder its own PostgreSQL user can traverse (running as root, PostgreSQL runs as its own OS
    user; a data directory it cannot reach has its cluster kept under /var/lib instead, which
    test_team_cluster.py covers), so that the cluster is removed with the folder."""
    root = Path(tempfile.mkdtemp(prefix=f"reos-{name}-"))
    root.chmod(0o711)  # (traversable, not listable)
    try:
        yield root / "team-db"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def team_db(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One embedded PostgreSQL with pgvector per test module (tests/team_fixtures.py), migrated,
    in a `team_data_dir`; stopped at the module's end (checked)."""
    from tests.team_fixtures import open_module_db

    with team_data_dir(request.module.__name__.rsplit(".", 1)[-1]) as data_dir:
        db = open_module_db(data_dir)
        yield db
        pgdata = db.embedded.pgdata
        db.close()
        assert not (pgdata / "postmaster.pid").exists(), "the embedded server was left running"


@pytest.fixture(scope="module")
def team_keys(team_db: Any) -> Any:
    """Orgs A and B, team `backend` of A, and keys of every role on `team_db`
    (tests/team_fixtures.py: Keys)."""
    from tests.team_fixtures import Keys

    return Keys(team_db)


@pytest.fixture(scope="module")
def team_server(team_db: Any, team_keys: Any) -> Iterator[Any]:
    """`reos-memory team-server` with its default options on `team_db`, as a subprocess; stopped
    with SIGTERM at the module's end if a test has not stopped it (a killed server would keep
    its hold on the embedded database, which then outlives the module)."""
    from tests.team_fixtures import data_dir_of, start_server

    srv = start_server(data_dir_of(team_db))
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


@pytest.fixture(scope="module")
def hash_team_server(team_db: Any) -> Iterator[Any]:
    """`reos-memory team-server` on `team_db` embedding with the hash embedder (384 dimensions,
    no model to load), for modules that make their own orgs and keys; stopped with SIGTERM."""
    from tests.team_fixtures import data_dir_of, start_server

    srv = start_server(data_dir_of(team_db), env={"REOS_MEMORY_EMBEDDER": "hash"})
    yield srv
    if srv.proc.poll() is None:
        srv.stop()
