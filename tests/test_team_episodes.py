"""Episodes shared with the team's Memory Writer (`team_share_episodes`, issue 21), in process:
the stored events turned back into EventIn records compress to the same stats and prefilter
verdict on real Claude Code sessions, an episode over the server's limits is trimmed keeping
errors and what the user said, the outbox item's idempotency key comes from the local episode
(queued twice, sent once), and nothing is queued while the setting is off. The real team
server's side is tests/test_team_local_e2e.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from reos_memory.squirrel import api
from reos_memory.squirrel.ingest.episodes import Limits, compress_episode, prefilter
from reos_memory.squirrel.sync import episodes as shared
from reos_memory.store import episodes as episode_sql
from reos_memory.store import team_cache as team_cache_sql

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT.parent / "shared" / "formats" / "claude-code"
LOGS = [
    CLAUDE / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    CLAUDE / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
]
KEY = "rmk_0123456789abcdef_" + "s" * 43
needs_formats = pytest.mark.skipif(
    not CLAUDE.is_dir(), reason="../shared/formats (the real session logs) is not beside the repo"
)


def _closed_port() -> int:
    """A port nothing listens on: the team server is down for these tests."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: bool) -> Any:
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    monkeypatch.setenv("REOS_TEAM_API_KEY", KEY)
    over = {"db": str(tmp_path / "m.db"), "embedder": "hash", "writer": "rules",
            "team_server_url": f"http://127.0.0.1:{_closed_port()}",
            "team_share_episodes": share}  # fmt: skip
    cfg = msgspec.structs.replace(load_config(None, over), catch_up_indexing=False)
    a = App(cfg, setup_logging("warning"))
    a.start()
    return a


@pytest.fixture
def sharing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    a = _app(tmp_path, monkeypatch, share=True)
    yield a
    a.close()


def _ingest(a: Any, events: list[dict[str, Any]]) -> api.IngestResult:
    p = msgspec.convert(
        {"project_id": "proj-pay", "session_id": "s-1", "events": events, "session_end": True},
        api.IngestParams,
    )
    return a.squirrel.ingest(p)  # type: ignore[no-any-return]


FAILING = [
    {"role": "user", "kind": "message", "text": "run the payment tests"},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "pytest -q",
     "call_id": "toolu_01AbCdEfGh"},
    {"role": "tool", "kind": "tool_result", "call_id": "toolu_01AbCdEfGh", "exit_code": 1,
     "text": "E   ModuleNotFoundError: No module named 'stripe'\n1 failed"},
]  # fmt: skip


def _outbox(a: Any) -> list[team_cache_sql.OutboxItem]:
    server = a.squirrel.team.server
    return a.db.read(lambda c: team_cache_sql.items(c, server, "pending", 100, False))  # type: ignore[no-any-return]


def test_an_episode_worth_a_writer_call_is_queued_under_its_local_id_and_once(sharing):
    done = _ingest(sharing, FAILING)
    (ep,) = done.episodes
    assert ep.call_writer and ep.team is not None  # queued without reaching the (down) server
    key = f"episode:0123456789abcdef:{ep.episode_id}"
    assert (ep.team.state, ep.team.idempotency_key, ep.team.dropped_events) == ("queued", key, 0)
    again = shared.share(sharing.squirrel.team, sharing.db, ep.episode_id)
    assert again is not None and again.idempotency_key == key
    (item,) = _outbox(sharing)  # queued twice, one item: the server applies it once
    body = msgspec.json.decode(item.params, type=shared.wire.IngestEpisodeParams)
    assert (item.method, body.idempotency_key, body.project_id) == (shared.METHOD, key, "proj-pay")
    assert [e.role for e in body.events] == ["user", "assistant", "tool"]
    assert body.events[2].is_error and body.events[2].exit_code == 1


def test_an_episode_not_worth_a_call_is_not_queued(sharing):
    quiet = [{"role": "user", "kind": "message", "text": "hello"},
             {"role": "assistant", "kind": "message", "text": "Hi there."}]  # fmt: skip
    (ep,) = _ingest(sharing, quiet).episodes
    assert not ep.call_writer and ep.team is None and _outbox(sharing) == []


def test_sharing_is_off_by_default(tmp_path, monkeypatch):
    from reos_memory.config import Config

    assert Config().team_share_episodes is False
    a = _app(tmp_path, monkeypatch, share=False)
    try:
        assert a.squirrel.team is not None  # a server and a key, yet nothing is sent
        (ep,) = _ingest(a, FAILING).episodes
        assert ep.call_writer and ep.team is None and _outbox(a) == []
    finally:
        a.close()


