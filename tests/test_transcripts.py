"""Claude Code and Codex session logs: adapters, cursors, and ingestion through the service."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.rpc_client import Server
from reos_memory.squirrel import api
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import ParseState
from reos_memory.squirrel.ingest.claude_code import ClaudeCode
from reos_memory.store import episodes as episode_sql
from reos_memory.store import sessions as session_sql
from tests.agent_fixtures import open_app

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT.parent / "shared" / "formats"
SPOTTER = FORMATS / "claude-code" / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SUBAGENT = SPOTTER.with_suffix("") / "subagents" / "agent-a881341.jsonl"
SHORT = FORMATS / "claude-code" / "spotter" / "short.jsonl"
VIEWER = (
    FORMATS / "claude-code" / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
)
CODEX_NEW = (
    FORMATS
    / "codex"
    / "codemie-code"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)
CODEX_OLD = (
    FORMATS
    / "codex"
    / "codemie-code"
    / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
)

needs_formats = pytest.mark.skipif(
    not FORMATS.is_dir(), reason="../shared/formats (the real session logs) is not beside the repo"
)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[object]:
    yield from open_app(tmp_path)


def counts(rep: tin.FileReport) -> dict[str, int]:
    return {k: v for k, v in rep.counts.items() if k.startswith("tool") or k == "errors"}


# -- the real logs: every one ingests, and its figures match the field notes -------------------


@needs_formats
def test_real_logs_ingest_and_match_the_field_notes(app) -> None:
    sq = app.squirrel  # type: ignore[attr-defined]
    reps = {Path(r.path).name: r for r in tin.ingest_paths(sq.ingest_deps, [str(FORMATS)])}
    assert len(reps) == 7
    assert all(r.malformed == 0 for r in reps.values())
    # Cursor's workspace database, a copy outside Cursor's folders, known by its chat keys; it
    # names no directory (its workspace.json is not beside it): nothing is stored and its cursor
    # stays until a project is named
    cursor = reps.pop("state.vscdb")
    assert cursor.agent == "cursor" and cursor.skipped_reason == tin.NO_PROJECT
    assert cursor.counts["no_project"] == 314 and cursor.lines == 0
    assert all(r.skipped_reason is None for r in reps.values())

    cc = reps[SPOTTER.name]  # Claude Code 2.1.39
    assert cc.agent == "claude-code"
    assert cc.counts["tool_calls"] == 186
    assert {k: cc.counts[f"tool:{k}"] for k in ("Bash", "Read", "Edit", "Write", "Task")} == {
        "Bash": 79,
        "Read": 42,
        "Edit": 35,
        "Write": 13,
        "Task": 1,
    }
    assert cc.counts["errors"] == 7
    assert cc.counts["compactions"] == 1 and cc.counts["compact_summaries"] == 1
    assert cc.counts["interrupts"] == 1

    sub = reps[SUBAGENT.name]  # its subagent: attributed to the parent session
    assert sub.session_id == cc.session_id == "258c7280-ae70-4798-800f-63464d01a85d"
    assert sub.counts["tool:WebFetch"] == 2

    short = reps[SHORT.name]  # 2.1.38: two calls, both rejected by the user
    assert short.counts["tool_calls"] == 2 and short.counts["errors"] == 2

    old = reps[VIEWER.name]  # Claude Code 1.0.98: summary line, inline sidechains
    assert old.counts["tool_calls"] == 167 and old.counts["errors"] == 23
    assert {k: old.counts[f"tool:{k}"] for k in ("Write", "Edit", "MultiEdit", "Bash", "Task")} == {
        "Write": 33,
        "Edit": 8,
        "MultiEdit": 3,
        "Bash": 61,
        "Task": 5,
    }
    assert old.counts["subagent_records"] == 405

    new = reps[CODEX_NEW.name]  # Codex 0.125
    assert new.agent == "codex"
    assert {k: new.counts[f"tool:{k}"] for k in ("exec_command", "write_stdin", "apply_patch")} == {
        "exec_command": 43,
        "write_stdin": 54,
        "apply_patch": 3,
    }
    assert new.counts["errors"] == 4  # the four non-zero exit codes
    oldx = reps[CODEX_OLD.name]  # Codex 0.77: the `shell` tool
    assert (
        oldx.counts["tool:shell"] == 3 and oldx.session_id == "019b7f94-51b4-7593-922e-ba12b5b73b52"
    )

    # the project comes from cwd (git top level when there is one), not the directory name
    assert cc.project_id is not None and cc.project_id.startswith("spotter-gqc-")
    assert old.project_id is not None and old.project_id.startswith("Demo-")

    # what the session found out is learned (the SQLite migration trap, the LiveView sandbox),
    # with the project's checks; the failing test's own Read/Edit is never called a fix, and
    # four failures alone make no emergency guard
    mems = sq.list_memories(
        api.MemoryListParams(
            project_id=cc.project_id,
            include_global=False,
            statuses=["provisional", "active"],
            limit=50,
        )
    ).memories
    texts = [m.text for m in mems]
    assert any("SQLite" in t and "migration" in t for t in texts), texts
    assert any("sandbox" in t.lower() for t in texts), texts
    assert any(m.key == "project.commands.checks" and "`mix test`" in m.text for m in mems)
    assert not any("what worked" in t or "/home/" in t for t in texts)
    assert not any(m.tier == "emergency" for m in mems)

    # and again: nothing new (the sessions end now, whatever the files' age)
    again = tin.ingest_paths(sq.ingest_deps, [str(FORMATS)], tin.Options(session_end=True))
    assert sum(r.lines + r.events for r in again) == 0
    demo = sq.list_memories(
        api.MemoryListParams(
            project_id=old.project_id, include_global=False, statuses=["provisional"], limit=50
        )
    ).memories
    # Edit failing until the file was read is Claude Code's own rule, not the project's
    assert not any("read yet" in m.text or "tool_use_error" in m.text for m in demo)
    eps = sq.list_episodes(api.EpisodeListParams(project_id=old.project_id, limit=10)).episodes
    assert [e.outcome for e in eps] == ["written"]  # it was read, and judged


@needs_formats
def test_codex_test_runs_carry_exit_codes_and_outcomes(app) -> None:
    sq = app.squirrel  # type: ignore[attr-defined]
    rep = tin.ingest_file(sq.ingest_deps, str(CODEX_NEW), tin.Options(session_end=True))
    eps = sq.list_episodes(api.EpisodeListParams(project_id=rep.project_id, limit=10)).episodes
    full = [sq.get_episode(ep.id).episode for ep in eps]
    events = [e for ep in full for e in ep.events]
    runs = [
        e for e in events if e["kind"] == "tool_result" and "npm test" in (e.get("command") or "")
    ]
    assert runs, "the npm test runs of the red-green session"
    assert runs[0]["exit_code"] == 1 and runs[0].get("test") == "failed"
    assert runs[-1]["exit_code"] == 0 and runs[-1].get("test") == "passed"
    assert any(ep.stats.tests_final_status == "passed" for ep in full)


@needs_formats
def test_subagent_prompts_are_not_user_requests() -> None:
    """The Task prompts of inline sidechains (written by the parent agent) never count as what
    the user typed; the typed requests do."""
    adapter, state = ClaudeCode(), ParseState()
    prompts, said = set(), []
    for line in VIEWER.read_bytes().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant":
            for b in rec["message"]["content"]:
                if b.get("type") == "tool_use" and b["name"] == "Task":
                    prompts.add(b["input"]["prompt"].strip())
        said += [p.event.text for p in adapter.parse(rec, state) if p.event.role == "user"]
    assert len(prompts) == 5
    assert said and not prompts & {s.strip() for s in said if s}
    assert not any(s and s.startswith("<command-") for s in said)


# -- cursors: idempotent, appended lines, partial lines, rewrites, compression -----------------


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@needs_formats
def test_cursor_reads_each_line_exactly_once_across_appends(app, tmp_path: Path) -> None:
    sq = app.squirrel  # type: ignore[attr-defined]
    whole = tin.ingest_file(
        sq.ingest_deps, str(_copy(SPOTTER, tmp_path / "a")), tin.Options(session_end=False)
    )

    lines = _lines(SPOTTER)
    part = tmp_path / "b" / SPOTTER.name
    part.parent.mkdir()
    # written in pieces, the last piece cut in the middle of a line (an agent still writing)
    cuts = [0, 300, 301, 900, 1500, len(lines)]
    total = tin.FileReport(str(part))
    with open(part, "wb") as f:
        for a, b in itertools.pairwise(cuts):
            chunk = b"".join(lines[a:b])
            half = len(chunk) // 2 if b == len(lines) else len(chunk)
            f.write(chunk[:half])
            f.flush()
            rep = tin.ingest_file(sq.ingest_deps, str(part), tin.Options(session_end=False))
            total.lines += rep.lines
            total.events += rep.events
            if half < len(chunk):
                f.write(chunk[half:])
                f.flush()
                rep = tin.ingest_file(sq.ingest_deps, str(part), tin.Options(session_end=False))
                total.lines += rep.lines
                total.events += rep.events
    assert total.lines == whole.lines == len(lines)
    assert total.events == whole.events
    assert tin.ingest_file(sq.ingest_deps, str(part), tin.Options(session_end=False)).lines == 0


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / src.name
    shutil.copyfile(src, dst)
    return dst


@needs_formats
def test_partial_last_line_waits_and_a_rewrite_is_detected(app, tmp_path: Path) -> None:
    sq = app.squirrel  # type: ignore[attr-defined]
    lines = _lines(SHORT)
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"".join(lines[:5]) + lines[5][:40])
    rep = tin.ingest_file(sq.ingest_deps, str(f), tin.Options(session_end=False))
    assert rep.lines == 5  # the cut line is not consumed
    f.write_bytes(b"".join(lines))
    rep = tin.ingest_file(sq.ingest_deps, str(f), tin.Options(session_end=False))
    assert rep.lines == len(lines) - 5 and not rep.rewritten
    # the same path now holds another session: detected, read from the start
    f.write_bytes(b"".join(_lines(CODEX_OLD)))
    rep = tin.ingest_file(sq.ingest_deps, str(f), tin.Options(session_end=False))
    assert rep.rewritten and rep.lines == len(_lines(CODEX_OLD))
    # truncated to less than was read: also a rewrite
    f.write_bytes(b"".join(_lines(CODEX_OLD)[:3]))
    rep = tin.ingest_file(sq.ingest_deps, str(f), tin.Options(session_end=False))
    assert rep.rewritten and rep.lines == 3


@needs_formats
def test_zstd_rollout_and_hostile_lines(app, tmp_path: Path) -> None:
    import zstandard

    sq = app.squirrel  # type: ignore[attr-defined]
    day = tmp_path / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    z = day / (CODEX_NEW.name + ".zst")
    z.write_bytes(zstandard.ZstdCompressor().compress(CODEX_NEW.read_bytes()))
    rep = tin.ingest_file(sq.ingest_deps, str(z), tin.Options(session_end=False))
    assert rep.agent == "codex" and rep.lines == len(_lines(CODEX_NEW))
    assert rep.counts["tool:exec_command"] == 43 and rep.counts["errors"] == 4
    assert tin.ingest_file(sq.ingest_deps, str(z), tin.Options(session_end=False)).lines == 0

    # malformed lines, a newer record type, odd shapes: counted and skipped, never fatal
    hostile = tmp_path / "hostile.jsonl"
    good = _lines(SHORT)
    junk = [
        b"{not json\n",
        b"\xff\xfe\x00garbage\n",
        b"[1, 2, 3]\n",
        b'{"type": "hologram", "sessionId": "x", "payload2": 1}\n',
        b'{"type": "user", "message": "not an object", "sessionId": "55604662-cf2a-4331-851a-ec234028f8ca"}\n',
        b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "input": 5}]}, "sessionId": "55604662-cf2a-4331-851a-ec234028f8ca"}\n',
        b"\n",
    ]
    hostile.write_bytes(good[0] + b"".join(junk) + b"".join(good[1:]))
    rep = tin.ingest_file(sq.ingest_deps, str(hostile), tin.Options(session_end=True))
    assert rep.malformed == 3 and rep.lines == len(good) + len(junk)
    assert rep.counts["skipped"] >= 2 and rep.counts["errors"] == 2


def test_not_a_session_log_is_reported(app, tmp_path: Path) -> None:
    f = tmp_path / "notes.jsonl"
    f.write_text('{"hello": "world"}\n')
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(f))  # type: ignore[attr-defined]
    assert rep.skipped_reason and rep.lines == 0


# -- through the protocol ----------------------------------------------------------------------


@pytest.mark.e2e
@needs_formats
def test_ingest_transcript_over_stdio(tmp_path: Path, db_path: Path) -> None:
    log = _copy(SHORT, tmp_path / "logs")
    with Server(db_path) as srv:
        srv.wait_ready()
        first = srv.call("squirrel/ingest_transcript", {"path": str(log), "session_end": True})
        assert first["agent"] == "claude-code" and first["lines"] == 15
        assert first["session_ended"] and first["episodes"]
        assert first["counts"]["errors"] == 2
        again = srv.call("squirrel/ingest_transcript", {"path": str(log)})
        assert again["lines"] == 0 and again["events"] == 0
        for bad, field in (
            ({"path": str(tmp_path / "missing.jsonl")}, "path"),
            ({"path": str(tmp_path)}, "path"),
            ({"path": str(log), "agent": "vim"}, "agent"),
            ({}, "path"),
        ):
            err = srv.error("squirrel/ingest_transcript", bad)
            assert err.code == -32602 and field in json.dumps(err.data or err.message), err
        status = srv.call("squirrel/status")
        assert status["transcripts"]["claude-code"]["files"] == 1
        assert os.path.exists(db_path)


# -- found in review: concurrent ingesters, Codex compression, hostile files -------------------


def _events_stored(app) -> int:
    def read(conn):
        ep = conn.execute(
            "SELECT coalesce(sum(json_array_length(events_json, '$.events')), 0) FROM episodes"
        ).fetchone()[0]
        pending = conn.execute("SELECT count(*) FROM squirrel_events").fetchone()[0]
        return ep + pending

    return app.db.read(read)


@needs_formats
def test_two_ingesters_on_one_file_read_each_line_once(app, tmp_path: Path) -> None:
    import threading

    from reos_memory.app import App
    from reos_memory.logs import setup_logging

    log = _copy(SPOTTER, tmp_path / "logs")
    other = App(app.config, setup_logging("warning"))  # type: ignore[attr-defined]
    other.start()
    try:
        errors: list[BaseException] = []

        def go(a) -> None:
            try:
                tin.ingest_file(a.squirrel.ingest_deps, str(log), tin.Options(session_end=False))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=go, args=(a,)) for a in (app, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
    finally:
        other.close()
    cur = app.db.read(
        lambda c: c.execute(  # type: ignore[attr-defined]
            "SELECT lines, events FROM transcript_cursors"
        ).fetchall()
    )
    assert cur == [(1863, 461)]  # 460 events and the compaction summary
    assert _events_stored(app) == 461


def _read_then_compressed(app: Any, tmp_path: Path, upto: int | None) -> tuple[Any, Path]:
    """The first 20 lines of a rollout read plain; then Codex compresses it (with its lines up
    to `upto`) and deletes the plain file. The report of reading the compressed one."""
    import zstandard

    sq = app.squirrel
    lines = _lines(CODEX_OLD)
    plain = tmp_path / CODEX_OLD.name
    plain.write_bytes(b"".join(lines[:20]))
    assert tin.ingest_file(sq.ingest_deps, str(plain), tin.Options(session_end=False)).lines == 20
    packed = tmp_path / (CODEX_OLD.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines[:upto])))
    plain.unlink()
    return tin.ingest_file(sq.ingest_deps, str(packed), tin.Options(session_end=False)), packed


@needs_formats
def test_codex_compressing_a_rollout_does_not_read_it_again(app, tmp_path: Path) -> None:
    lines = _lines(CODEX_OLD)
    rep, packed = _read_then_compressed(app, tmp_path, 20)
    assert rep.lines == 0 and not rep.rewritten
    # ... then resumes the session: decompressed, appended to, compressed again
    packed.unlink()
    plain = tmp_path / CODEX_OLD.name
    plain.write_bytes(b"".join(lines))
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(plain), tin.Options(session_end=False))
    assert rep.lines == len(lines) - 20 and not rep.rewritten
    assert _events_stored(app) == 7  # every event once (the session's 7)


@needs_formats
def test_a_rollout_compressed_with_lines_not_yet_read_goes_on_from_its_cursor(
    app, tmp_path: Path
) -> None:
    rep, _ = _read_then_compressed(app, tmp_path, None)  # more lines came before it was read
    assert rep.lines == len(_lines(CODEX_OLD)) - 20 and not rep.rewritten
    assert _events_stored(app) == 7


def test_hostile_files_spoil_only_themselves(app, tmp_path: Path) -> None:
    sq = app.squirrel  # type: ignore[attr-defined]
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "rollout-bad.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd garbage, not zstd")
    deep = root / "deep.jsonl"
    deep.write_bytes(b"[" * 200_000 + b"\n" + b'{"type":"summary","summary":"x"}\n')
    good = root / "good.jsonl"
    good.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s-good",
                "cwd": str(tmp_path),
                "message": {"role": "user", "content": "hello there"},
            }
        )
        + "\n"
    )
    reps = {Path(r.path).name: r for r in tin.ingest_paths(sq.ingest_deps, [str(root)])}
    assert reps["rollout-bad.jsonl.zst"].skipped_reason
    assert reps["deep.jsonl"].malformed == 1 and reps["deep.jsonl"].lines == 2
    assert reps["good.jsonl"].events == 1


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise() -> None:
    import io

    from reos_memory.squirrel.ingest.watch import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    rep = tin.FileReport("/logs/a.jsonl", lines=10, events=4)
    plain = io.StringIO()
    for i in range(1, 4):
        Progress(plain)(i, 3, rep)
    assert (
        plain.getvalue().count("\n") == 3
        and "/logs/a.jsonl: 10 lines, 4 events" in plain.getvalue()
    )
    tty = Tty()
    bar = Progress(tty)
    for i in range(1, 4):
        bar(i, 3, rep)
    out = tty.getvalue()
    assert out.startswith("\r[") and out.endswith("3/3 files\n") and "/logs/a.jsonl" not in out


def test_an_ingest_prepared_before_another_writer_moved_the_session_is_redone(
    app, tmp_path: Path
) -> None:
    """Events are compressed before the write lock is taken; when another writer appended to
    the session meanwhile, the commit works from the session as it is: nothing is lost, no
    sequence number is taken twice."""
    from reos_memory.models import EventIn
    from reos_memory.squirrel.ingest import episodes

    sq = app.squirrel  # type: ignore[attr-defined]
    proj = sq.project(None, str(tmp_path))
    owner = sq.owner(None, None)
    pol = sq.policy(proj.root)
    limits = sq.limits()

    def said(i: int) -> EventIn:
        return EventIn(role="user", kind="message", text=f"message {i} about the parser")

    mine = [said(i) for i in range(3)]
    stale = episodes.prepare(
        None,
        project_id=proj.id,
        owner=owner,
        session_id="s1",
        events=mine,
        session_end=False,
        limits=limits,
    )
    sq.ingest(
        api.IngestParams(
            project_id=proj.id, session_id="s1", events=[said(i) for i in range(10, 15)]
        ),
        process=False,
    )
    report = app.db.write(  # type: ignore[attr-defined]
        lambda c: episodes.store_session(c, proj, owner, "s1", mine, False, pol, limits, stale)
    )
    assert report.accepted == 3
    rows = app.db.read(
        lambda c: c.execute(  # type: ignore[attr-defined]
            "SELECT seq, event_json FROM squirrel_events WHERE session_id = 's1' ORDER BY seq"
        ).fetchall()
    )
    assert [r[0] for r in rows] == list(range(1, 9))
    texts = [json.loads(r[1])["text"] for r in rows]
    assert texts == [f"message {i} about the parser" for i in (10, 11, 12, 13, 14, 0, 1, 2)]
    sess = app.db.read(lambda c: session_sql.get_session(c, "s1"))  # type: ignore[attr-defined]
    assert sess["state"]["seq"] == 9 and sess["state"]["n"] == 8

    # prepared against the session as it still is: committed as prepared, not done again
    fresh = episodes.prepare(
        sess,
        project_id=proj.id,
        owner=owner,
        session_id="s1",
        events=[said(20)],
        session_end=False,
        limits=limits,
    )

    def again(*args, **kwargs):
        raise AssertionError("an unchanged session was prepared again inside the transaction")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(episodes, "prepare", again)
        app.db.write(  # type: ignore[attr-defined]
            lambda c: episodes.store_session(
                c, proj, owner, "s1", [said(20)], False, pol, limits, fresh
            )
        )
    seqs = app.db.read(
        lambda c: c.execute(  # type: ignore[attr-defined]
            "SELECT max(seq) FROM squirrel_events WHERE session_id = 's1'"
        ).fetchone()[0]
    )
    assert seqs == 9


# Two records as Claude Code 2.1.29 wrote them (a shared dataset session, paths as they were):
# the user's prompt, then the message of another tool's UserPromptSubmit hook that blocked it,
# written by Claude Code as a `user` record.
HOOK_BLOCKED_LINES = [
    '{"parentUuid":"4bddfc59-8db0-4119-b1aa-2eb274346fe0","isSidechain":false,"userType":"external","cwd":"/Users/gtrrz-victor/wks/test-cli/cli","sessionId":"1ecba475-5b18-4058-a0cb-e87703f6f792","version":"2.1.29","gitBranch":"gtrrz-victor/adds-entire-reset-command","type":"user","message":{"role":"user","content":"fix tests"},"uuid":"35ad7fb2-6a79-48d9-9f8d-8a9faeb5640a","timestamp":"2026-02-03T00:25:13.595Z","thinkingMetadata":{"maxThinkingTokens":31999},"todos":[],"permissionMode":"default"}',
    '{"parentUuid":"35ad7fb2-6a79-48d9-9f8d-8a9faeb5640a","isSidechain":false,"userType":"external","cwd":"/Users/gtrrz-victor/wks/test-cli/cli","sessionId":"1ecba475-5b18-4058-a0cb-e87703f6f792","version":"2.1.29","gitBranch":"gtrrz-victor/adds-entire-reset-command","type":"user","message":{"role":"user","content":"Operation stopped by hook: Another session is active: \\"[Request interrupted by user for tool use]\\"\\n\\nYou can continue here, but checkpoints from both sessions will be interleaved.\\n\\nTo resume the other session instead, exit Claude and run: claude -r 0a93878f-dc30-4a5d-882f-3cd81cd3d499\\n\\nTo suppress this warning in future sessions, run:\\n  entire enable --disable-multisession-warning\\n\\nPress the up arrow key to get your prompt back."},"uuid":"f139f56c-133b-441c-b93e-f15fe1650bfa","timestamp":"2026-02-03T00:25:14.150Z"}',
]


def test_a_hooks_blocking_message_is_not_the_users_words(app, tmp_path: Path) -> None:
    adapter, state = ClaudeCode(), ParseState()
    parsed = [
        p.event for line in HOOK_BLOCKED_LINES for p in adapter.parse(json.loads(line), state)
    ]
    assert [(e.role, e.text) for e in parsed if e.role == "user"] == [("user", "fix tests")]
    hook = [e for e in parsed if e.role != "user"]
    assert len(hook) == 1 and hook[0].role == "system" and hook[0].kind == "message"
    assert (
        hook[0].summary == "a hook stopped the operation: Another session is active:"
        ' "[Request interrupted by user for tool use]"'
    )
    assert state.counts["hook_messages"] == 1
    # the same as a text block, and a Stop hook's feedback
    for text in (
        "Operation stopped by hook: commit first",
        "Stop hook feedback:\n[lint]: fix it",
        "SubagentStop hook feedback: go on",
    ):
        rec = json.loads(HOOK_BLOCKED_LINES[1])
        rec["message"]["content"] = [{"type": "text", "text": text}]
        (ev,) = [p.event for p in adapter.parse(rec, state)]
        assert ev.role == "system" and ev.text is None

    # ingested: the episode's only request is the user's
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(HOOK_BLOCKED_LINES) + "\n")
    sq = app.squirrel  # type: ignore[attr-defined]
    rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=True))
    assert rep.counts["hook_messages"] == 1 and rep.episodes
    ep = sq.db.read(lambda c: episode_sql.get_episode(c, rep.learned()[0].episode_id))
    said = [e.get("text") or e.get("summary") for e in ep.events if e["role"] == "user"]
    assert said == ["fix tests"]
    assert not any("stopped by hook" in json.dumps(e) for e in ep.events if e["role"] == "user")
