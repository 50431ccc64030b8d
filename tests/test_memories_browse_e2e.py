"""What the web UI shows, over the real stdio JSON-RPC server (issue 22): memories listed by
words, tier and sort (most used, most opportunities, ...) and paged in that order; a memory's
history (what replaced what) and the contexts it was given in with their outcome; a preview of
get_task_context that counts and records nothing."""

from __future__ import annotations

from typing import Any

import pytest

from harness.rpc_client import Server

pytestmark = pytest.mark.e2e
PROJECT = "proj-browse"


def _add(srv: Server, text: str, **extra: Any) -> dict[str, Any]:
    params = {"project_id": PROJECT, "kind": "invariant", "text": text, **extra}
    return srv.call("squirrel/memories/add", params)  # type: ignore[no-any-return]


def _ids(srv: Server, **params: Any) -> list[str]:
    out = srv.call("squirrel/memories/list", {"project_id": PROJECT, **params})
    return [m["id"] for m in out["memories"]]


def test_list_by_words_tier_and_sort_paged_in_that_order(db_path):
    with Server(db_path) as srv:
        srv.wait_ready()
        a = _add(srv, "Payments retries use exponential backoff")["memory"]["id"]
        b = _add(srv, "The PAYMENTS service owns the ledger", tier="long_term")["memory"]["id"]
        c = _add(srv, "Frontend builds use Vite 5_0 with 100% coverage")["memory"]["id"]
        assert _ids(srv) == [a, b, c]  # creation order by default
        assert _ids(srv, sort="newest") == [c, b, a]
        assert sorted(_ids(srv, text="payments")) == sorted([a, b])  # any case
        assert _ids(srv, text="5_0 with 100%") == [c]  # LIKE's wildcards are literal
        assert _ids(srv, text="5x0") == [] and _ids(srv, text="100 %") == []
        assert _ids(srv, tiers=["long_term"]) == [b]
        assert sorted(_ids(srv, owner_type="user")) == sorted([a, b, c])
        assert _ids(srv, owner_type="team") == []
        # b given twice, c once: most used first, then paged one by one in that order
        for task in ("who owns the payments ledger", "the payments ledger service"):
            srv.call("squirrel/get_task_context", {"project_id": PROJECT, "task": task})
        used = {m: (srv.call("squirrel/memories/get", {"memory_id": m})["metrics"] or {})
                .get("use_count", 0) for m in (a, b, c)}  # fmt: skip
        first = _ids(srv, sort="uses")
        assert [used[m] for m in first] == sorted(used.values(), reverse=True)
        assert set(first) == {a, b, c} and used[b] == 2 and first[0] == b
        seen, cursor = [], None
        while True:
            params: dict[str, Any] = {"project_id": PROJECT, "sort": "uses", "limit": 1}
            if cursor:
                params["cursor"] = cursor
            page = srv.call("squirrel/memories/list", params)
            seen += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == first
        err = srv.error("squirrel/memories/list", {"sort": "loudest"})
        assert err.code == -32602 and "sort" in str(err)


def test_a_memorys_history_and_the_contexts_it_was_given_in(db_path):
    with Server(db_path) as srv:
        srv.wait_ready()
        old = _add(srv, "The database is PostgreSQL 15", key="project.database")["memory"]
        new = _add(srv, "The database moved to SQLite", key="project.database")
        assert new["replaced"] == [old["id"]]
        nid = new["memory"]["id"]
        got = srv.call("squirrel/memories/get", {"memory_id": nid})
        assert [(h["relation"], h["memory_id"], h["status"]) for h in got["history"]] == [
            ("replaced", old["id"], "deprecated")
        ]
        back = srv.call("squirrel/memories/get", {"memory_id": old["id"]})["history"]
        assert [(h["relation"], h["memory_id"], h["text"]) for h in back] == [
            ("replaced_by", nid, "The database moved to SQLite")
        ]
        assert back[0]["episode_id"] == got["history"][0]["episode_id"]
        ctx = srv.call("squirrel/get_task_context",
                       {"project_id": PROJECT, "task": "which database does the project use"})  # fmt: skip
        assert nid in ctx["memory_ids"]
        srv.call("squirrel/feedback", {"context_id": ctx["context_id"], "errors": 2, "retries": 1,
                                       "tests_final_status": "passed"})  # fmt: skip
        inj = srv.call("squirrel/memories/get", {"memory_id": nid})["injections"]
        assert len(inj) == 1 and inj[0]["context_id"] == ctx["context_id"]
        assert inj[0]["task"] == "which database does the project use"
        assert inj[0]["rank"] == ctx["memory_ids"].index(nid) + 1  # ranks count from 1
        assert (inj[0]["errors"], inj[0]["retries"], inj[0]["tests_final_status"]) == (
            2, 1, "passed",
        )  # fmt: skip
        assert inj[0]["feedback_at"] is not None


def test_a_dry_run_context_counts_and_records_nothing(db_path):
    with Server(db_path) as srv:
        srv.wait_ready()
        mid = _add(srv, "Webhooks verify the Stripe signature")["memory"]["id"]
        task = {"project_id": PROJECT, "task": "verify the stripe webhook signature"}
        dry = srv.call("squirrel/get_task_context", {**task, "dry_run": True})
        assert mid in dry["memory_ids"]
        got = srv.call("squirrel/memories/get", {"memory_id": mid})
        assert got["injections"] == []
        assert got["metrics"] is None or (got["metrics"]["opportunities"], got["metrics"][
            "use_count"]) == (0, 0)  # fmt: skip
        err = srv.error("squirrel/feedback",
                        {"context_id": dry["context_id"], "errors": 0, "retries": 0})  # fmt: skip
        assert err.code == -32004  # nothing to give feedback on
        real = srv.call("squirrel/get_task_context", task)
        assert real["context_prompt"].split("\n", 1)[1] == dry["context_prompt"].split("\n", 1)[1]
        got = srv.call("squirrel/memories/get", {"memory_id": mid})
        assert [i["context_id"] for i in got["injections"]] == [real["context_id"]]
        assert got["metrics"]["use_count"] == 1


def test_activity_counts_each_day_of_the_range(db_path):
    with Server(db_path) as srv:
        srv.wait_ready()
        _add(srv, "Deploys go through the release branch")
        _add(srv, "Never deploy on Fridays", kind="guard", polarity=-1)
        srv.call("squirrel/get_task_context", {"project_id": PROJECT, "task": "deploy a release"})
        out = srv.call("squirrel/activity", {"project_id": PROJECT, "days": 7})
        assert out["project_id"] == PROJECT and len(out["days"]) == 7
        days = [d["day"] for d in out["days"]]
        assert days == sorted(days)  # oldest first, today last
        today = out["days"][-1]
        assert today["memories"] == {"invariant": 1, "guard": 1}
        assert today["contexts"] == 1 and today["injections"] >= 1
        assert all(d["memories"] == {} and d["contexts"] == 0 for d in out["days"][:-1])
        assert out["live_by_kind"] == {"invariant": 1, "guard": 1}
        other = srv.call("squirrel/activity", {"project_id": "proj-other", "days": 1})
        assert other["days"][0]["memories"] == {} and other["live_by_kind"] == {}
        assert srv.error("squirrel/activity", {"days": 0}).code == -32602