def _event(i: int, **over: Any) -> dict[str, Any]:
    e = {"ts": f"2026-01-01T00:00:{i:02d}Z", "role": "assistant", "kind": "message",
         "summary": f"step {i} " + "x" * 200}  # fmt: skip
    return {**e, **over}


def test_trimming_keeps_errors_and_user_messages_and_drops_the_rest_first():
    events = [_event(i) for i in range(40)]
    events[3] = _event(3, role="user", text="why does it fail?", summary="why does it fail?")
    events[20] = _event(20, role="tool", kind="tool_result", error=True, error_line="E: boom")
    events[30] = _event(30, kind="tool_call", tool_name="Bash", command="make test")
    assert shared.fit(events, 5000, 10**6) == list(range(40))  # everything fits: all kept
    assert shared.fit(events, 3, 10**6) == [3, 20, 30]  # the count: the most informative stay
    size = sum(len(msgspec.json.encode(shared.to_event(e))) + 1 for e in events[35:])
    kept = shared.fit(events, 5000, size)
    rest = kept[3:]  # of the others, only the latest fit beside them
    assert kept[:3] == [3, 20, 30] and 0 < len(rest) <= 5 and rest == list(range(rest[0], 40))


def test_a_stored_episode_over_the_limits_says_how_much_was_left_out(sharing):
    (ep,) = _ingest(sharing, FAILING).episodes
    stored = sharing.db.read(lambda c: episode_sql.get_episode(c, ep.episode_id))
    params, dropped = shared.params_for(stored, shared.Limits(max_events=2))
    assert dropped == 1 and [e.role for e in params.events] == ["user", "tool"]


@needs_formats
def test_real_episodes_round_trip_to_the_same_stats_and_prefilter_verdict(tmp_path, monkeypatch):
    a = _app(tmp_path, monkeypatch, share=False)
    try:
        for log in LOGS:
            a.squirrel.ingest_transcript(
                api.IngestTranscriptParams(path=str(log), session_end=True)
            )
        listed = a.db.read(
            lambda c: episode_sql.list_episodes(
                c, project_id=None, session_id=None, outcome=None, after_rowid=0, limit=1000
            )
        )
        assert len(listed) >= 3
        for _, row in listed:
            ep = a.db.read(lambda c, i=row.id: episode_sql.get_episode(c, i))
            events, stats = compress_episode(
                [shared.to_event(e) for e in ep.events], "2026-01-01T00:00:00Z"
            )
            verdict = prefilter(events, stats, Limits())
            assert stats == ep.stats, ep.id
            assert (verdict["call_writer"], verdict["reasons"]) == (
                ep.prefilter["call_writer"], ep.prefilter["reasons"]
            ), ep.id  # fmt: skip
    finally:
        a.close()


def test_an_episode_over_a_mebibyte_is_trimmed_to_a_body_the_server_takes():
    from reos_memory.models import Episode, EpisodeStats

    result = {"role": "tool", "kind": "tool_result", "command": "make build " + "y" * 280,
              "summary": "s" * 240, "raw_snippet": "z" * 400}  # fmt: skip
    events = [{**result, "ts": "2026-01-01T00:00:00Z"} for _ in range(1500)]
    events[700] = {**events[700], "error": True, "error_line": "E: the one failure"}
    ep = Episode(
        id="ep-big", project_id="proj-pay", session_id="s-1", owner_type="user", owner_id="u",
        start_ts="2026-01-01T00:00:00Z", end_ts="2026-01-01T00:00:00Z", processed=0,
        cut_reason="size_cap", outcome="pending", outcome_reason=None, attempts=0, prefilter={},
        stats=EpisodeStats(error_count=1, retry_loops=0, tests_final_status="not_run",
                           user_frustration="none"),
        event_count=len(events), created_at="2026-01-01T00:00:00Z", events=events,
    )  # fmt: skip
    assert sum(len(msgspec.json.encode(shared.to_event(e))) for e in events) > 1 << 20
    params, dropped = shared.params_for(ep, shared.Limits())
    params = msgspec.structs.replace(params, idempotency_key="episode:0123456789abcdef:ep-big")
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": 1, "method": shared.METHOD, "params": params}
    )
    assert len(body) <= 1 << 20 and dropped == len(events) - len(params.events) > 0
    assert any(e.is_error for e in params.events)  # the failure is kept
    msgspec.json.decode(msgspec.json.encode(params), type=shared.wire.IngestEpisodeParams)
