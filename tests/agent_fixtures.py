"""What the tests of the agent adapters share: session logs of the agents without shared
samples, laid out as the tools lay them out from the fixtures in tests/fixtures/agents/ (built
from the documented types in ../shared/formats/<tool>/NOTES.md), an app on a temporary database
(`open_app`, the `app` fixture), and a log read through an adapter alone (`parse_all`).

(Sessions scripted step by step and written in every agent's format are another thing:
`harness.agent_logs`.)"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from harness.agent_logs import copilot
from harness.agent_logs import opencode as oc
from reos_memory.squirrel.ingest.base import Adapter, Parsed, ParseState

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents"
OPENCODE = FIXTURES / "opencode"
COPILOT = FIXTURES / "copilot"
COPILOT_SESSION = "6f1c2d3e-0000-4000-8000-00000000c0a1"
COPILOT_OLD_SESSION = "0b7e2c11-0000-4000-8000-00000000d0c5"
COPILOT_HOOK_SESSION = "a4c1e2f0-0000-4000-8000-0000000047a1"


def copy_home(fixture: Path, home: Path, fill: dict[str, str]) -> None:
    """The fixture's files under `home`, each placeholder (`@PROJECT@`) filled in."""
    for src in fixture.rglob("*"):
        if src.is_file():
            dst = home / src.relative_to(fixture)
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text()
            for mark, value in fill.items():
                text = text.replace(mark, value)
            dst.write_text(text)


def _fill(text: str, places: dict[str, Path]) -> str:
    for key, path in places.items():
        text = text.replace("{" + key + "}", json.dumps(str(path))[1:-1])
    return text


def opencode_rows(places: dict[str, Path]) -> dict[str, Any]:
    """rows.json with the projects' directories put in ({A1}, {C1})."""
    return json.loads(_fill((OPENCODE / "rows.json").read_text(), places))


def opencode_db(
    path: Path,
    places: dict[str, Path],
    *,
    shift_ms: int = 0,
    only: set[str] | None = None,
    skip: set[str] | None = None,
) -> dict[str, Any]:
    """An opencode.db (made by harness.agent_logs.opencode, with opencode's tables) holding the fixture's rows
    (those of `only` ids, or all but `skip`); every time moved by `shift_ms`."""
    rows = opencode_rows(places)
    base = rows["base_ms"] + shift_ms

    def wanted(rid: str) -> bool:
        return (only is None or rid in only) and (skip is None or rid not in skip)

    def ms(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ms(v) for k, v in value.items()}
        if isinstance(value, list):
            return [ms(v) for v in value]
        if isinstance(value, int) and not isinstance(value, bool) and value > 10**12:
            return value + shift_ms
        return value

    conn = oc.database(path)
    with conn:
        for s in rows["sessions"]:
            oc.put_session(
                conn,
                s["id"],
                s["project_id"],
                s["directory"],
                base + s["t0"] * 1000,
                base + s["t1"] * 1000,
                parent_id=s["parent_id"],
                slug=s["slug"],
                title=s["title"],
                version=s["version"],
            )
        for m in rows["messages"]:
            if wanted(m["id"]):
                data = ms(m["data"])
                created, updated = data["time"]["created"], base + m["t"] * 1000
                oc.put_message(conn, m["id"], m["session_id"], created, updated, data)
        for p in rows["parts"]:
            if wanted(p["id"]):
                at = base + p["t"] * 1000
                data = ms(p["data"])
                oc.put_part(conn, p["id"], p["message_id"], p["session_id"], at, at, data)
    conn.close()
    return rows


def opencode_legacy(storage: Path, places: dict[str, Path]) -> Path:
    """The legacy JSON tree under `storage`; returns its session file."""
    for src in (OPENCODE / "storage").rglob("*.json"):
        dst = storage / src.relative_to(OPENCODE / "storage")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(_fill(src.read_text(), places))
    return next((storage / "session").rglob("ses_*.json"))


def copilot_workspace(user_dir: Path, project: Path, ws_id: str = "5d1e0c4b9a8f") -> Path:
    """`<Code User>/workspaceStorage/<id>/` of `project` holding the fixture's chat session log,
    an older `.json` session and the extension's hook transcript of a third session."""
    ws = copilot.workspace_dir(user_dir, project, ws_id)
    (ws / "chatSessions").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(
        COPILOT / "chat-session.jsonl", ws / "chatSessions" / f"{COPILOT_SESSION}.jsonl"
    )
    shutil.copyfile(
        COPILOT / "chat-session-old.json", ws / "chatSessions" / f"{COPILOT_OLD_SESSION}.json"
    )
    tr = ws / "GitHub.copilot-chat" / "transcripts"
    tr.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(COPILOT / "hook-transcript.jsonl", tr / f"{COPILOT_HOOK_SESSION}.jsonl")
    return ws


def open_app(tmp_path: Path) -> Iterator[Any]:
    """An App on a database in `tmp_path`, the hash embedder, owner `tester` (in process)."""
    import msgspec

    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    cfg = load_config(None, {"db": str(tmp_path / "m.db"), "embedder": "hash"})
    cfg = msgspec.structs.replace(cfg, catch_up_indexing=False, owner_id="tester")
    a = App(cfg, setup_logging("warning"))
    a.start()
    a.embeddings.wait_ready(30)
    yield a
    a.close()


running_app = contextlib.contextmanager(open_app)
"""`with running_app(tmp_path) as app:` - the same app, closed at the block's end (to open the
database again, as a restart does)."""


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    yield from open_app(tmp_path)


class LogRead(NamedTuple):
    events: list[Parsed]
    state: ParseState
    records: int  # records read (a line of a JSONL log, a message, a row)
    malformed: int  # of them, those the adapter could not read
    end: int  # where the next read would start


def read_log(
    adapter: Adapter,
    path: Path,
    *,
    start: int = 0,
    state: ParseState | None = None,
    finish: bool = True,
) -> LogRead:
    """Every record of a log from `start` through the adapter alone, in the batches ingest
    reads, and (`finish`) what the adapter holds at the end: the one way the adapter tests
    read a log."""
    state = state or ParseState()
    adapter.begin(str(path), state)
    out: list[Parsed] = []
    pos, records, bad = start, 0, 0
    while batch := list(adapter.records(str(path), pos, 1 << 20)):
        for rec in batch:
            records += 1
            pos = rec.end
            if rec.data is None:
                bad += rec.malformed
                continue
            out += adapter.parse(rec.data, state)
    if finish:
        out += adapter.finish(state)
    return LogRead(out, state, records, bad, pos)


def parse_all(
    adapter: Adapter, path: Path, *, finish: bool = True
) -> tuple[list[Parsed], ParseState, int]:
    """Every event of a log through the adapter alone, its state, its malformed records."""
    r = read_log(adapter, path, finish=finish)
    return r.events, r.state, r.malformed


def events_of(parsed: list[Any]) -> list[tuple[Any, ...]]:
    """(role, kind, tool, text or summary, command, exit code, error, rejected, origin)."""
    return [
        (
            p.event.role,
            p.event.kind,
            p.event.tool_name,
            p.event.text or p.event.summary,
            p.event.command,
            p.event.exit_code,
            p.event.is_error,
            p.event.rejected,
            p.event.origin,
        )
        for p in parsed
    ]
