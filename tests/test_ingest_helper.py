"""A large catch-up learns in a helper process: the same memories as in one process, nothing
lost when the helper dies, and no helper outliving its caller."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.rpc_client import ROOT, SQRL
from reos_memory.squirrel.api import EpisodeRun
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.writer.helper_process import Helper, wanted
from tools.bench_agents import generate


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("helper") / "home"
    generate(root, 1.5)
    return root


def _app(db: Path, **changes: Any) -> Any:
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    cfg = load_config(None, {"db": str(db), "embedder": "hash"})
    # episodes are cut while the logs are read too (a size cap), not only at the sessions' ends
    cfg = msgspec.structs.replace(
        cfg, catch_up_indexing=False, owner_id="tester", max_episode_events=60, **changes
    )
    app = App(cfg, setup_logging("warning"))
    app.start()
    app.embeddings.wait_ready(30)
    return app


def _learned(app: Any) -> dict[str, Any]:
    def read(conn: Any) -> dict[str, Any]:
        return {
            "memories": sorted(
                conn.execute("SELECT kind, tier, status, text FROM memories").fetchall()
            ),
            "episodes": Counter(r[0] for r in conn.execute("SELECT outcome FROM episodes")),
            "open_sessions": conn.execute(
                "SELECT count(*) FROM squirrel_sessions WHERE ended = 0"
            ).fetchone()[0],
            "pending_events": conn.execute("SELECT count(*) FROM squirrel_events").fetchone()[0],
        }

    return app.db.read(read)


def _reported(reps: list[tin.FileReport]) -> list[tuple[Any, ...]]:
    return sorted((r.path, r.events, r.ended, sorted(e.outcome for e in r.learned())) for r in reps)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def reference(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """What this process alone learns from the logs."""
    app = _app(tmp_path_factory.mktemp("ref") / "m.db")
    try:
        reps = tin.ingest_paths(
            app.squirrel.ingest_deps, [str(home)], tin.Options(session_end=True)
        )
        yield {"reported": _reported(reps), "learned": _learned(app)}
    finally:
        app.close()


def _watched(helper: Any) -> list[int]:
    """Count the times ingest_paths stops the helper (its first failure does)."""
    stops: list[int] = []
    stop = helper.stop

    def counted() -> None:
        stops.append(1)
        stop()

    helper.stop = counted
    return stops


def test_the_helper_learns_what_this_process_would(home, reference, tmp_path: Path) -> None:
    app = _app(tmp_path / "m.db")
    try:
        helper = Helper("reos_memory.app:open_helper", app.config)
        hello = helper.ready.result(60)
        pid = hello["pid"]
        assert pid != os.getpid() and _alive(pid)
        assert hello["dies_with_parent"]  # the kernel ends it if this process dies
        stops = _watched(helper)
        try:
            reps = tin.ingest_paths(
                app.squirrel.ingest_deps, [str(home)], tin.Options(session_end=True), helper=helper
            )
        finally:
            helper.close()
        assert not _alive(pid)  # closed: the process is gone
        learned = _learned(app)
    finally:
        app.close()
    assert not stops  # all of it was done there: nothing failed over to this process
    assert learned == reference["learned"]
    assert learned["memories"] and learned["episodes"]["written"] > 0
    assert learned["open_sessions"] == 0 and learned["pending_events"] == 0
    assert _reported(reps) == reference["reported"]
    cuts = Counter(e.cut_reason for r in reps for e in r.learned())
    assert cuts["size_cap"] > 0 and cuts["session_end"] > 0  # learned while reading, and at ends


@pytest.mark.parametrize("when", ["at once", "midway"])
def test_a_helper_that_dies_leaves_its_work_to_this_process(
    home, reference, tmp_path: Path, when: str
) -> None:
    app = _app(tmp_path / "m.db")
    try:
        helper = Helper("reos_memory.app:open_helper", app.config)
        pid = helper.ready.result(60)["pid"]
        stops = _watched(helper)
        if when == "at once":
            os.kill(pid, signal.SIGKILL)

        def progress(done: int, total: int, rep: tin.FileReport) -> None:
            if when == "midway" and done == total // 2:
                os.kill(pid, signal.SIGKILL)

        try:
            reps = tin.ingest_paths(
                app.squirrel.ingest_deps,
                [str(home)],
                tin.Options(session_end=True),
                progress,
                helper,
            )
        finally:
            helper.close()
        learned = _learned(app)
    finally:
        app.close()
    assert stops == [1]
    # every episode was learned from, here when not there; every session ended; no event lost
    assert learned == reference["learned"]
    assert _reported(reps) == reference["reported"]


class _FailsMidway:
    """A helper that learns the first episodes it is given, then fails on one: having
    committed it (a reply lost) or not (a crash before the commit)."""

    def __init__(self, app: Any, committed: bool) -> None:
        self.sq = app.squirrel
        self.committed = committed
        self.given = 0
        self.stopped = 0

    def learn(self, episode: EpisodeRun) -> Future[EpisodeRun]:
        self.given += 1
        done: Future[EpisodeRun] = Future()
        if self.given < 4:
            done.set_result(self.sq.writer.after_cut(episode, True))
        else:
            if self.committed:
                self.sq.writer.after_cut(episode, True)
            done.set_exception(RuntimeError("the helper failed"))
        return done

    def stop(self) -> None:
        self.stopped += 1


@pytest.mark.parametrize("committed", [False, True], ids=["before its commit", "after it"])
def test_a_helper_that_fails_on_an_episode_has_it_learned_here_once(
    home, reference, tmp_path: Path, committed: bool
) -> None:
    app = _app(tmp_path / "m.db")
    try:
        helper = _FailsMidway(app, committed)
        reps = tin.ingest_paths(
            app.squirrel.ingest_deps, [str(home)], tin.Options(session_end=True), helper=helper
        )
        learned = _learned(app)
    finally:
        app.close()
    assert helper.stopped == 1 and helper.given == 4  # stopped at once, given nothing more
    assert learned == reference["learned"]  # no episode left pending, none learned twice
    assert _reported(reps) == reference["reported"]  # each reported once


def test_only_a_large_catch_up_with_the_offline_writer_gets_a_helper(home) -> None:
    from reos_memory.config import load_config

    cfg = load_config(None, {"db": str(home.parent / "m.db")})
    one = msgspec.structs.replace(cfg, ingest_helper_min_mb=1.0)
    assert wanted(one, [str(home)])  # 1.5 MB of logs
    assert not wanted(msgspec.structs.replace(cfg, ingest_helper_min_mb=2.0), [str(home)])
    assert not wanted(msgspec.structs.replace(cfg, ingest_helper_min_mb=0.0), [str(home)])
    llm = msgspec.structs.replace(one, llm_provider="openai", llm_model="gpt-4o-mini")
    assert not wanted(llm, [str(home)])  # an LLM writer waits on the network: threads do
    assert wanted(msgspec.structs.replace(llm, writer="rules"), [str(home)])
    assert not wanted(msgspec.structs.replace(one, db=":memory:"), [str(home)])  # not shared


# -- `sqrl ingest`, whole processes --------------------------------------------------------------


def _env(db: Path, min_mb: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("REOS_MEMORY_")},
        "REOS_MEMORY_DB": str(db),
        "REOS_MEMORY_EMBEDDER": "hash",
        "REOS_MEMORY_OWNER_ID": "tester",
        "REOS_MEMORY_INGEST_HELPER_MIN_MB": min_mb,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                found.append(int(proc.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _summary(out: str) -> list[tuple[Any, ...]]:
    return sorted(
        (r["path"], r["events"], r["session_ended"], sorted(e["outcome"] for e in r["episodes"]))
        for r in json.loads(out)
    )


@pytest.mark.e2e
def test_sqrl_ingest_with_a_helper_says_the_same_and_leaves_no_process(
    home, tmp_path: Path
) -> None:
    runs = {}
    for name, min_mb in (("alone", "0"), ("helped", "0.5")):
        r = subprocess.run(
            [*SQRL, "ingest", "--end", "--json", str(home)],
            env=_env(tmp_path / f"{name}.db", min_mb),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        runs[name] = _summary(r.stdout)
    assert runs["helped"] == runs["alone"]
    assert any(outcomes for *_, outcomes in runs["alone"])

    # the caller killed while its helper works: the helper goes too
    proc = subprocess.Popen(
        [*SQRL, "ingest", "--end", "--json", str(home)],
        env=_env(tmp_path / "killed.db", "0.5"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    helpers: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        helpers = {c: _cmdline(c) for c in _children(proc.pid)}
        if any(b"spawn_main" in line for line in helpers.values()):
            break  # the helper (beside the resource tracker of multiprocessing)
        time.sleep(0.01)
    assert any(b"spawn_main" in line for line in helpers.values()), "no helper was started"
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [c for c in helpers if _alive(c)], "a helper outlived its caller"
