"""The adapter interface itself, with a toy format that uses every part of it: records of its own
shape from a position of its own, sessions it ends itself, a block held back until the session
ends, and sessions of several projects in one log ended by their own latest event."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import AGENT_NAMES
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import Adapter, Parsed, ParseState, Place, Record
from reos_memory.store import sessions as session_sql
from reos_memory.store import transcripts as transcript_sql


class Toy(Adapter):
    """`*.toy` files, one record a complete line, the position a line number:

    S <sid> <cwd>           a run starts (the one before it is over)
    U <text>                the user said something
    B <text>                an answer whose end only the next run or the session's end tells
    L <sid> <cwd> <ts> <t>  a message of another session of the log (a database of many)
    """

    name = "toy"  # type: ignore[misc]
    shrink_means_rewritten = False

    def claims(self, path: str) -> bool:
        return path.endswith(".toy")

    def identity(self, path: str, size: int = 4096) -> Any:
        from reos_memory.squirrel.ingest import reader

        return reader.Head("toy:" + os.path.basename(path), reader.HEAD_BYTES)

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        complete = Path(path).read_text().split("\n")[:-1]  # a last line without \n waits
        for i in range(position, len(complete)):
            yield Record(i + 1, {"line": complete[i]} if complete[i] else None)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        kind, _, rest = record["line"].partition(" ")
        if kind == "S":
            out = self.finish(state)
            sid, cwd = rest.split(" ")
            if state.session_id:
                state.finished.append(state.session_id)
            state.session_id, state.cwd = sid, cwd
            return out
        if kind == "U" and state.session_id:
            return [Parsed(state.session_id, EventIn(role="user", kind="message", text=rest))]
        if kind == "B":
            state.extra["held"] = rest
            return []
        if kind == "L":
            sid, cwd, ts, text = rest.split(" ", 3)
            state.live[sid] = ts
            event = EventIn(role="user", kind="message", text=text, ts=ts)
            return [Parsed(sid, event, cwd=cwd)]
        state.count("skipped")
        return []

    def finish(self, state: ParseState) -> list[Parsed]:
        held = state.extra.pop("held", None)
        if not held or not state.session_id:
            return []
        return [Parsed(state.session_id, EventIn(role="assistant", kind="message", text=held))]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    monkeypatch.setitem(tin.ADAPTERS, "toy", Toy())
    cfg = load_config(None, {"db": str(tmp_path / "m.db"), "embedder": "hash"})
    cfg = msgspec.structs.replace(cfg, catch_up_indexing=False, owner_id="tester")
    a = App(cfg, setup_logging("warning"))
    a.start()
    a.embeddings.wait_ready(30)
    yield a
    a.close()


def _session(app: Any, sid: str) -> dict[str, Any] | None:
    return app.squirrel.db.read(lambda c: session_sql.get_session(c, sid))


def _texts(app: Any, sid: str) -> list[str]:
    """The texts of a session's events, cut into episodes or still pending, in order."""

    def read(c: Any) -> list[Any]:
        eps = c.execute(
            "SELECT events_json FROM episodes WHERE session_id = ? ORDER BY start_ts, rowid",
            (sid,),
        ).fetchall()
        pending = c.execute(
            "SELECT event_json FROM squirrel_events WHERE session_id = ? ORDER BY seq", (sid,)
        ).fetchall()
        events = [e for r in eps for e in msgspec.json.decode(r[0]).get("events", [])]
        return events + [msgspec.json.decode(r[0]) for r in pending]

    return [e.get("text") or e["summary"] for e in app.squirrel.db.read(read)]


def _projects(tmp_path: Path, *names: str) -> list[str]:
    out = []
    for n in names:
        (tmp_path / n / ".git").mkdir(parents=True)
        out.append(str(tmp_path / n))
    return out


def test_records_of_its_own_shape_resume_from_their_position(app, tmp_path: Path) -> None:
    (a,) = _projects(tmp_path, "a")
    log = tmp_path / "one.toy"
    log.write_text(f"S s1 {a}\nU first question\nU second\nU half-writ")
    opts = tin.Options(session_end=False)
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(log), opts)
    assert (rep.agent, rep.lines, rep.events) == ("toy", 3, 2)
    assert tin.detect(str(log)) == "toy"
    again = tin.ingest_file(app.squirrel.ingest_deps, str(log), opts)
    assert (again.lines, again.events) == (0, 0)  # nothing read twice
    log.write_text(log.read_text() + "ten\nX an unknown record\n")
    more = tin.ingest_file(app.squirrel.ingest_deps, str(log), opts)
    assert (more.lines, more.events, more.counts.get("skipped")) == (2, 1, 1)
    assert _texts(app, "s1") == ["first question", "second", "half-written"]
    assert str(log) in tin.find([str(tmp_path)])


