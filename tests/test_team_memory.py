"""Team memories over the team server's HTTP protocol (issue 21): a real `reos-memory team-server`
subprocess on an embedded PostgreSQL. Writes, versions (the later write wins, the earlier kept),
the change log a machine pulls, idempotent replays, usage reports, shares, and that every one of
them stays inside the key's org and team."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from reos_memory.store.team import connection as pg
from reos_memory.store.team import memories as pgsql
from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from tests.team_fixtures import ACTOR, Server

pytestmark = pytest.mark.e2e


class Org:
    """Two orgs; org A has teams backend and web, with keys of every kind."""

    def __init__(self, db: TeamDatabase) -> None:
        new = admin.create_key
        with db.connect() as conn:
            self.a = admin.create_org(conn, ACTOR, "acme").id
            self.b = admin.create_org(conn, ACTOR, "globex").id
            self.backend = admin.create_team(conn, ACTOR, "acme", "backend").id
            self.web = admin.create_team(conn, ACTOR, "acme", "web").id
            admin.create_team(conn, ACTOR, "globex", "backend")
            self.a_writer = new(conn, ACTOR, org="acme", role="writer")[0].key
            self.a_reader = new(conn, ACTOR, org="acme", role="reader")[0].key
            self.backend_writer = new(conn, ACTOR, org="acme", team="backend", role="writer")[0].key
            self.backend_reader = new(conn, ACTOR, org="acme", team="backend", role="reader")[0].key
            self.web_writer = new(conn, ACTOR, org="acme", team="web", role="writer")[0].key
            self.b_writer = new(conn, ACTOR, org="globex", role="writer")[0].key
            self.b_admin = new(conn, ACTOR, org="globex", role="admin")[0].key


@pytest.fixture(scope="module")
def db(team_db: TeamDatabase) -> TeamDatabase:
    return team_db


@pytest.fixture(scope="module")
def org(db: TeamDatabase) -> Org:
    return Org(db)


@pytest.fixture(scope="module")
def server(hash_team_server: Server, org: Org) -> Server:
    return hash_team_server


def add(server: Server, api_key: str, text: str, **extra: Any) -> dict[str, Any]:
    params = {"project_id": "proj-pay", "kind": "invariant", "text": text, **extra}
    return server.result(api_key, "squirrel/memories/add", params)  # type: ignore[no-any-return]


def test_a_team_writer_adds_a_memory_the_team_can_read_and_the_other_team_cannot(server, org):
    made = add(server, org.backend_writer, "Payment retries use the idempotency header X-Req")
    mem = made["memory"]
    assert mem["id"].startswith("tmem-") and mem["owner_type"] == "team"
    assert mem["owner_id"] == org.backend and mem["version"] == 1 and mem["seq"] >= 1
    got = server.result(org.backend_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["memory"]["text"] == mem["text"] and got["history"] == []
    assert server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    for key in (org.web_writer, org.b_writer):
        err = server.error(key, "squirrel/memories/get", {"memory_id": mem["id"]})
        assert err["code"] == -32004
        listed = server.result(key, "squirrel/memories/list", {})["memories"]
        assert mem["id"] not in {m["id"] for m in listed}


def test_a_reader_cannot_write_and_naming_another_team_or_org_is_not_found(server, org):
    err = server.error(org.backend_reader, "squirrel/memories/add",
                       {"project_id": "p", "kind": "note", "text": "x y z"})  # fmt: skip
    assert err["code"] == -32003 and err["data"]["role"] == "writer"
    err = server.error(org.backend_writer, "squirrel/memories/add",
                       {"project_id": "p", "kind": "note", "text": "x y z",
                        "owner_type": "team", "owner_id": "web"})  # fmt: skip
    assert err["code"] == -32004 and err["data"]["field"] == "$.owner_id"
    err = server.error(org.b_writer, "squirrel/memories/add",
                       {"project_id": "p", "kind": "note", "text": "x y z",
                        "owner_type": "org", "owner_id": org.a})  # fmt: skip
    assert err["code"] == -32004
    err = server.error(org.a_writer, "squirrel/memories/add",
                       {"project_id": "p", "kind": "note", "text": "x", "owner_type": "user"})  # fmt: skip
    assert err["code"] == -32602 and err["data"]["field"] == "$.owner_type"


def test_two_members_editing_one_memory_the_later_wins_and_the_earlier_is_history(server, org):
    mem = add(server, org.a_writer, "Deploys go out on Tuesdays", owner_type="team",
              owner_id="backend")["memory"]  # fmt: skip
    first = server.result(org.backend_writer, "squirrel/memories/update",
                          {"memory_id": mem["id"], "text": "Deploys go out on Wednesdays"})  # fmt: skip
    second = server.result(org.a_writer, "squirrel/memories/update",
                           {"memory_id": mem["id"], "text": "Deploys go out on Thursdays"})  # fmt: skip
    assert first["memory"]["version"] == 2 and second["memory"]["version"] == 3
    assert second["memory"]["seq"] > first["memory"]["seq"]
    got = server.result(org.backend_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["memory"]["text"] == "Deploys go out on Thursdays"
    assert [h["text"] for h in got["history"]] == [
        "Deploys go out on Wednesdays", "Deploys go out on Tuesdays",
    ]  # fmt: skip
    stale = server.error(org.backend_writer, "squirrel/memories/update",
                         {"memory_id": mem["id"], "text": "Fridays", "expected_version": 2})  # fmt: skip
    assert stale["code"] == -32009 and stale["data"]["version"] == 3


def test_a_replayed_write_with_its_idempotency_key_is_applied_once(server, org):
    params = {"project_id": "proj-pay", "kind": "pattern", "owner_type": "org",
              "text": f"Feature flags live in flags.yaml {uuid.uuid4().hex}",
              "idempotency_key": f"outbox-{uuid.uuid4().hex}"}  # fmt: skip
    first = server.result(org.a_writer, "squirrel/memories/add", params)
    again = server.result(org.a_writer, "squirrel/memories/add", params)
    assert again == first
    listed = server.result(org.a_reader, "squirrel/memories/list", {"limit": 1000})["memories"]
    assert sum(m["text"] == params["text"] for m in listed) == 1
    err = server.error(org.a_writer, "squirrel/memories/add", {**params, "text": "other text"})
    assert err["code"] == -32009 and err["data"]["field"] == "$.idempotency_key"
    # another key's idempotency keys are its own: the same string neither returns the first
    # key's reply (another team's memory) nor is refused as taken
    theirs = {
        **params,
        "owner_type": "team",
        "text": f"Web flags live in web.yaml {uuid.uuid4().hex}",
    }
    other = server.result(org.web_writer, "squirrel/memories/add", theirs)
    assert other["memory"]["id"] != first["memory"]["id"]
    assert other["memory"]["text"] == theirs["text"] and other["memory"]["owner_id"] == org.web
    assert server.result(org.web_writer, "squirrel/memories/add", theirs) == other


def test_pull_gives_each_change_in_order_and_forget_reaches_caches(server, org):
    start = server.result(org.backend_reader, "squirrel/changes/pull", {})["next_seq"]
    mem = add(server, org.backend_writer, "Use ruff format before pushing")["memory"]
    server.result(org.backend_writer, "squirrel/memories/deprecate", {"memory_id": mem["id"]})
    web = add(server, org.web_writer, "Web uses pnpm, never npm")["memory"]
    page = server.result(org.backend_reader, "squirrel/changes/pull", {"after_seq": start})
    ids = [c["memory_id"] for c in page["changes"]]
    assert mem["id"] in ids and web["id"] not in ids  # the other team's change is not seen
    change = next(c for c in page["changes"] if c["memory_id"] == mem["id"])
    assert change["op"] == "upsert" and change["memory"]["status"] == "deprecated"
    cursor = page["next_seq"]
    forgot = server.result(org.backend_writer, "squirrel/memories/forget", {"memory_id": mem["id"]})
    assert forgot["forgotten"] is True
    page = server.result(org.backend_reader, "squirrel/changes/pull", {"after_seq": cursor})
    assert [(c["op"], c["memory_id"], c["memory"]) for c in page["changes"]] == [
        ("forget", mem["id"], None)
    ]
    assert server.result(org.backend_reader, "squirrel/changes/pull",
                         {"after_seq": page["next_seq"]})["changes"] == []  # fmt: skip
    # another org's pull sees none of it
    other = server.result(org.b_writer, "squirrel/changes/pull", {})["changes"]
    assert not {mem["id"], web["id"]} & {c["memory_id"] for c in other}


def test_a_cursor_the_log_does_not_hold_is_told_to_pull_from_the_start(server, org):
    """A machine's cursor past the org's last change, or whose mark names another change than
    the log holds under that number (a database restored from an earlier backup): `reset`."""
    add(server, org.backend_writer, "Staging deploys wait for the smoke tests")
    page = server.result(org.backend_reader, "squirrel/changes/pull", {})
    while page["more"]:
        page = server.result(org.backend_reader, "squirrel/changes/pull",
                             {"after_seq": page["next_seq"], "after_mark": page["next_mark"]})  # fmt: skip
    cursor, mark = page["next_seq"], page["next_mark"]
    assert cursor > 0 and mark and not page["reset"]
    same = server.result(org.backend_reader, "squirrel/changes/pull",
                         {"after_seq": cursor, "after_mark": mark})  # fmt: skip
    assert same["changes"] == [] and not same["reset"] and same["next_mark"] == mark
    reset = {"changes": [], "next_seq": 0, "more": True, "next_mark": None, "reset": True}
    ahead = server.result(org.backend_reader, "squirrel/changes/pull", {"after_seq": cursor + 50})
    assert ahead == reset
    other = server.result(org.backend_reader, "squirrel/changes/pull",
                          {"after_seq": cursor, "after_mark": "0" * 32})  # fmt: skip
    assert other == reset


def test_usage_reports_count_once_and_only_for_memories_the_key_reaches(server, org):
    mem = add(server, org.backend_writer, "Cache keys are versioned with a v2 prefix")["memory"]
    other = add(server, org.b_writer, "Globex memory", owner_type="org")["memory"]
    got = server.delivery(org.backend_reader, mem["id"])
    report = {"idempotency_key": f"usage-{uuid.uuid4().hex}", "items": [
        {"memory_id": mem["id"], "context_id": got, "opportunities": 3, "uses": 2,
         "regret_hits": 1},
        {"memory_id": other["id"], "context_id": got, "uses": 5},
    ]}  # fmt: skip
    out = server.result(org.backend_reader, "squirrel/usage/report", report)
    assert out == {"applied": 1, "unknown": [other["id"]], "clipped": [], "not_received": []}
    assert server.result(org.backend_reader, "squirrel/usage/report", report) == out
    metrics = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert metrics["metrics"]["use_count"] == 2 and metrics["metrics"]["opportunities"] == 3
    got = server.result(org.b_admin, "squirrel/memories/get", {"memory_id": other["id"]})
    assert got["metrics"] is None


def test_usage_counts_only_by_the_receipt_of_a_delivery_of_the_memory_to_the_same_key(server, org):
    """Usage names the receipt a pull gave the key with the memory: a receipt made up, another
    key's, or one of this key's for another memory is not received and counts nothing; a report
    naming none is refused naming the field."""
    mem = add(server, org.backend_writer, f"Delivered use {uuid.uuid4().hex}")["memory"]
    other = add(server, org.backend_writer, f"Other use {uuid.uuid4().hex}")["memory"]
    mine = server.delivery(org.backend_reader, mem["id"])
    theirs = server.delivery(org.backend_writer, mem["id"])
    elsewhere = server.delivery(org.backend_reader, other["id"])  # this key's, another memory's
    assert len({mine, theirs, elsewhere}) == 3
    seq, mac = mine[1:].split(".")
    forged = f"r{int(seq) + 1}.{mac}"  # another change's number under the same signature

    def report(context_id: str) -> dict[str, Any]:
        return server.result(org.backend_reader, "squirrel/usage/report", {  # type: ignore[no-any-return]
            "idempotency_key": f"usage-{uuid.uuid4().hex}",
            "items": [{"memory_id": mem["id"], "context_id": context_id,
                       "opportunities": 7, "uses": 7}]})  # fmt: skip

    refused = {"applied": 0, "unknown": [], "clipped": [], "not_received": [mem["id"]]}
    for bad in (f"r{seq}.{'0' * 32}", theirs, elsewhere, forged, "not-a-receipt"):
        assert report(bad) == refused, bad
    got = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"] is None or got["metrics"]["use_count"] == 0
    assert report(mine)["applied"] == 1
    got = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"]["use_count"] == 7
    err = server.error(org.backend_reader, "squirrel/usage/report", {
        "idempotency_key": f"usage-{uuid.uuid4().hex}",
        "items": [{"memory_id": mem["id"], "uses": 1}]})  # fmt: skip
    assert err["code"] == -32602 and "context_id" in json.dumps(err)


def test_a_key_cannot_post_more_use_than_a_day_holds(server, org):
    """A reader key posting a million uses of a memory (to make CR-Memory promote it) counts
    the key's daily bound and no more, uses never above opportunities; a second report the same
    day adds nothing; another key has its own bound."""
    from reos_memory.team.memories import USAGE_DAILY_BOUND as bound

    mem = add(server, org.backend_writer, f"Bounded use {uuid.uuid4().hex}")["memory"]

    def report(key: str, **counts: int) -> dict[str, Any]:
        return server.result(key, "squirrel/usage/report", {  # type: ignore[no-any-return]
            "idempotency_key": f"usage-{uuid.uuid4().hex}",
            "items": [{"memory_id": mem["id"], "context_id": server.delivery(key, mem["id"]),
                       **counts}]})  # fmt: skip

    out = report(org.backend_reader, opportunities=10, uses=1_000_000, regret_hits=1_000_000)
    assert out["applied"] == 1 and out["clipped"] == [mem["id"]]
    got = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"]["use_count"] == 10 and got["metrics"]["opportunities"] == 10
    assert got["metrics"]["suspected_regret_hits"] == 10
    report(org.backend_reader, opportunities=1_000_000, uses=1_000_000)
    got = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"]["opportunities"] == bound and got["metrics"]["use_count"] == bound
    assert report(org.backend_reader, opportunities=5, uses=5)["clipped"] == [mem["id"]]
    report(org.backend_writer, opportunities=3, uses=3)  # another key: its own bound
    got = server.result(org.a_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"]["use_count"] == bound + 3


def test_a_share_is_proposed_by_a_reader_and_approved_by_a_writer_of_that_team(server, org):
    text = f"Run migrations with make migrate, never by hand {uuid.uuid4().hex[:6]}"
    share = server.result(org.backend_reader, "team/shares/propose",
                          {"text": text, "kind": "invariant", "project_id": "proj-pay",
                           "local_memory_id": "mem-local-1"})["share"]  # fmt: skip
    assert share["status"] == "pending" and share["team_id"] == org.backend
    for key in (org.web_writer, org.b_writer):
        err = server.error(key, "team/shares/approve", {"share_id": share["id"]})
        assert err["code"] == -32004
    err = server.error(org.backend_reader, "team/shares/approve", {"share_id": share["id"]})
    assert err["code"] == -32003
    pending = server.result(org.backend_writer, "team/shares/list", {})["shares"]
    assert share["id"] in {s["id"] for s in pending}
    done = server.result(org.backend_writer, "team/shares/approve", {"share_id": share["id"]})
    assert done["share"]["status"] == "approved" and done["memory"]["origin"] == "share"
    assert done["memory"]["text"] == text and done["memory"]["owner_id"] == org.backend
    again = server.error(org.backend_writer, "team/shares/reject", {"share_id": share["id"]})
    assert again["code"] == -32009


def test_secrets_are_redacted_again_by_the_server(server, org):
    secret = "sk-live-" + "Zq8" * 12
    mem = add(server, org.a_writer, f"The staging key is {secret} for payments", owner_type="org")
    assert secret not in mem["memory"]["text"] and "REDACTED" in mem["memory"]["text"]


EPISODE = [
    {"role": "user", "kind": "message", "text": "Run the payment tests"},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "npm test",
     "call_id": "c1"},
    {"role": "tool", "kind": "tool_result", "call_id": "c1", "is_error": True, "exit_code": 1,
     "text": "npm ERR! This project uses pnpm. Use pnpm instead of npm."},
    {"role": "user", "kind": "message",
     "text": "No, never use npm in this repo. Always use pnpm for installs and tests."},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "pnpm test",
     "call_id": "c2"},
    {"role": "tool", "kind": "tool_result", "call_id": "c2", "exit_code": 0,
     "text": "Tests: 42 passed. token=ghp_" + "a1B2" * 9},
]  # fmt: skip


def test_an_episode_from_a_members_machine_becomes_team_memories_once(server, org):
    params = {"project_id": "proj-web", "episode_id": f"ep-{uuid.uuid4().hex}",
              "events": EPISODE, "session_id": "s-1"}  # fmt: skip
    out = server.result(org.web_writer, "squirrel/ingest_episode", params)
    assert out["outcome"] == "written", out
    assert out["memory_ids"] and all(i.startswith("tmem-") for i in out["memory_ids"])
    texts = []
    for mid in out["memory_ids"]:
        m = server.result(org.web_writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
        assert m["origin"] == "episode" and m["owner_id"] == org.web
        texts.append(m["text"])
    assert any("pnpm" in t for t in texts), texts
    assert not any("ghp_" in t for t in texts)
    assert server.result(org.web_writer, "squirrel/ingest_episode", params) == out  # once
    err = server.error(org.backend_reader, "squirrel/ingest_episode", params)
    assert err["code"] == -32003
    quiet = {**params, "episode_id": "ep-quiet",
             "events": [{"role": "user", "kind": "message", "text": "thanks"}]}  # fmt: skip
    skipped = server.result(org.web_writer, "squirrel/ingest_episode", quiet)
    assert skipped["outcome"] == "skipped" and skipped["memory_ids"] == []
    assert skipped["reason"]


def test_status_and_policy_answer_for_what_the_key_reaches(server, org):
    add(server, org.web_writer, "Web status memory: Storybook runs on port 6006")
    web = server.result(org.web_writer, "squirrel/status", {})
    b = server.result(org.b_admin, "squirrel/status", {})
    assert web["org_id"] == org.a and web["team_id"] == org.web and web["role"] == "writer"
    assert sum(web["memories"]["by_status"].values()) >= 1
    assert web["last_seq"] >= 1 and web["writer"] == "rules"
    assert web["semantic_available"] is True
    assert b["org_id"] == org.b and b["memories"]["by_status"] != web["memories"]["by_status"]
    pol = server.result(org.a_reader, "squirrel/policy/get", {})
    assert "retrieval" in pol["policy"] and pol["sources"]
    err = server.error(org.a_reader, "squirrel/policy/get", {"project_root": "/srv/x"})
    assert err["data"]["field"] == "$.project_root"


def test_get_task_context_ranks_team_memories_as_locally_guards_first_within_budget(server, org):
    pid = f"proj-ctx-{uuid.uuid4().hex[:6]}"
    guard = add(server, org.backend_writer, "Never run the billing migration on Fridays",
                project_id=pid, kind="guard", tier="emergency", polarity=-1)["memory"]  # fmt: skip
    near = add(server, org.backend_writer, "Billing tests need the stripe mock running first",
               project_id=pid, kind="pattern")["memory"]  # fmt: skip
    keyed = add(server, org.backend_writer, "pnpm test:billing runs the billing suite",
                project_id=pid, kind="note", key="project.test_command")["memory"]  # fmt: skip
    other_team = add(server, org.web_writer, "Billing tests need the stripe mock running first",
                     project_id=pid, kind="pattern")["memory"]  # fmt: skip
    ctx = server.result(org.backend_reader, "squirrel/get_task_context",
                        {"project_id": pid, "task": "fix the failing billing tests",
                         "context_budget_tokens": 400, "session_id": "sess-1"})  # fmt: skip
    assert ctx["memory_ids"][0] == guard["id"]
    assert {near["id"], keyed["id"]} <= set(ctx["memory_ids"])
    assert other_team["id"] not in ctx["memory_ids"] + [d["id"] for d in ctx["dropped"]]
    assert "Never run the billing migration" in ctx["context_prompt"]
    assert ctx["tokens"] <= 400 and ctx["semantic_available"] is True
    small = server.result(org.backend_reader, "squirrel/get_task_context",
                          {"project_id": pid, "task": "fix the failing billing tests",
                           "context_budget_tokens": 80})  # fmt: skip
    assert small["tokens"] <= 80 and small["memory_ids"][:1] == [guard["id"]]
    assert any(d["reason"] == "over_budget" for d in small["dropped"])
    again = server.result(org.backend_reader, "squirrel/get_task_context",
                          {"project_id": pid, "task": "fix the failing billing tests",
                           "session_id": "sess-1", "exclude_injected": True})  # fmt: skip
    assert again["memory_ids"] == []
    assert {d["reason"] for d in again["dropped"]} >= {"already_injected"}
    # counted for team CR-Memory
    got = server.result(org.backend_reader, "squirrel/memories/get", {"memory_id": near["id"]})
    assert got["metrics"]["opportunities"] == 2 and got["metrics"]["use_count"] == 1
    # feedback: the first outcome starts the baseline, a better one is a regret hit, once
    first = server.result(org.backend_reader, "squirrel/feedback",
                          {"context_id": small["context_id"], "errors": 4, "retries": 2})  # fmt: skip
    assert first["counted"] is True and first["regret_hit"] is False
    hit = server.result(org.backend_reader, "squirrel/feedback",
                        {"context_id": ctx["context_id"], "errors": 0, "retries": 0})  # fmt: skip
    assert hit["regret_hit"] is True and hit["regret_saved"] > 0
    twice = server.result(org.backend_reader, "squirrel/feedback",
                          {"context_id": ctx["context_id"], "errors": 0, "retries": 0})  # fmt: skip
    assert twice["counted"] is False
    err = server.error(org.web_writer, "squirrel/feedback",
                       {"context_id": ctx["context_id"], "errors": 0, "retries": 0})  # fmt: skip
    assert err["code"] == -32004


def test_search_finds_by_meaning_and_words_within_the_keys_reach(server, org):
    pid = f"proj-search-{uuid.uuid4().hex[:6]}"
    mine = add(server, org.backend_writer, "Redis connection pool size is 32 in production",
               project_id=pid)["memory"]  # fmt: skip
    theirs = add(server, org.b_writer, "Redis connection pool size is 32 in production",
                 project_id=pid, owner_type="org")["memory"]  # fmt: skip
    found = server.result(org.backend_reader, "squirrel/search",
                          {"query": "redis pool size", "project_id": pid})["matches"]  # fmt: skip
    ids = [m["id"] for m in found]
    assert mine["id"] in ids and theirs["id"] not in ids
    assert found[0]["similarity"] is not None and found[0]["project_id"] == pid


def test_team_cr_memory_decides_over_every_members_counts(server, org):
    pid = f"proj-cr-{uuid.uuid4().hex[:6]}"
    mem = add(server, org.backend_writer, "Feature branches are rebased, never merged",
              project_id=pid, kind="preference")["memory"]  # fmt: skip
    # two members' machines (two keys) report that it was given every time it could have been
    for key in (org.backend_reader, org.backend_writer):
        server.result(key, "squirrel/usage/report", {
            "idempotency_key": f"usage-{uuid.uuid4().hex}",
            "items": [{"memory_id": mem["id"], "context_id": server.delivery(key, mem["id"]),
                       "opportunities": 10, "uses": 10, "regret_hits": 2, "regret_saved": 1.5}],
        })  # fmt: skip
    dry = server.result(org.backend_reader, "squirrel/cr_memory/run",
                        {"project_id": pid, "dry_run": True})  # fmt: skip
    decision = next(d for d in dry["decisions"] if d["memory_id"] == mem["id"])
    assert decision["action"] == "promote", decision
    err = server.error(org.backend_reader, "squirrel/cr_memory/run", {"project_id": pid})
    assert err["code"] == -32003
    run = server.result(org.backend_writer, "squirrel/cr_memory/run", {"project_id": pid})
    assert run["promoted"] >= 1
    got = server.result(org.backend_reader, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["memory"]["status"] == "active" and got["memory"]["version"] == 2
    assert got["history"][0]["status"] == "provisional"


def test_one_key_alone_neither_promotes_nor_deprecates_a_team_memory(server, org):
    """A reader key posting fabricated usage (within its daily bound, regret hits and all) is
    one key's evidence: team CR-Memory waits for a second key's before it promotes; and one key
    reporting opportunities without use deprecates nothing."""
    pid = f"proj-cr-{uuid.uuid4().hex[:6]}"
    faked = add(server, org.backend_writer, "Deploys go out on Fridays", project_id=pid,
                kind="preference")["memory"]  # fmt: skip
    idle = add(server, org.backend_writer, "The payment stub listens on port 4010",
               project_id=pid, kind="preference")["memory"]  # fmt: skip

    def report(key: str, mem: dict[str, Any], **counts: float) -> None:
        server.result(key, "squirrel/usage/report", {
            "idempotency_key": f"usage-{uuid.uuid4().hex}",
            "items": [{"memory_id": mem["id"], "context_id": server.delivery(key, mem["id"]),
                       **counts}]})  # fmt: skip

    def decision(mem: dict[str, Any]) -> dict[str, Any]:
        dry = server.result(org.backend_writer, "squirrel/cr_memory/run",
                            {"project_id": pid, "dry_run": True})  # fmt: skip
        return next(d for d in dry["decisions"] if d["memory_id"] == mem["id"])  # type: ignore[no-any-return]

    report(
        org.backend_reader, faked, opportunities=400, uses=400, regret_hits=400, regret_saved=9.0
    )
    report(org.backend_reader, idle, opportunities=400)
    for mem in (faked, idle):
        d = decision(mem)
        assert d["action"] == "keep" and "evidence of 2 keys (1 key)" in d["reason"], d
    run = server.result(org.backend_writer, "squirrel/cr_memory/run", {"project_id": pid})
    assert run["promoted"] == 0 and run["deprecated"] == 0
    got = server.result(org.backend_reader, "squirrel/memories/get", {"memory_id": faked["id"]})
    assert got["memory"]["status"] == "provisional"
    # a second key's evidence: now use decides; receiving a context that holds the memory is
    # evidence too
    report(org.backend_writer, faked, opportunities=5, uses=5, regret_hits=2, regret_saved=1.0)
    assert decision(faked)["action"] == "promote"
    given = server.result(
        org.backend_writer,
        "squirrel/get_task_context",
        {"project_id": pid, "task": "which port does the payment stub listen on"},
    )
    assert idle["id"] in given["memory_ids"]
    assert decision(idle)["action"] == "deprecate"


def test_an_org_keys_write_into_a_team_is_audited_as_that_teams(server, org, db):
    mem = add(server, org.a_writer, "Web deploys need the CDN purge step",
              owner_type="team", owner_id="web")["memory"]  # fmt: skip
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT team_id, method FROM audit_log WHERE %s = ANY(target_ids)", (mem["id"],)
        ).fetchall()
    assert rows == [(org.web, "squirrel/memories/add")]


def test_word_counts_follow_every_write_for_distinctive_words(server, org, db):
    def count(word: str) -> int:
        with db.connect() as conn:
            row = conn.execute(
                "SELECT coalesce(sum(n), 0) FROM memory_words WHERE org_id = %s AND word = %s",
                (org.a, word),
            ).fetchone()
        return int(row[0])

    mem = add(server, org.backend_writer, "Quarkusflow jobs restart nightly")["memory"]
    assert count("quarkusflow") == 1
    server.result(org.backend_writer, "squirrel/memories/update",
                  {"memory_id": mem["id"], "text": "Zephyrqueue jobs restart nightly"})  # fmt: skip
    assert (count("quarkusflow"), count("zephyrqueu")) == (0, 1)  # English stems
    server.result(org.backend_writer, "squirrel/memories/deprecate", {"memory_id": mem["id"]})
    assert count("zephyrqueu") == 0
    server.result(org.backend_writer, "squirrel/memories/update",
                  {"memory_id": mem["id"], "status": "active"})  # fmt: skip
    assert count("zephyrqueu") == 1
    server.result(org.backend_writer, "squirrel/memories/forget", {"memory_id": mem["id"]})
    assert count("zephyrqueu") == 0


def test_full_text_reads_only_the_keys_org_even_through_its_owner_function(server, org, db):
    """Full text runs in `memory_text_hits` (migration team/0004), as the tables' owner so its
    index is used under row-level security; it applies the tenant condition itself: another
    org's matching row is never returned, even when its id is named, nor anything when no
    tenant is set."""
    pid = f"proj-fts-{uuid.uuid4().hex[:6]}"
    mine = add(server, org.backend_writer, "Quillonade batches settle at noon",
               project_id=pid)["memory"]["id"]  # fmt: skip
    theirs = add(server, org.b_writer, "Quillonade batches settle at noon",
                 project_id=pid, owner_type="org")["memory"]["id"]  # fmt: skip
    with db.connect() as conn:
        with pg.tenant_transaction(conn, org.a):
            hits = pgsql.keyword_hits(conn, pgsql.Reach(org.a, None), pgsql.Filters(project_id=pid),
                                     ["quillonade"], 10, scan=10, among=[theirs])  # fmt: skip
        assert list(hits) == [mine]
        with pg.tenant_transaction(conn, org.b):
            hits = pgsql.keyword_hits(conn, pgsql.Reach(org.b, None), pgsql.Filters(project_id=pid),
                                     ["quillonade"], 10, scan=10, among=[mine])  # fmt: skip
        assert list(hits) == [theirs]
        with conn.transaction():
            conn.execute(f"SET LOCAL ROLE {pg.SERVER_ROLE}")
            rows = conn.execute(
                "SELECT id FROM memory_text_hits(to_tsquery('english', 'quillonade'), NULL,"
                " NULL, true, ARRAY['provisional', 'active'], NULL, NULL, NULL, false, 10,"
                " ARRAY[%s, %s])",
                (mine, theirs),
            ).fetchall()
        assert rows == []


def test_full_text_scores_every_holder_within_its_scan_and_the_candidates_beyond(server, org, db):
    """A word held by more memories than the scan: at most `scan` of them are scored, plus the
    request's other candidates that hold it; within the scan, every holder is."""
    pid = f"proj-scan-{uuid.uuid4().hex[:6]}"
    topics = ["invoices", "payroll", "search", "uploads", "emails", "thumbnails", "exports",
              "billing", "reports", "backups", "webhooks", "imports"]  # fmt: skip
    ids = [add(server, org.backend_writer, f"The brindlewick {t} worker needs {i + 2} GB",
               project_id=pid)["memory"]["id"] for i, t in enumerate(topics)]  # fmt: skip
    assert len(set(ids)) == len(topics)
    reach = pgsql.Reach(org.a, (org.backend,))
    with db.connect() as conn, pg.tenant_transaction(conn, org.a):
        every = pgsql.keyword_hits(conn, reach, pgsql.Filters(project_id=pid), ["brindlewick"],
                                  50, scan=100)  # fmt: skip
        capped = pgsql.keyword_hits(conn, reach, pgsql.Filters(project_id=pid), ["brindlewick"],
                                   50, scan=4, among=[ids[-1], ids[-2]])  # fmt: skip
        other_team = pgsql.keyword_hits(conn, pgsql.Reach(org.a, (org.web,)),
                                       pgsql.Filters(project_id=pid), ["brindlewick"], 50,
                                       scan=100)  # fmt: skip
    assert sorted(every) == sorted(ids)
    assert {ids[-1], ids[-2]} <= set(capped) and len(capped) <= 6
    assert set(capped) <= set(ids)
    assert other_team == {}
