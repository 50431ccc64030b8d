"""The local side of a team server, in process: the pull cache (pages applied with their cursor,
never touching a user's own memories), the outbox (order, refusal, the server down, the key
refused), usage reports, the HTTP client's retry rules and the key's configuration. The server
here is only ever a failure (httpx.MockTransport); the happy path runs against the real team
server in tests/test_team_local_e2e.py."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest

from reos_memory.config import ConfigError, load_config, team_api_key
from reos_memory.models import Memory, now_iso
from reos_memory.squirrel import team_api as wire
from reos_memory.squirrel.memory import cr_memory
from reos_memory.squirrel.memory.policy import load_policy
from reos_memory.squirrel.sync.client import ClientSettings, TeamCallError, TeamClient
from reos_memory.squirrel.sync.sync import Report, SyncSettings, TeamSync, _Moved
from reos_memory.store import memories as memory_sql
from reos_memory.store import team_cache as team_cache_sql

KEY = "rmk_0123456789abcdef_" + "s" * 43
SERVER = "http://team.test"
Handler = Callable[[httpx.Request], httpx.Response]


def _client(handler: Handler, **settings: Any) -> TeamClient:
    return TeamClient(
        ClientSettings(url=SERVER, **settings), KEY, transport=httpx.MockTransport(handler)
    )


def _sync(db, handler: Handler, **settings: Any) -> TeamSync:
    return TeamSync(db, None, _client(handler), SyncSettings(**settings))


def _down(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def _known(db, org: str = "org-1") -> team_cache_sql.SyncState:
    db.write(
        lambda c: team_cache_sql.remember_key(c, SERVER, org, "0123456789abcdef", None, "writer")
    )
    st = db.read(lambda c: team_cache_sql.sync_state(c, SERVER, "0123456789abcdef"))
    assert st is not None
    return st


def _team_memory(mid: str, text: str, version: int = 1, **over: Any) -> wire.TeamMemory:
    now = now_iso()
    fields: dict[str, Any] = {
        "id": mid, "project_id": "proj-1", "scope": "project", "owner_type": "team",
        "owner_id": "team-1", "kind": "note", "tier": "long_term", "key": None, "text": text,
        "status": "active", "confidence": None, "expires_at": None, "created_at": now,
        "updated_at": now, "version": version,
    }  # fmt: skip
    fields.update(over)
    return wire.TeamMemory(**fields)


def _page(next_seq: int, *changes: tuple[str, str, wire.TeamMemory | None]) -> wire.PullResult:
    out = [
        wire.Change(
            seq=(seq := next_seq - len(changes) + i + 1),
            op=op,  # type: ignore[arg-type]
            memory_id=mid,
            memory=m,
            receipt=f"r{seq}.{mid}" if op == "upsert" else None,  # (the server signs it)
        )
        for i, (op, mid, m) in enumerate(changes)
    ]
    return wire.PullResult(changes=out, next_seq=next_seq, more=False)


def _own_memory(db, mid: str, text: str) -> None:
    now = now_iso()
    m = Memory(
        id=mid, project_id="proj-1", scope="project", owner_type="user", owner_id="me",
        kind="note", tier="long_term", key=None, text=text, status="active", confidence=None,
        expires_at=None, created_at=now, updated_at=now,
    )  # fmt: skip
    db.write(lambda c: memory_sql.insert_memory(c, m, None))


# -- the pull cache -------------------------------------------------------------------------------


def test_a_page_is_applied_with_its_cursor_and_updates_in_place(db):
    sync = _sync(db, _down)
    st = _known(db)
    rep = Report()
    sync._apply(st, 0, _page(2, ("upsert", "tmem-a", _team_memory("tmem-a", "use pnpm"))), rep)
    m = db.read(lambda c: memory_sql.get_memory(c, "tmem-a"))
    assert m is not None and m.owner_type == "team" and m.text == "use pnpm"
    st = sync.state()
    assert st is not None and st.last_seq == 2 and st.last_pull_at is not None
    newer = _team_memory("tmem-a", "use pnpm 9", version=2)
    sync._apply(st, 2, _page(3, ("upsert", "tmem-a", newer)), rep)
    assert db.read(lambda c: memory_sql.get_memory(c, "tmem-a")).text == "use pnpm 9"
    assert db.read(lambda c: team_cache_sql.cached_version(c, "tmem-a"))[2] == 2
    assert (rep.upserts, rep.forgets, rep.skipped) == (2, 0, 0)
    assert sync.state().last_seq == 3


def test_a_page_whose_cursor_moved_is_not_applied_twice(db):
    sync = _sync(db, _down)
    st = _known(db)
    page = _page(1, ("upsert", "tmem-a", _team_memory("tmem-a", "x")))
    sync._apply(st, 0, page, Report())
    with pytest.raises(_Moved):  # another process applied it: the stale cursor is refused
        sync._apply(st, 0, _page(1, ("forget", "tmem-a", None)), Report())
    assert db.read(lambda c: memory_sql.get_memory(c, "tmem-a")) is not None
    assert sync.state().last_seq == 1


def test_pull_never_touches_a_users_own_memories(db):
    sync = _sync(db, _down)
    st = _known(db)
    _own_memory(db, "explicit-mine", "my own note")
    # the server names an id this machine holds as a memory of its own: not overwritten, and a
    # forget of it erases nothing
    hostile = _team_memory("explicit-mine", "overwritten by the team")
    rep = Report()
    sync._apply(
        st, 0, _page(2, ("upsert", "explicit-mine", hostile), ("upsert", "tmem-b", _team_memory("tmem-b", "b"))), rep
    )  # fmt: skip
    sync._apply(sync.state(), 2, _page(3, ("forget", "explicit-mine", None)), rep)
    mine = db.read(lambda c: memory_sql.get_memory(c, "explicit-mine"))
    assert mine is not None and mine.text == "my own note" and mine.owner_type == "user"
    assert (rep.upserts, rep.skipped, rep.forgets) == (1, 1, 0)
    sync._apply(sync.state(), 3, _page(4, ("forget", "tmem-b", None)), rep)
    assert db.read(lambda c: memory_sql.get_memory(c, "tmem-b")) is None
    assert rep.forgets == 1 and sync.state().last_seq == 4


def test_another_orgs_cache_is_not_touched_by_this_orgs_pull(db):
    other = _sync(db, _down)
    st_b = _known(db, "org-b")
    other._apply(st_b, 0, _page(1, ("upsert", "tmem-b", _team_memory("tmem-b", "b"))), Report())
    st_a = _known(db, "org-a")
    rep = Report()
    other._apply(st_a, 0, _page(1, ("forget", "tmem-b", None)), rep)
    other._apply(
        db.read(lambda c: team_cache_sql.sync_state(c, SERVER, "0123456789abcdef")),
        1,
        _page(2, ("upsert", "tmem-b", _team_memory("tmem-b", "taken over"))),
        rep,
    )
    assert db.read(lambda c: memory_sql.get_memory(c, "tmem-b")).text == "b"
    assert rep.skipped == 1 and rep.forgets == 0


def test_local_cr_memory_leaves_cached_team_memories_to_the_server(db):
    sync = _sync(db, _down)
    st = _known(db)
    old = now_iso(-400)
    stale = _team_memory(
        "tmem-old", "never used", created_at=old, updated_at=old, tier="short_term"
    )
    sync._apply(st, 0, _page(1, ("upsert", "tmem-old", stale)), Report())
    _own_memory(db, "explicit-mine", "mine")
    out = cr_memory.run(
        db, project_id=None, policy_for=lambda _p: load_policy(None, None), dry_run=True
    )
    assert "tmem-old" not in {d["memory_id"] for d in out.decisions}
    assert out.evaluated == 1


# -- the outbox -----------------------------------------------------------------------------------


def _params(text: str) -> wire.TeamMemoryAddParams:
    return wire.TeamMemoryAddParams(kind="note", text=text, owner_type="team", project_id="p")


def _item(db, key: str) -> team_cache_sql.OutboxItem:
    item = db.read(lambda c: team_cache_sql.outbox_item(c, key))
    assert item is not None
    return item


def test_the_server_down_keeps_every_item_pending_in_order(db):
    sync = _sync(db, _down)
    keys = [
        sync.enqueue("squirrel/memories/add", _params(f"t{i}")).idempotency_key for i in range(3)
    ]
    rep = sync.sync(2.0)
    assert rep.error is not None and rep.error.startswith("down:")
    assert [_item(db, k).state for k in keys] == ["pending"] * 3
    assert _item(db, keys[0]).attempts == 1 and _item(db, keys[1]).attempts == 0
    st = sync.status()
    assert st.outbox == {"pending": 3} and [p.idempotency_key for p in st.pending] == keys
    assert KEY not in json.dumps(msgspec.to_builtins(st))


def test_a_refused_item_is_kept_with_its_error_and_the_rest_go_on(db):
    sent: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        if body["method"] == "squirrel/memories/add" and body["params"]["text"] == "bad":
            err = {"code": -32602, "message": "Invalid params: nope - at `$.kind`",
                   "data": {"reason": "invalid_params", "field": "$.kind"}}  # fmt: skip
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": err})
        if body["method"] == "team/whoami":
            me = {
                "org_id": "org-1",
                "team_id": None,
                "role": "writer",
                "key_id": "0123456789abcdef",
            }
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": me})
        if body["method"] == "squirrel/changes/pull":
            page = {"changes": [], "next_seq": 0, "more": False}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": page})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"ok": 1}})

    sync = _sync(db, server)
    bad = sync.enqueue("squirrel/memories/add", _params("bad")).idempotency_key
    good = sync.enqueue("squirrel/memories/add", _params("good")).idempotency_key
    rep = sync.sync(5.0)
    assert rep.error is None and (rep.sent, rep.refused) == (1, 1) and rep.complete
    assert _item(db, bad).state == "refused" and "$.kind" in (_item(db, bad).last_error or "")
    assert _item(db, good).state == "done"
    assert sync.outcome(good).state == "sent" and sync.outcome(good).result == {"ok": 1}
    assert sync.outcome(bad).state == "refused"
    adds = [b for b in sent if b["method"] == "squirrel/memories/add"]
    assert [b["params"]["idempotency_key"] for b in adds] == [bad, good]
    sync.sync(5.0)  # a refused item is never sent again
    assert len([b for b in sent if b["method"] == "squirrel/memories/add"]) == 2
    assert sync.status().refused[0].idempotency_key == bad


def test_a_refused_key_stops_the_drain_and_keeps_the_items(db):
    sync = _sync(db, lambda r: httpx.Response(401, json={"error": "unauthorized"}))
    _known(db)
    key = sync.enqueue("squirrel/memories/add", _params("x")).idempotency_key
    rep = sync.sync(2.0)
    assert rep.error is not None and rep.error.startswith("refused_key:")
    assert _item(db, key).state == "pending"
    assert sync.context_info().status == "offline"


def test_an_item_the_server_keeps_failing_on_is_refused_after_max_attempts(db):
    def broken(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        err = {"code": -32603, "message": "Internal error", "data": {"incident": "abc"}}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": err})

    sync = _sync(db, broken, max_attempts=3)
    _known(db)
    key = sync.enqueue("squirrel/memories/add", _params("x")).idempotency_key
    for _ in range(2):
        sync.sync(2.0)
        assert _item(db, key).state == "pending"
    sync.sync(2.0)
    assert _item(db, key).state == "refused" and _item(db, key).attempts == 3


def test_usage_is_reported_once_through_the_outbox(db):
    sync = _sync(db, _down)
    st = _known(db)
    sync._apply(st, 0, _page(1, ("upsert", "tmem-a", _team_memory("tmem-a", "a"))), Report())
    db.write(lambda c: memory_sql.count_opportunities(c, ["tmem-a"]))
    db.write(lambda c: memory_sql.count_uses(c, ["tmem-a"], now_iso()))
    db.write(lambda c: memory_sql.add_regret(c, ["tmem-a"], 1.5))
    sync._queue_usage(st)
    sync._queue_usage(st)  # nothing new: nothing queued
    items = db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))
    assert [i.method for i in items] == ["squirrel/usage/report"]
    body = msgspec.json.decode(items[0].params, type=wire.UsageParams)
    (u,) = body.items
    assert (u.memory_id, u.context_id, u.opportunities, u.uses, u.regret_hits) == (
        "tmem-a", "r1.tmem-a", 1, 1, 1,
    )  # fmt: skip
    assert u.regret_saved == 1.5
    assert body.idempotency_key == items[0].idempotency_key
    db.write(lambda c: memory_sql.count_opportunities(c, ["tmem-a"]))
    sync._queue_usage(st)  # one report waits unsent: the new count waits for the next one
    assert len(db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))) == 1
    db.write(lambda c: team_cache_sql.finish(c, items[0].id, "done", now_iso(), "{}", None))
    sync._queue_usage(st)
    (later,) = db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))
    (u2,) = msgspec.json.decode(later.params, type=wire.UsageParams).items
    assert (u2.opportunities, u2.uses, u2.regret_hits) == (1, 0, 0)


def test_usage_of_a_memory_cached_without_a_receipt_waits_for_the_pull_that_brings_one(db):
    """A memory cached before receipts (or from a server that gives none) has no receipt to
    name: its counts wait, nothing is lost, and the pull that brings it again with one lets
    them be reported."""
    sync = _sync(db, _down)
    st = _known(db)
    mem = _team_memory("tmem-b", "b")
    bare = wire.PullResult(
        changes=[wire.Change(seq=1, op="upsert", memory_id="tmem-b", memory=mem)],
        next_seq=1,
        more=False,
    )
    sync._apply(st, 0, bare, Report())
    db.write(lambda c: memory_sql.count_opportunities(c, ["tmem-b"]))
    db.write(lambda c: memory_sql.count_uses(c, ["tmem-b"], now_iso()))
    sync._queue_usage(st)
    assert db.read(lambda c: team_cache_sql.pending(c, SERVER, 10)) == []
    sync._apply(st, 1, _page(2, ("upsert", "tmem-b", mem)), Report())
    sync._queue_usage(st)
    (item,) = db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))
    (u,) = msgspec.json.decode(item.params, type=wire.UsageParams).items
    assert (u.memory_id, u.context_id, u.opportunities, u.uses) == ("tmem-b", "r2.tmem-b", 1, 1)


def test_usage_a_replaced_key_could_not_prove_is_owed_again_and_its_receipts_renewed(db):
    """A machine whose key was replaced holds the old key's receipts: the server counts none of
    them (`not_received`). Those counts are owed again (nothing lost), the receipts dropped and
    the cursor sent back to the start, so the next pull brings the new key's; a new key id seen
    at whoami does the same for every cached memory at once."""
    replies: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(
            200, json={"jsonrpc": "2.0", "id": body["id"], "result": replies.pop(0)}
        )

    sync = _sync(db, server)
    st = _known(db)
    sync._apply(st, 0, _page(5, ("upsert", "tmem-a", _team_memory("tmem-a", "a"))), Report())
    db.write(lambda c: memory_sql.count_opportunities(c, ["tmem-a"]))
    db.write(lambda c: memory_sql.count_uses(c, ["tmem-a"], now_iso()))
    sync._queue_usage(st)
    (item,) = db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))
    replies.append({"applied": 0, "unknown": [], "clipped": [], "not_received": ["tmem-a"]})
    sync._send(item, time.monotonic() + 5, Report())
    assert db.read(lambda c: team_cache_sql.pending(c, SERVER, 10)) == []
    st = db.read(lambda c: team_cache_sql.sync_state(c, SERVER, "0123456789abcdef"))
    assert st is not None and st.last_seq == 0
    sync._queue_usage(st)  # no receipt yet: waits
    assert db.read(lambda c: team_cache_sql.pending(c, SERVER, 10)) == []
    sync._apply(st, 0, _page(6, ("upsert", "tmem-a", _team_memory("tmem-a", "a"))), Report())
    sync._queue_usage(st)
    (again,) = db.read(lambda c: team_cache_sql.pending(c, SERVER, 10))
    (u,) = msgspec.json.decode(again.params, type=wire.UsageParams).items
    assert (u.context_id, u.opportunities, u.uses) == ("r6.tmem-a", 1, 1)
    # another key id for the same org: every receipt goes, the cursor goes back to the start
    db.write(
        lambda c: team_cache_sql.remember_key(
            c, SERVER, "org-1", "fedcba9876543210", None, "writer"
        )
    )
    st2 = db.read(lambda c: team_cache_sql.sync_state(c, SERVER, "fedcba9876543210"))
    assert st2 is not None and st2.last_seq == 0
    receipts = db.read(lambda c: c.execute("SELECT receipt FROM team_memories").fetchall())
    assert receipts == [(None,)]


# -- the client -----------------------------------------------------------------------------------


def test_503_and_429_are_retried_after_retry_after_then_given_up(db):
    calls: list[float] = []

    def busy(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        if len(calls) < 3:
            return httpx.Response(503 if len(calls) == 1 else 429, headers={"Retry-After": "0.2"})
        body = json.loads(request.content)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"a": 1}})

    client = _client(busy)
    assert client.call_raw("team/whoami", {}) == {"a": 1}
    assert len(calls) == 3 and calls[1] - calls[0] >= 0.19 and calls[2] - calls[1] >= 0.19
    always = _client(lambda r: httpx.Response(503, headers={"Retry-After": "3600"}), max_retries=5)
    t0 = time.monotonic()
    with pytest.raises(TeamCallError) as err:
        always.call_raw("team/whoami", {}, deadline=time.monotonic() + 0.5)
    assert err.value.kind == "down" and time.monotonic() - t0 < 0.5  # never waits past it
    capped = _client(lambda r: httpx.Response(429, headers={"Retry-After": "999"}),
                     max_retries=1, max_retry_wait_s=0.1)  # fmt: skip
    with pytest.raises(TeamCallError) as err:
        capped.call_raw("team/whoami", {})
    assert err.value.retry_after == 0.1


def test_errors_come_back_typed():
    with pytest.raises(TeamCallError) as err:
        _client(_down).call_raw("team/whoami", {})
    assert err.value.kind == "down"
    with pytest.raises(TeamCallError) as err:
        _client(lambda r: httpx.Response(401)).call_raw("team/whoami", {})
    assert err.value.kind == "refused_key"
    with pytest.raises(TeamCallError) as err:
        _client(lambda r: httpx.Response(413)).call_raw("team/whoami", {})
    assert err.value.kind == "bad_request" and err.value.code == 413
    with pytest.raises(TeamCallError) as err:
        _client(lambda r: httpx.Response(502)).call_raw("team/whoami", {})
    assert err.value.kind == "down"
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"<html>")

    with pytest.raises(TeamCallError) as err:
        _client(record).call_raw("team/whoami", {})
    assert err.value.kind == "down" and KEY not in str(err.value)
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert seen[0].url == "http://team.test/rpc"


# -- configuration --------------------------------------------------------------------------------


def test_the_key_file_must_be_private(tmp_path, monkeypatch):
    monkeypatch.delenv("REOS_TEAM_API_KEY", raising=False)
    key_file = tmp_path / "team.key"
    key_file.write_text(KEY + "\n")
    os.chmod(key_file, 0o644)
    over = {"db": str(tmp_path / "m.db"), "team_server_url": SERVER}
    with pytest.raises(ConfigError) as err:
        load_config(None, {**over, "team_api_key_file": str(key_file)})
    assert "0644" in str(err.value) and "chmod 600" in str(err.value)
    assert KEY not in str(err.value)
    os.chmod(key_file, 0o600)
    cfg = load_config(None, {**over, "team_api_key_file": str(key_file)})
    assert team_api_key(cfg) == KEY
    monkeypatch.setenv("MY_TEAM_KEY", "rmk_aa_bb")
    cfg = load_config(None, {**over, "team_api_key_env": "MY_TEAM_KEY"})
    assert team_api_key(cfg) == "rmk_aa_bb"
    with pytest.raises(ConfigError, match="credentials"):
        load_config(None, {**over, "team_server_url": "http://me:pw@team.test"})
    with pytest.raises(ConfigError, match="http"):
        load_config(None, {**over, "team_server_url": "ftp://team.test"})


def test_a_server_that_never_answers_holds_a_context_only_for_its_short_timeout(db):
    import socket

    silent = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    port = silent.getsockname()[1]
    try:
        client = TeamClient(ClientSettings(url=f"http://127.0.0.1:{port}", read_timeout_s=30), KEY)
        sync = TeamSync(db, None, client, SyncSettings(context_timeout_s=0.5))
        sync.enqueue("squirrel/memories/add", _params("waits"))
        t0 = time.monotonic()
        info = sync.context_info()
        assert time.monotonic() - t0 < 5, "the context waited for the server's whole timeout"
        assert info.status == "offline" and info.error and info.error.startswith("down")
        # tried again only after the pull interval, not at every request
        tried = sync._attempted
        assert sync.context_info().status == "offline" and sync._attempted == tried
    finally:
        silent.close()


def test_every_method_a_machine_sends_is_one_the_team_server_answers():
    """The sync client and outbox call the team server by method name (a remote wire); the
    names are one Literal, so a misspelled one fails mypy, and each is in the server's table."""
    from typing import get_args

    from reos_memory.interfaces.team_http.registry import registry
    from reos_memory.interfaces.team_http.server import openrpc_document
    from reos_memory.squirrel.team_api import TeamMethod, team_method

    openrpc_document()  # imports every method module of the team server
    sent = set(get_args(TeamMethod))
    assert sent and sent <= set(registry.methods), sent - set(registry.methods)
    with pytest.raises(ValueError, match="not a team server method"):
        team_method("squirrel/memories/ad")