def test_a_run_the_log_says_is_over_ends_and_a_held_back_block_comes_at_the_end(
    app, tmp_path: Path
) -> None:
    a, b = _projects(tmp_path, "a", "b")
    log = tmp_path / "runs.toy"
    log.write_text(
        f"S r1 {a}\nU fix the parser\nB done with r1\nS r2 {b}\nU next\nB held to the end\n"
    )
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(session_end=False))
    assert rep.session_id == "r2"  # the cursor follows the current run
    s1, s2 = _session(app, "r1"), _session(app, "r2")
    assert s1 is not None and s1["ended"]  # ended once its successor began
    assert s2 is not None and not s2["ended"]
    assert _texts(app, "r1") == ["fix the parser", "done with r1"]
    assert _texts(app, "r2") == ["next"]  # the last block waits for the session's end
    # the session ends when idle (the watcher's way, without reading the log): the block first
    ended = tin.end_idle_sessions(app.squirrel.ingest_deps, 3600, force=True)
    assert "r2" in ended
    assert _texts(app, "r2") == ["next", "held to the end"]
    assert _session(app, "r2")["ended"]  # type: ignore[index]
    cur = app.squirrel.db.read(lambda c: transcript_sql.get(c, str(log)))
    assert ParseState.from_json(cur.state_json).extra == {}  # stored with the cursor


def test_sessions_of_many_projects_in_one_log_end_by_their_own_latest_event(
    app, tmp_path: Path
) -> None:
    a, b = _projects(tmp_path, "a", "b")
    log = tmp_path / "db.toy"
    log.write_text(
        f"L old {a} 2020-01-01T00:00:00Z an old session\n"
        f"L new {b} 2999-01-01T00:00:00Z a session still going\n"
    )
    tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(idle_seconds=3600))
    old, new = _session(app, "old"), _session(app, "new")
    assert old is not None and new is not None
    assert old["project_id"] != new["project_id"]  # each in its own project
    assert old["ended"] and not new["ended"]  # by their own times, not the file's
    assert tin.end_idle_sessions(app.squirrel.ingest_deps, 3600) == {}  # `new` is still going
    assert "new" in tin.end_idle_sessions(app.squirrel.ingest_deps, 3600, force=True)
    cur = app.squirrel.db.read(lambda c: transcript_sql.get(c, str(log)))
    assert ParseState.from_json(cur.state_json).live == {}


def test_every_agent_has_an_adapter_and_default_locations() -> None:
    from typing import get_args, get_type_hints

    from reos_memory.squirrel import api

    assert tuple(tin.AGENTS) == AGENT_NAMES
    # the protocol's `agent` (a Literal, spelled out for msgspec) names the same agents
    assert get_args(get_type_hints(api.IngestTranscriptParams)["agent"]) == AGENT_NAMES
    assert set(tin.ADAPTERS) == set(AGENT_NAMES) - {"auto"}
    for adapter in tin.ADAPTERS.values():
        for platform in ("linux", "darwin", "win32"):
            place = Place(platform, "/h", {"APPDATA": "/h/AppData/Roaming"})
            assert all(isinstance(r, str) and r for r in adapter.roots(place))
    place = Place("linux", "/h", {"CODEX_HOME": "/c"})
    assert tin.ADAPTERS["claude-code"].roots(place) == ["/h/.claude/projects"]
    assert tin.ADAPTERS["codex"].roots(place) == ["/c/sessions"]


def test_default_roots_are_the_existing_ones_each_once(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "projects").mkdir(parents=True)
    place = Place("linux", str(tmp_path), {})
    roots = tin.default_roots(place, [str(tmp_path / ".claude" / "projects")])
    assert roots == [str(tmp_path / ".claude" / "projects")]


def test_every_commit_changes_what_other_ingesters_compare(app, tmp_path: Path) -> None:
    """A commit that does not move the position (held-back events stored at the session's
    end) still changes the cursor's mark, so an ingester holding an older copy starts again
    instead of committing the same events on top."""
    (a,) = _projects(tmp_path, "a")
    log = tmp_path / "held.toy"
    log.write_text(f"S h1 {a}\nU a question\nB an answer held back\n")
    tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(session_end=False))

    def mark() -> Any:
        return tin._mark(app.squirrel.db.read(lambda c: transcript_sql.get(c, str(log))))

    before = mark()
    assert "h1" in tin.end_idle_sessions(app.squirrel.ingest_deps, 3600, force=True)
    after = mark()
    assert after[0] == before[0] and after != before  # same position, not the same cursor


def test_a_database_counts_as_written_when_only_its_write_ahead_log_grew(tmp_path: Path) -> None:
    """opencode (and Cursor) keep their databases in WAL mode: a commit may touch only
    `<db>-wal`, which the watcher and the idle test must see."""
    import sqlite3

    from reos_memory.squirrel.ingest import reader

    db = tmp_path / "agent.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t(x)")
    con.commit()
    main_before = os.stat(db)
    before = reader.signature(str(db))
    for i in range(50):
        con.execute("INSERT INTO t VALUES (?)", (i,))
        con.commit()
    after_main = os.stat(db)
    assert (after_main.st_size, after_main.st_mtime_ns) == (
        main_before.st_size,
        main_before.st_mtime_ns,
    )  # the main file did not change ...
    assert reader.signature(str(db)) != before  # ... the log as a whole did
    assert reader.last_write(str(db)) >= after_main.st_mtime_ns / 1e9
    con.close()
